/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const LONE_SURROGATE_MESSAGE = 'Text must not contain unpaired surrogates (a lone \\uD800-\\uDFFF escape)';

/**
 * Whether a parsed JSON value holds an unpaired surrogate in any string, key or value. No database can store
 * one: PostgreSQL refuses it in jsonb, and text columns would silently turn it into U+FFFD.
 */
export function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value);
  if (Array.isArray(value)) return value.some(hasLoneSurrogate);
  if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) if (hasLoneSurrogate(key) || hasLoneSurrogate(inner)) return true;
  }
  return false;
}

export const NUL_MESSAGE = 'Text must not contain NUL (\\u0000) characters';

/** Whether a parsed value holds a NUL in any string, key or value: PostgreSQL refuses NUL in text and jsonb. */
export function hasNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\0');
  if (Array.isArray(value)) return value.some(hasNul);
  if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) if (hasNul(key) || hasNul(inner)) return true;
  }
  return false;
}

const UNSTORABLE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * The value with every NUL and unpaired surrogate (in strings, keys and values) replaced by U+FFFD: for text
 * the service itself stores (a model's answer, a tool's output), which no table could otherwise hold.
 */
export function storable<T>(value: T): T {
  if (typeof value === 'string') return value.replace(UNSTORABLE, '\uFFFD') as T;
  if (Array.isArray(value)) return value.map(storable) as T;
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [storable(k), storable(v)])) as T;
  }
  return value;
}
