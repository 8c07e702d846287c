import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { describe, expect, it } from 'vitest';
import {
  CURATED_DIR,
  type CuratedProvider,
  deref,
  findOperation,
  loadDescription,
  MAX_PARAMETERS_BYTES,
  type OaOperation,
  type OaParameter,
  type OaSchema,
  type OpenApiDocument,
  providerFileText,
} from '../../catalog/generator.ts';
import { connectionVarNames, loadProviderCatalog, SHIPPED_PROVIDERS_DIR } from '../../src/modules/providers/catalog.ts';
import type { JsonSchema, ProviderDefinition, ToolDefinition } from '../../src/modules/providers/definition.ts';
import { buildToolRequest } from '../../src/modules/providers/request.ts';
import { exampleValue } from './examples.ts';

/**
 * The generated part of the catalog: what is committed is what the generator makes, and every generated tool
 * builds requests its source description accepts. For each tool, example arguments are made from its
 * parameters (every parameter given), the engine builds the HTTP request (`buildToolRequest`, as a real call
 * does), and the request is checked against the description's operation with ajv: same method, a path the
 * operation's template matches, every query parameter one of the operation's with a value its schema accepts,
 * every required one present, and the body valid against the operation's request body schema.
 */

const curatedFiles = readdirSync(CURATED_DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();
const curatedList = curatedFiles.map(
  (f) => [f, JSON.parse(readFileSync(join(CURATED_DIR, f), 'utf8')) as CuratedProvider] as const,
);
const catalog = loadProviderCatalog({ dirs: [], env: {} });

describe('generated provider files', () => {
  it('has curated providers', () => {
    expect(curatedList.length).toBeGreaterThanOrEqual(4);
  });

  it.each(curatedList)('%s: the committed file is what the generator makes', (_f, curated) => {
    const committed = readFileSync(join(SHIPPED_PROVIDERS_DIR, `${curated.provider.id}.json`), 'utf8');
    expect(committed === providerFileText(curated), `run npm run providers:generate`).toBe(true);
  });

  it('marks every provider file as generated or hand-written, truthfully', () => {
    const curatedIds = new Set(curatedList.map(([, c]) => c.provider.id));
    for (const { definition } of catalog.providers) {
      expect(definition.origin, definition.id).toBe(curatedIds.has(definition.id) ? 'generated' : 'hand-written');
      expect(definition.generatedFrom !== undefined, definition.id).toBe(curatedIds.has(definition.id));
    }
  });

  it('gives each generated provider at least 5 tools and keeps every schema small', () => {
    for (const [, curated] of curatedList) {
      const def = catalog.get(curated.provider.id)?.definition;
      expect(def?.tools.length, curated.provider.id).toBeGreaterThanOrEqual(5);
      for (const tool of def?.tools ?? []) {
        expect(JSON.stringify(tool.parameters).length, `${def?.id}.${tool.name}`).toBeLessThanOrEqual(
          MAX_PARAMETERS_BYTES,
        );
        expect(tool.mode, `${def?.id}.${tool.name}`).toBe(
          curated.tools.find((t) => t.name === tool.name)?.mode ?? (tool.request.method === 'GET' ? 'read' : 'write'),
        );
      }
    }
  });
});

// ---- request validation ----

const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

interface Located {
  param: OaParameter;
  /** JSON pointer of its schema in the description. */
  schemaPointer: string;
}

/** The operation's parameters with where their schemas are, operation ones overriding path-level ones. */
function locatedParameters(doc: OpenApiDocument, path: string, method: string): Located[] {
  const item = doc.paths[path] as Record<string, OaOperation> & { parameters?: OaParameter[] };
  const byKey = new Map<string, Located>();
  const add = (list: OaParameter[] | undefined, base: string) => {
    (list ?? []).forEach((p, i) => {
      const param = deref(doc, p);
      const at = p.$ref ? p.$ref.slice(1) : `${base}/parameters/${i}`;
      const schemaPointer = param.schema
        ? `${at}/schema`
        : `${at}/content/${esc(Object.keys(param.content ?? {})[0] ?? '')}/schema`;
      byKey.set(`${param.in}:${param.name}`, { param, schemaPointer });
    });
  };
  add(item.parameters, `/paths/${esc(path)}`);
  add(item[method]?.parameters, `/paths/${esc(path)}/${method}`);
  return [...byKey.values()];
}

function bodyPointer(doc: OpenApiDocument, path: string, method: string): { pointer: string; type: string } {
  const op = (doc.paths[path] as Record<string, OaOperation>)[method];
  const rb = op?.requestBody;
  const at = rb?.$ref ? rb.$ref.slice(1) : `/paths/${esc(path)}/${method}/requestBody`;
  const content = rb ? (deref(doc, rb).content ?? {}) : {};
  const type =
    Object.keys(content).find((t) => /^application\/(.+\+)?json/.test(t)) ??
    Object.keys(content).find((t) => t === 'application/x-www-form-urlencoded') ??
    '';
  return { pointer: `${at}/content/${esc(type)}/schema`, type };
}

/** Whether a value fits a schema of the description, and if not, every error found. */
type Check = (value: unknown) => { ok: boolean; errors: ErrorObject[] };

function validatorFor(curated: CuratedProvider, doc: OpenApiDocument): (pointer: string) => Check {
  const id = `https://description.invalid/${encodeURIComponent(curated.source.file)}`;
  // Examples are not schemas, and an example object holding `$id` (Box metadata) would confuse ajv's resolver.
  // The names a curated file declares `notRequired` are taken out of every `required` list, as the generator does.
  const notRequired = new Set(curated.notRequired ?? []);
  const schemaOnly = JSON.parse(JSON.stringify(doc), (k, v) => {
    if (k === 'example' || k === 'examples' || k === '$id') return undefined;
    if (k === 'required' && Array.isArray(v)) return v.filter((r) => !notRequired.has(r));
    // OpenAPI 3.0's boolean `exclusiveMinimum` (Svix, ShipEngine) is JSON Schema's number form.
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      for (const [flag, bound] of [
        ['exclusiveMinimum', 'minimum'],
        ['exclusiveMaximum', 'maximum'],
      ] as const) {
        if (typeof v[flag] !== 'boolean') continue;
        const { [flag]: on, [bound]: limit, ...rest } = v as Record<string, unknown>;
        v =
          on && typeof limit === 'number'
            ? { ...rest, [flag]: limit }
            : { ...rest, ...(limit === undefined ? {} : { [bound]: limit }) };
      }
    }
    // `nullable` without `type` (Graph's anyOf members) says nothing, and ajv refuses it.
    if (v && typeof v === 'object' && 'nullable' in v && !('type' in v)) {
      const { nullable: _n, ...rest } = v as Record<string, unknown>;
      return rest;
    }
    return v;
  }) as object;
  // OpenAPI 3.0 schemas: `nullable` is understood, vendor keywords (example, xml, x-*) ignored. Compiling is
  // most of this file's work and each validator checks few values: no optimising pass over the generated code.
  const compiler = (allErrors: boolean) => {
    const ajv = new Ajv({
      strict: false,
      allErrors,
      validateFormats: false,
      coerceTypes: 'array',
      inlineRefs: false,
      code: { optimize: false },
    });
    ajv.addSchema({ ...schemaOnly, $id: id });
    const cache = new Map<string, ValidateFunction>();
    return (pointer: string): ValidateFunction => {
      let v = cache.get(pointer);
      if (!v) {
        v = ajv.compile({ $ref: `${id}#${pointer}` });
        cache.set(pointer, v);
      }
      return v;
    };
  };
  // Most values fit: a validator that stops at the first error (smaller code, compiled faster) answers them, on a
  // copy (type coercion changes what it checks); a value it refuses is checked again with every error collected.
  const first = compiler(false);
  let full: ReturnType<typeof compiler> | undefined;
  return (pointer) => (value) => {
    if (first(pointer)(structuredClone(value))) return { ok: true, errors: [] };
    full ??= compiler(true);
    const v = full(pointer);
    return { ok: accepts(v, value), errors: v.errors ?? [] };
  };
}

