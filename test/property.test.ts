import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, createUser, type TestHarness } from './harness.ts';

const HANG_MS = 10_000;

/**
 * Random methods, paths, headers and bodies: the service answers every one, promptly, never with a 500, and
 * every error it gives has the §7 body and an X-Request-Id.
 */
describe('robustness under random requests', () => {
  let h: TestHarness;
  let session: string;
  let pat: string;
  const newUser = async () => {
    const u = await createUser(h.app);
    session = u.sessionToken;
    pat = await u.pat(['account', 'llm-all']);
  };
  beforeAll(async () => {
    h = await createHarness();
    await newUser();
  });
  afterAll(() => h.close());

  const knownPaths = fc.constantFrom(
    '/api/v1/accounts/me',
    '/api/v1/accounts/acc_x',
    '/api/v1/accounts/acc_x/avatar',
    '/api/v1/auth/signup',
    '/api/v1/auth/authenticate',
    '/api/v1/auth/logout',
    '/api/v1/auth/pat',
    '/api/v1/auth/pats',
    '/api/v1/auth/pats/tok_1',
    '/api/v1/auth-scopes',
    '/api/v1/credit-transactions',
    '/api/v1/chat/completions',
    '/api/v1/models',
    '/api/v1/providers',
    '/api/v1/providers/github/tools',
    '/api/v1/knowledge/bases',
    '/api/v1/knowledge/bases/kb_x',
    '/api/v1/knowledge/bases/kb_x/pages',
    '/api/v1/knowledge/bases/kb_x/pages/search',
    '/api/v1/knowledge/bases/kb_x/pages/some-page/versions/1',
    '/api/v1/knowledge/bases/kb_x/sources',
    '/api/v1/knowledge/config',
    '/healthz',
    '/readyz',
    '/openapi.json',
    '/metrics',
  );
  // Segments a client may send by mistake or on purpose: bad escapes, NULs, traversal, long and non-ASCII.
  const oddSegment = fc.oneof(
    fc.constantFrom('%', '%E0%A4%A', '%00', '%2F', '..', '.', '%C0%AF', 'ü', '😀', '%F0%9F', '{x}', ':id', '*'),
    fc.string({ minLength: 90, maxLength: 300, unit: fc.constantFrom('a', 'b', '%41', '-') }),
    fc.string({ maxLength: 20 }).map(encodeURIComponent),
  );
  const paths = fc.oneof(
    knownPaths,
    fc.tuple(knownPaths, oddSegment).map(([p, s]) => `${p}/${s}`),
    fc.tuple(knownPaths, oddSegment).map(([p, s]) => p.replace(/\/[^/]*$/, `/${s}`)),
    fc.webPath().map((p) => (p.startsWith('/') ? p : `/${p}`)),
  );
  const query = fc.option(
    fc.dictionary(
      fc.constantFrom(
        'page',
        'limit',
        'sortBy',
        'sortOrder',
        'type',
        'from',
        'to',
        'x',
        'access_token',
        'q',
        'category',
      ),
      fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('0', '-1', '101', '1e308', 'NaN', 'asc', 'createdAt')),
    ),
  );
  // Strings as attackers write them: any text, and lone surrogates (JSON.stringify sends them as `\ud800`
  // escapes), which no database column can store.
  const text = fc.oneof(
    fc.string(),
    fc.constantFrom('\ud800', 'a\udfffb', 'x\ud83d', '\udc00\ud800', 'ok\u0000\ud800'),
    fc.string({ unit: 'binary', maxLength: 20 }),
  );
  const body = fc.oneof(
    fc.constant(undefined),
    fc.json({ maxDepth: 3 }),
    fc.string({ maxLength: 200 }),
    fc.constantFrom('{', '{"a":', 'null', '[]', '"x"', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}'),
    fc.record(
      {
        email: fc.oneof(text, fc.emailAddress()),
        password: text,
        name: text,
        avatar: fc.oneof(text, fc.webUrl(), fc.constant(null)),
        scopes: fc.array(fc.oneof(text, fc.constantFrom('account', 'llm-all'))),
        provider_permissions: fc.dictionary(text, fc.constantFrom('read', 'read-write')),
        expires_in: fc.oneof(fc.integer(), fc.double(), fc.string()),
        model: text,
        messages: fc.array(fc.record({ role: text, content: fc.oneof(text, fc.integer()) })),
      },
      { requiredKeys: [] },
    ),
  );
  const contentType = fc.option(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      'x/y',
      '',
    ),
  );
  const auth = fc.oneof(
    fc.constantFrom(undefined, 'session', 'pat', 'Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'bearer pat_x'),
    fc.string({ maxLength: 60 }).map((s) => `Bearer ${s}`),
  );
  const extraHeaders = fc.dictionary(
    fc.constantFrom('accept', 'x-request-id', 'x-forwarded-for', 'origin', 'accept-encoding', 'x-response-format'),
    fc.string({ maxLength: 40, unit: fc.constantFrom(...'abc/*;=,.:- 0123456789'.split('')) }),
    { maxKeys: 3 },
  );

  it('answers every request, never with a 500, and every error in the §7 shape', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'),
        paths,
        query,
        body,
        contentType,
        auth,
        extraHeaders,
        async (method, path, q, payload, type, authorization, extra) => {
          const search = q ? `?${new URLSearchParams(q).toString()}` : '';
          const headers: Record<string, string> = { ...extra };
          if (type !== null) headers['content-type'] = type;
          if (authorization === 'session') headers.authorization = `Bearer ${session}`;
          else if (authorization === 'pat') headers.authorization = `Bearer ${pat}`;
          else if (authorization) headers.authorization = authorization;
          const label = `${method} ${path}${search} ${JSON.stringify(headers)}`;
          let timer: NodeJS.Timeout | undefined;
          const hang = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${HANG_MS} ms: ${label}`)), HANG_MS);
          });
          const res: LightMyRequestResponse = await Promise.race([
            h.app.inject({
              method: method as 'GET',
              url: `${path}${search}`,
              headers,
              ...(payload !== undefined && method !== 'GET' && method !== 'HEAD'
                ? { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }
                : {}),
            }),
            hang,
          ]).finally(() => clearTimeout(timer));

          const where = `${label} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
          expect(res.statusCode, where).not.toBe(500);
          expect(res.headers['x-request-id'], where).toBeTruthy();
          if (res.statusCode >= 400 && method !== 'HEAD') {
            expect(res.headers['content-type'], where).toBe('application/json; charset=utf-8');
            const error = res.json();
            expect(Object.keys(error).sort(), where).toEqual(
              'details' in error ? ['details', 'error', 'message', 'statusCode'] : ['error', 'message', 'statusCode'],
            );
            expect(error, where).toMatchObject({
              error: expect.stringMatching(/^[A-Z][A-Za-z]+Error$/),
              message: expect.any(String),
              statusCode: res.statusCode,
            });
          }
          // A random DELETE /accounts/me may have removed the account behind the tokens: start a new one.
          if (method === 'DELETE' && res.statusCode === 204 && path.startsWith('/api/v1/accounts/')) await newUser();
        },
      ),
      { numRuns: 400 },
    );
  });
});
