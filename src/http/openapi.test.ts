import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, type TestHarness } from '../../test/harness.ts';
import { buildApp } from '../app.ts';
import type { RouteAuthConfig } from './types.ts';

interface Operation {
  operationId?: string;
  security?: Array<Record<string, string[]>>;
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
  parameters?: unknown[];
  requestBody?: unknown;
}

interface ServedRoute {
  method: string;
  url: string;
  config: RouteAuthConfig;
}

describe('API description', () => {
  let h: TestHarness;
  let served: ServedRoute[];
  let doc: {
    openapi: string;
    tags?: { name: string; description: string }[];
    paths: Record<string, Record<string, Operation>>;
    components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown> };
  };

  beforeAll(async () => {
    h = await createHarness();
    // Every route the app registers, as fastify sees it.
    served = [];
    const app = await buildApp({
      config: h.config,
      database: h.database,
      keyRing: h.keyRing,
      onRoute: (r) => {
        for (const method of [r.method].flat()) {
          // HEAD mirrors GET; OPTIONS routes are CORS preflights, not operations.
          if (method !== 'HEAD' && method !== 'OPTIONS') served.push({ method, url: r.url, config: r.config ?? {} });
        }
      },
    });
    try {
      const res = await call(app, 'GET', '/openapi.json');
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      doc = res.json();
    } finally {
      await app.close();
    }
  });
  afterAll(() => h.close());

  /** The error body a route answers (src/http/error-handler.ts): OpenAI's and Anthropic's on their routes. */
  const errorSchemaOf = (url: string) =>
    /^\/api\/v1\/(chat\/completions|models|embeddings|agents\/:agentId\/chat\/completions)$/.test(url)
      ? 'OpenAIError'
      : /^\/api\/v1\/messages/.test(url)
        ? 'AnthropicError'
        : 'Error';

  const operation = (method: string, url: string): Operation | undefined =>
    doc.paths[url.replace(/:(\w+)/g, '{$1}')]?.[method.toLowerCase()];

  it('is OpenAPI 3.1 with the bearer scheme', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('describes every API route and the operations routes', () => {
    const api = served.filter((r) => r.url.startsWith('/api/'));
    expect(api.length).toBeGreaterThan(15);
    const missing = api.filter((r) => !operation(r.method, r.url)).map((r) => `${r.method} ${r.url}`);
    expect(missing).toEqual([]);
    for (const url of ['/healthz', '/readyz']) expect(operation('GET', url)?.security, url).toEqual([]);
    // And nothing that is not served.
    const servedKeys = new Set(served.map((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`));
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(documented.filter((k) => !servedKeys.has(k))).toEqual([]);
  });

  it('gives each route its scopes and the error answers it can give', () => {
    for (const route of served.filter((r) => r.url.startsWith('/api/'))) {
      const name = `${route.method} ${route.url}`;
      const op = operation(route.method, route.url);
      if (!op) throw new Error(`${name} is not documented`);
      const codes = Object.keys(op.responses);
      expect(codes, name).toEqual(expect.arrayContaining(['429', '500']));
      if (route.config.auth === 'public') {
        expect(op.security, name).toEqual([]);
      } else {
        const scopes = route.config.scopes ?? [];
        // Either scheme serves the routes that also take `x-api-key` (the Anthropic-compatible ones).
        const schemes = route.config.apiKeyHeader
          ? [{ bearerAuth: scopes }, { apiKeyAuth: scopes }]
          : [{ bearerAuth: scopes }];
        expect(op.security, name).toEqual(schemes);
        expect(codes, name).toEqual(expect.arrayContaining(['401', '403']));
      }
      if (route.config.creditGuard) expect(codes, name).toContain('402');
      if (op.requestBody || op.parameters?.length) expect(codes, name).toEqual(expect.arrayContaining(['400', '422']));
      const error = op.responses['500']?.content?.['application/json']?.schema;
      expect(error, name).toEqual({ $ref: `#/components/schemas/${errorSchemaOf(route.url)}` });
    }
    // Each error body named once, so a generated client has one type for each.
    expect(doc.components.schemas.Error).toMatchObject({ required: ['error', 'message', 'statusCode'] });
    expect(doc.components.schemas.OpenAIError).toMatchObject({
      required: ['error', 'message', 'statusCode'],
      properties: { error: { required: ['message', 'type', 'param', 'code'] } },
    });
    expect(doc.components.schemas.AnthropicError).toMatchObject({
      required: ['type', 'error', 'message', 'statusCode'],
      properties: { error: { required: ['type', 'message'] } },
    });
    expect(operation('GET', '/api/v1/accounts/me')?.security).toEqual([{ bearerAuth: ['account'] }]);
    expect(operation('POST', '/api/v1/auth/signup')?.security).toEqual([]);
    expect(operation('GET', '/api/v1/auth-scopes')?.security).toEqual([{ bearerAuth: [] }]);
    expect(operation('POST', '/api/v1/messages')?.security).toEqual([
      { bearerAuth: ['llm-all'] },
      { apiKeyAuth: ['llm-all'] },
    ]);
    expect(operation('POST', '/api/v1/embeddings')?.security).toEqual([{ bearerAuth: ['llm-all'] }]);
  });

  /** Every string in `schema` with nothing that shows what it holds (no example, enum, format or pattern). */
  function bare(schema: unknown, path: string, out: string[]): string[] {
    if (!schema || typeof schema !== 'object') return out;
    const s = schema as Record<string, unknown>;
    if ('$ref' in s || 'examples' in s || 'example' in s) return out;
    for (const key of ['anyOf', 'oneOf', 'allOf']) {
      for (const branch of (s[key] as unknown[] | undefined) ?? []) bare(branch, path, out);
    }
    for (const [name, property] of Object.entries((s.properties as Record<string, unknown> | undefined) ?? {})) {
      bare(property, `${path}.${name}`, out);
    }
    if (s.items) bare(s.items, `${path}[]`, out);
    const described = ['enum', 'const', 'format', 'pattern'].some((k) => k in s);
    if ([s.type].flat().includes('string') && !described && !/\.(metadata|arguments|parameters)\b/.test(path)) {
      out.push(path);
    }
    return out;
  }

  it('/docs shows values that look real: every string of a request, answer or parameter has an example', () => {
    const missing: string[] = [];
    for (const [name, schema] of Object.entries(doc.components.schemas)) bare(schema, name, missing);
    for (const [path, item] of Object.entries(doc.paths)) {
      if (!path.startsWith('/api/')) continue;
      for (const [method, op] of Object.entries(item)) {
        const where = `${method.toUpperCase()} ${path}`;
        const body = (op.requestBody as { content?: Record<string, { schema: unknown }> } | undefined)?.content;
        bare(body?.['application/json']?.schema, `${where} body`, missing);
        for (const p of (op.parameters ?? []) as Array<{
          name: string;
          in: string;
          example?: unknown;
          schema: unknown;
        }>) {
          if (p.example === undefined && bare(p.schema, p.name, []).length) missing.push(`${where} ${p.in} ${p.name}`);
        }
      }
    }
    expect(missing).toEqual([]);
    // Ids look like the service's own: their kind's prefix.
    const example = (component: string, property: string) =>
      (doc.components.schemas[component] as { properties: Record<string, { examples?: unknown[] }> }).properties[
        property
      ]?.examples?.[0];
    expect(example('Agent', 'id')).toMatch(/^agt_[A-Za-z0-9_-]{22}$/);
    expect(example('Connection', 'id')).toMatch(/^conn_[A-Za-z0-9_-]{22}$/);
    expect(example('Agent', 'accountId')).toMatch(/^acc_[A-Za-z0-9_-]{22}$/);
    expect(example('ScheduledTask', 'cronExpression')).toBe('0 9 * * 1');
    const param = operation('GET', '/api/v1/agents/:agentId')?.parameters?.[0] as { example?: string };
    expect(param.example).toMatch(/^agt_/);
    // Numbers show a value a client could send or get, never the bounds of a safe integer.
    const extremes = JSON.stringify(doc).match(/"examples":\[-?9007199254740991\]/g);
    expect(extremes).toBeNull();
    // Every error answer shows the service's own body for its status.
    let errorAnswers = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [code, response] of Object.entries(op.responses)) {
          const json = response.content?.['application/json'] as
            | { schema: { $ref?: string }; example?: { statusCode?: number; error?: string | { type: string } } }
            | undefined;
          // The service's error bodies (OAuth's own endpoints answer RFC 6749's shape, with their own schema).
          const where = `${method} ${path} ${code}`;
          const ref = json?.schema.$ref;
          if (Number(code) < 400 || !ref) continue;
          const shown = json.example;
          if (ref === '#/components/schemas/Error') {
            expect(shown?.error, where).toMatch(/Error$/);
          } else if (ref === '#/components/schemas/OpenAIError') {
            expect(shown?.error, where).toEqual({
              message: expect.any(String),
              type: expect.stringMatching(/Error$/),
              param: null,
              code: null,
            });
          } else if (ref === '#/components/schemas/AnthropicError') {
            expect(shown, where).toMatchObject({ type: 'error', error: { type: expect.stringMatching(/_error$/) } });
          } else {
            continue;
          }
          errorAnswers++;
          expect(shown?.statusCode, where).toBe(Number(code));
        }
      }
    }
    expect(errorAnswers).toBeGreaterThan(500);
  });

  it('names every operation once (operationId), for generated clients', () => {
    const ids = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => op.operationId ?? `none: ${method} ${path}`),
    );
    expect(ids.filter((id) => id.startsWith('none'))).toEqual([]);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    expect(operation('POST', '/api/v1/agents')?.operationId).toBe('postAgents');
    expect(operation('GET', '/api/v1/agents/:agentId')?.operationId).toBe('getAgentsByAgentId');
    expect(operation('GET', '/api/v1/knowledge/bases/:kbId/pages/search')?.operationId).toBe(
      'getKnowledgeBasesByKbIdPagesSearch',
    );
    expect(operation('GET', '/.well-known/oauth-authorization-server')?.operationId).toBe(
      'getWellKnownOauthAuthorizationServer',
    );
  });

  it('gives every JSON answer of the API a schema, but for the gateway routes that pass the upstream body on', () => {
    const untyped: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      if (!path.startsWith('/api/')) continue;
      for (const [method, op] of Object.entries(item)) {
        for (const [code, response] of Object.entries(op.responses)) {
          const schema = response.content?.['application/json']?.schema;
          if (schema && Object.keys(schema).length === 0) untyped.push(`${method.toUpperCase()} ${path} ${code}`);
        }
      }
    }
    expect(untyped).toEqual([
      // An event stream (text/event-stream), not JSON.
      'GET /api/v1/agents/{agentId}/conversations/{conversationId}/events 200',
      // The upstream's own bodies (OpenAI and Anthropic shapes), for those APIs' own clients.
      'POST /api/v1/chat/completions 200',
      'POST /api/v1/messages 200',
      'POST /api/v1/embeddings 200',
    ]);
    expect(operation('POST', '/api/v1/agents/:agentId/chat/completions')?.responses['200']?.content).toEqual({
      'application/json': { schema: { $ref: '#/components/schemas/AgentChatCompletion' } },
    });
  });

  it('the reference lists every section once, the gateway and MCP first; every operation belongs to a listed section', () => {
    const tags = (doc.tags ?? []).map((t) => t.name);
    expect(tags.slice(0, 2)).toEqual(['LLM', 'MCP']);
    expect(new Set(tags).size).toBe(tags.length);
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const tag of (op as { tags?: string[] }).tags ?? []) expect(tags, `${method} ${path}`).toContain(tag);
      }
    }
  });

  it('/docs serves a browsable reference', async () => {
    const index = await call(h.app, 'GET', '/docs');
    const page = index.statusCode === 302 ? await call(h.app, 'GET', String(index.headers.location)) : index;
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain('<html');
    expect(page.body).toContain('<title>Switchboard API reference</title>');
    const fromDocs = await call(h.app, 'GET', '/docs/json');
    expect(fromDocs.statusCode).toBe(200);
    expect(fromDocs.json().openapi).toBe('3.1.0');
  });
});
