/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const LONE_SURROGATE_MESSAGE = 'Text must not contain unpaired surrogates (a lone \\uD800-\\uDFFF escape)';

/**
 * Whether `test` holds for any string of `value`: strings, keys and values at any depth. Iterative (an explicit
 * stack), so a value nested thousands of levels deep cannot overflow the call stack.
 */
function anyString(value: unknown, test: (text: string) => boolean): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node === 'string') {
      if (test(node)) return true;
    } else if (Array.isArray(node)) {
      for (const item of node) pending.push(item);
    } else if (node !== null && typeof node === 'object') {
      for (const [key, inner] of Object.entries(node)) {
        if (test(key)) return true;
        pending.push(inner);
      }
    }
  }
  return false;
}

/**
 * Whether a parsed JSON value holds an unpaired surrogate in any string, key or value. No database can store
 * one: PostgreSQL refuses it in jsonb, and text columns would silently turn it into U+FFFD.
 */
export function hasLoneSurrogate(value: unknown): boolean {
  return anyString(value, (text) => LONE_SURROGATE.test(text));
}

export const NUL_MESSAGE = 'Text must not contain NUL (\\u0000) characters';

/** Whether a parsed value holds a NUL in any string, key or value: PostgreSQL refuses NUL in text and jsonb. */
export function hasNul(value: unknown): boolean {
  return anyString(value, (text) => text.includes('\0'));
}

const UNSTORABLE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** NUL or any surrogate: text without one has nothing to replace (a scan much cheaper than UNSTORABLE's). */
const MAYBE_UNSTORABLE = /[\0\uD800-\uDFFF]/;

const clean = (text: string) => (MAYBE_UNSTORABLE.test(text) ? text.replace(UNSTORABLE, '\uFFFD') : text);

/** Arrays and plain objects are copied; Dates and every other value are kept as they are. */
const isCopied = (value: unknown): value is object =>
  value !== null && typeof value === 'object' && !(value instanceof Date);

/**
 * The value with every NUL and unpaired surrogate (in strings, keys and values) replaced by U+FFFD: for text
 * the service itself stores (a model's answer, a tool's output), which no table could otherwise hold. A copy,
 * built iteratively: a tool's result nested thousands of levels deep cannot overflow the call stack.
 */
export function storable<T>(value: T): T {
  if (typeof value === 'string') return clean(value) as T;
  if (!isCopied(value)) return value;
  const copyOf = (node: object): Array<unknown> | Record<string, unknown> => (Array.isArray(node) ? [] : {});
  const root = copyOf(value);
  const pending: Array<[object, Array<unknown> | Record<string, unknown>]> = [[value, root]];
  const convert = (inner: unknown): unknown => {
    if (typeof inner === 'string') return clean(inner);
    if (!isCopied(inner)) return inner;
    const copy = copyOf(inner);
    pending.push([inner, copy]);
    return copy;
  };
  while (pending.length > 0) {
    const [source, target] = pending.pop() as [object, Array<unknown> | Record<string, unknown>];
    if (Array.isArray(source)) {
      for (const item of source) (target as unknown[]).push(convert(item));
    } else {
      for (const [key, inner] of Object.entries(source)) {
        const name = clean(key);
        // A data property even for `__proto__`, as Object.fromEntries would make it (never the prototype).
        if (name === '__proto__') {
          Object.defineProperty(target, name, {
            value: convert(inner),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        } else (target as Record<string, unknown>)[name] = convert(inner);
      }
    }
  }
  return root as T;
}

/**
 * A model's or client's argument as text: a string as is, a number or boolean written out, anything else (an
 * object, an array, null) empty. `String()` is not safe on parsed JSON: `{"toString": []}` makes it throw.
 */
export function argText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}