/**
 * Whether a value is valid. With type coercion (path and query values are text) a value can fit more than one
 * branch of a `oneOf` (GitHub's `workflow_id`: integer or string, "1" fits both); that is no fault of the request.
 */
function accepts(v: ValidateFunction, value: unknown): boolean {
  if (v(value)) return true;
  return (v.errors ?? []).every((e) => e.keyword === 'oneOf' && Array.isArray(e.params.passingSchemas));
}

function pointerValue(doc: OpenApiDocument, pointer: string): unknown {
  let node: unknown = doc;
  for (const seg of pointer.slice(1).split('/')) {
    node = (node as Record<string, unknown> | undefined)?.[seg.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node;
}

/** Top-level property names a body schema defines (through allOf); none means any object. */
function bodyProperties(doc: OpenApiDocument, schema: OaSchema): string[] {
  return [
    ...Object.keys(schema.properties ?? {}),
    ...(schema.allOf ?? []).flatMap((s) => bodyProperties(doc, deref(doc, s))),
  ];
}

function pathPattern(template: string): RegExp {
  const parts = template
    .split(/(\{[^}]+\})/)
    .map((p) => (p.startsWith('{') ? '([^/]+)' : p.replace(/[.*+?^$()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${parts.join('')}$`);
}

const cases = curatedList.flatMap(([, curated]) => {
  const def = catalog.get(curated.provider.id)?.definition;
  return curated.tools.map((t) => [`${curated.provider.id}.${t.name}`, curated, t.operation, def] as const);
});
const docs = new Map<string, OpenApiDocument>();
const validators = new Map<string, ReturnType<typeof validatorFor>>();

describe('generated tools build requests their source description accepts', () => {
  it.each(cases)('%s', (label, curated, operation, def) => {
    const key = curated.source.vendored ?? curated.source.file;
    let doc = docs.get(key);
    if (!doc) {
      doc = loadDescription(curated.source);
      docs.set(key, doc);
    }
    let validate = validators.get(key);
    if (!validate) {
      validate = validatorFor(curated, doc);
      validators.set(key, validate);
    }
    const provider = def as ProviderDefinition;
    const tool = provider.tools.find((t) => `${provider.id}.${t.name}` === label) as ToolDefinition;
    expect(tool, label).toBeDefined();
    const { method, path } = findOperation(doc, operation);
    expect(tool.request.method).toBe(method);

    const args = exampleValue(tool.parameters as JsonSchema, true) as Record<string, unknown>;
    // A variable standing for a whole origin (DocuSign's account server) gets one; others a word.
    const example = (n: string) => (provider.api.baseUrl.startsWith(`{${n}}`) ? 'https://example.com' : 'example');
    const vars = Object.fromEntries([...connectionVarNames(provider)].map((n) => [n, example(n)]));
    const built = buildToolRequest(provider, tool, args, { baseUrlVars: vars });
    const url = new URL(built.url);
    const base = new URL(provider.api.baseUrl.replace(/\{(\w+)\}/g, (_m, n: string) => example(n)));
    const requestPath = url.pathname.slice(base.pathname.replace(/\/$/, '').length);

    // The path: the operation's template, each placeholder holding the argument the tool was given.
    const m = pathPattern(path).exec(requestPath);
    expect(m, `${method} ${requestPath} against ${path}`).not.toBeNull();
    const names = [...path.matchAll(/\{([^}]+)\}/g)].map((x) => x[1] as string);
    const located = locatedParameters(doc, path, method.toLowerCase());
    names.forEach((name, i) => {
      const value = decodeURIComponent(m?.[i + 1] ?? '');
      expect(value.length, `path ${name}`).toBeGreaterThan(0);
      const p = located.find((l) => l.param.in === 'path' && l.param.name === name);
      expect(p, `path parameter ${name} is declared`).toBeDefined();
      if (p) {
        const check = validate(p.schemaPointer)(value);
        expect(check.ok, `path ${name}=${value}: ${JSON.stringify(check.errors)}`).toBe(true);
      }
    });

    // The query: only the operation's parameters, each value valid, every required one present.
    const query = new Map(located.filter((l) => l.param.in === 'query').map((l) => [l.param.name, l]));
    for (const name of new Set(url.searchParams.keys())) {
      const p = query.get(name);
      expect(p, `query ${name} is a parameter of ${operation}`).toBeDefined();
      if (!p) continue;
      const values = url.searchParams.getAll(name);
      const check = validate(p.schemaPointer);
      const schemaType = deref(doc, (deref(doc, p.param).schema ?? {}) as { $ref?: string; type?: string }).type;
      const value: unknown =
        schemaType === 'array'
          ? tool.request.queryArrayFormat === 'comma'
            ? (values[0] ?? '').split(',')
            : values
          : values[0];
      const result = check(value);
      expect(result.ok, `query ${name}=${String(value)}: ${JSON.stringify(result.errors)}`).toBe(true);
    }
    for (const [name, p] of query) {
      if (p.param.required) expect(url.searchParams.has(name), `required query ${name}`).toBe(true);
    }

    // The body: valid against the request body schema, with no property the operation does not define.
    const op = (doc.paths[path] as Record<string, OaOperation>)[method.toLowerCase()];
    if (built.body === undefined) {
      expect(op?.requestBody && deref(doc, op.requestBody).required, 'a required body is sent').toBeFalsy();
      return;
    }
    const { pointer, type } = bodyPointer(doc, path, method.toLowerCase());
    expect(type, `${operation} takes a body`).not.toBe('');
    const body: unknown =
      type === 'application/x-www-form-urlencoded'
        ? Object.fromEntries(new URLSearchParams(built.body))
        : JSON.parse(built.body);
    const defined = new Set(bodyProperties(doc, deref(doc, pointerValue(doc, pointer) as OaSchema)));
    if (defined.size && body && typeof body === 'object' && !Array.isArray(body)) {
      for (const k of Object.keys(body)) expect(defined.has(k), `body ${k} is defined by ${operation}`).toBe(true);
    }
    const check = validate(pointer)(body);
    expect(check.ok, `body: ${JSON.stringify(check.errors)}`).toBe(true);
  });
});
