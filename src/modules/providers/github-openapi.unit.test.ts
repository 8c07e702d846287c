import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadProviderCatalog } from './catalog.ts';
import { URL_PLACEHOLDER, VALUE_PLACEHOLDER } from './schema.ts';

/**
 * GitHub's tools against GitHub's own published OpenAPI description (@octokit/openapi, api.github.com):
 * every tool's method and path is an operation there, and every query, path and body parameter the tool
 * sends is a parameter of that operation. Enum values a tool offers must be values GitHub accepts.
 */

interface Parameter {
  name: string;
  in: 'query' | 'path' | 'header' | 'cookie';
  required?: boolean;
  schema?: { enum?: unknown[]; type?: string };
}
interface Operation {
  operationId: string;
  parameters?: Array<Parameter | { $ref: string }>;
  requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> };
}
interface OpenApi {
  paths: Record<string, Record<string, Operation> & { parameters?: Array<Parameter | { $ref: string }> }>;
  components: { parameters: Record<string, Parameter> };
}

const require = createRequire(import.meta.url);
const specFile = join(dirname(require.resolve('@octokit/openapi/package.json')), 'generated', 'api.github.com.json');
const spec = JSON.parse(readFileSync(specFile, 'utf8')) as OpenApi;

const resolve = (p: Parameter | { $ref: string }): Parameter =>
  '$ref' in p ? (spec.components.parameters[p.$ref.split('/').pop() as string] as Parameter) : p;

const github = loadProviderCatalog({ dirs: [], env: {} }).get('github')?.definition;

describe('GitHub tools match api.github.com OpenAPI', () => {
  it('uses the api.github.com description and GitHub has tools', () => {
    expect(Object.keys(spec.paths).length).toBeGreaterThan(500);
    expect(github?.api.baseUrl).toBe('https://api.github.com');
    expect(github?.tools.length).toBeGreaterThanOrEqual(4);
  });

  describe.each((github?.tools ?? []).map((t) => [t.name, t] as const))('%s', (_name, tool) => {
    // `{+path}` (slashes kept) is our expansion of OpenAPI's `{path}`.
    const openapiPath = tool.request.path.replace(/\{\+/g, '{');
    const operation = spec.paths[openapiPath]?.[tool.request.method.toLowerCase()];
    const params = [...(spec.paths[openapiPath]?.parameters ?? []), ...(operation?.parameters ?? [])].map(resolve);

    it('is an operation of the OpenAPI description', () => {
      expect(operation, `${tool.request.method} ${openapiPath}`).toBeDefined();
    });

    it('sends only path parameters of the operation, and all of them', () => {
      const ours = [...tool.request.path.matchAll(URL_PLACEHOLDER)].map((m) => m[2]).sort();
      const theirs = params
        .filter((p) => p.in === 'path')
        .map((p) => p.name)
        .sort();
      expect(ours).toEqual(theirs);
    });

    it('sends only query parameters of the operation, with values it accepts', () => {
      const query = new Map(params.filter((p) => p.in === 'query').map((p) => [p.name, p]));
      for (const [name, template] of Object.entries(tool.request.query)) {
        const param = query.get(name);
        expect(param, `query ${name}`).toBeDefined();
        const allowed = param?.schema?.enum;
        const arg = typeof template === 'string' ? /^\{\{(\w+)\}\}$/.exec(template)?.[1] : undefined;
        const offered = arg ? tool.parameters.properties[arg]?.enum : [template];
        if (allowed && offered) for (const v of offered) expect(allowed, `query ${name}=${String(v)}`).toContain(v);
      }
    });

    it('sends only body properties of the operation', () => {
      const body = tool.request.body;
      if (body === undefined) return;
      const schema = operation?.requestBody?.content?.['application/json']?.schema;
      expect(schema?.properties, 'operation takes a JSON body').toBeDefined();
      for (const key of Object.keys(body as Record<string, unknown>)) {
        expect(Object.keys(schema?.properties ?? {}), `body ${key}`).toContain(key);
      }
    });

    it('declares every template argument as a tool parameter', () => {
      const text = JSON.stringify([tool.request.query, tool.request.body ?? null]);
      for (const m of text.matchAll(VALUE_PLACEHOLDER)) {
        expect(Object.keys(tool.parameters.properties)).toContain(m[1]);
      }
    });
  });
});
