import type { JsonSchema } from '../../src/modules/providers/definition.ts';

const FORMAT_EXAMPLES: Record<string, string> = {
  'date-time': '2024-05-06T07:08:09Z',
  date: '2024-05-06',
  time: '07:08:09',
  email: 'someone@example.com',
  uri: 'https://example.com/x',
  uuid: '123e4567-e89b-42d3-a456-426614174000',
};

const PATTERN_CANDIDATES = ['example', 'PT30M', '12345', 'example-1', 'a'];

/**
 * A string a simple pattern accepts, read off the pattern: each group's first alternative, one character of
 * each class (Lob's `^adr_[a-zA-Z0-9]+$` gives `adr_a`, Ticketmaster's `^(name|relevance),(asc|desc)$` gives
 * `name,asc`). The caller checks it still matches; a pattern this cannot read is left to the other candidates.
 */
export function fromPattern(pattern: string): string {
  return pattern
    .replace(/^\^|\$$/g, '')
    .replace(/\(([^()|]*)(?:\|[^()]*)?\)/g, '$1')
    .replace(/\\d[+*]?/g, '1')
    .replace(/\[\^?([A-Za-z0-9])[^\]]*\][+*]?/g, '$1')
    .replace(/\\(.)/g, '$1');
}

/** A value the schema accepts; objects get their required properties (all of them at the top level). */
export function exampleValue(schema: JsonSchema, all = false): unknown {
  if (schema.default !== undefined) return schema.default;
  if (schema.examples?.length) return schema.examples[0];
  if (schema.enum?.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string': {
      if (schema.format && FORMAT_EXAMPLES[schema.format]) return FORMAT_EXAMPLES[schema.format];
      // A pattern without an example: the first of some common shapes it accepts (ISO 8601 durations ...).
      if (schema.pattern) {
        const re = new RegExp(schema.pattern, 'u');
        const fits = [...PATTERN_CANDIDATES, fromPattern(schema.pattern)].find((c) => re.test(c));
        if (fits) return fits;
      }
      let s = 'example';
      while (s.length < (schema.minLength ?? 0)) s += 'x';
      return schema.maxLength !== undefined ? s.slice(0, Math.max(schema.maxLength, 1)) : s;
    }
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? 1;
      return schema.maximum !== undefined && schema.maximum < min ? schema.maximum : min;
    }
    case 'boolean':
      return true;
    case 'array':
      return Array.from({ length: Math.max(schema.minItems ?? 1, 1) }, () => exampleValue(schema.items ?? {}));
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(schema.properties ?? {})) {
        if (all || schema.required?.includes(k)) out[k] = exampleValue(v);
      }
      return out;
    }
    default:
      return 'example';
  }
}
