import type { ValidationDetail } from '../../lib/errors.ts';
import type { JsonSchema, ToolParameters } from './definition.ts';

/**
 * Checks tool arguments against the tool's `parameters`, for the JSON Schema subset provider files may use
 * (schema.ts). Answers one detail per problem, `field` naming where (`arguments.labels[1]`), so a 422 tells
 * the caller (often an LLM) exactly what to fix.
 */
export function checkToolArguments(parameters: ToolParameters, args: unknown): ValidationDetail[] {
  const problems: ValidationDetail[] = [];
  check(parameters as JsonSchema, args, 'arguments', problems);
  return problems;
}

/** The arguments with each absent top-level parameter that declares a `default` filled in. */
export function withDefaults(parameters: ToolParameters, args: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...args };
  for (const [name, schema] of Object.entries(parameters.properties)) {
    if (out[name] === undefined && schema.default !== undefined) out[name] = structuredClone(schema.default);
  }
  return out;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function matchesType(value: unknown, type: string): boolean {
  const actual = typeOf(value);
  return actual === type || (type === 'number' && actual === 'integer');
}

const FORMATS: Record<string, RegExp> = {
  'date-time': /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i,
  date: /^\d{4}-\d{2}-\d{2}$/,
  time: /^\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i,
  email: /^[^\s@]+@[^\s@]+$/,
  uri: /^[a-z][a-z0-9+.-]*:\S+$/i,
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
};

function check(schema: JsonSchema, value: unknown, field: string, problems: ValidationDetail[]): void {
  const fail = (message: string) => problems.push({ field, message });
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => matchesType(value, t))) {
      fail(`must be ${types.join(' or ')}, got ${typeOf(value)}`);
      return;
    }
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    fail(`must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
    return;
  }
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && [...value].length < schema.minLength) {
      fail(`must be at least ${schema.minLength} characters`);
    }
    if (schema.maxLength !== undefined && [...value].length > schema.maxLength) {
      fail(`must be at most ${schema.maxLength} characters`);
    }
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) {
      fail(`must match ${schema.pattern}`);
    }
    const format = schema.format ? FORMATS[schema.format] : undefined;
    if (format && !format.test(value)) fail(`must be a ${schema.format}`);
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) fail(`must be at least ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) fail(`must be at most ${schema.maximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      fail(`must hold at least ${schema.minItems} items`);
    }
    if (schema.maxItems !== undefined && value.length > schema.maxItems) {
      fail(`must hold at most ${schema.maxItems} items`);
    }
    const items = schema.items;
    if (items) {
      for (const [n, item] of value.entries()) check(items, item, `${field}[${n}]`, problems);
    }
  }
  if (
    typeOf(value) === 'object' &&
    (schema.properties || schema.required || schema.additionalProperties !== undefined)
  ) {
    const obj = value as Record<string, unknown>;
    for (const name of schema.required ?? []) {
      if (obj[name] === undefined) problems.push({ field: `${field}.${name}`, message: 'is required' });
    }
    for (const [name, v] of Object.entries(obj)) {
      if (v === undefined) continue;
      const sub = schema.properties?.[name];
      if (sub) check(sub, v, `${field}.${name}`, problems);
      else if (schema.additionalProperties === false) {
        problems.push({ field: `${field}.${name}`, message: 'is not a parameter of this tool' });
      } else if (typeof schema.additionalProperties === 'object') {
        check(schema.additionalProperties, v, `${field}.${name}`, problems);
      }
    }
  }
}
