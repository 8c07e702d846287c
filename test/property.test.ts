import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, createUser, type TestHarness } from './harness.ts';

/** Random methods, paths, headers and bodies: the service answers every one, and never with a 500. */
describe('robustness', () => {
  let h: TestHarness;
  let token: string;
  beforeAll(async () => {
    h = await createHarness();
    token = (await createUser(h.app)).sessionToken;
  });
  afterAll(() => h.close());

  const paths = fc.oneof(
    fc.constantFrom(
      '/api/v1/accounts/me',
      '/api/v1/accounts/acc_x',
      '/api/v1/accounts/acc_x/avatar',
      '/api/v1/auth/signup',
      '/api/v1/auth/authenticate',
      '/api/v1/auth/pat',
      '/api/v1/auth/pats',
      '/api/v1/auth/pats/tok_1',
      '/api/v1/auth-scopes',
      '/api/v1/credit-transactions',
      '/api/v1/chat/completions',
      '/api/v1/models',
      '/healthz',
      '/openapi.json',
    ),
    fc.webPath().map((p) => (p.startsWith('/') ? p : `/${p}`)),
  );
  const query = fc.option(
    fc.dictionary(
      fc.constantFrom('page', 'limit', 'sortBy', 'sortOrder', 'type', 'from', 'x'),
      fc.string({ maxLength: 12 }),
    ),
  );
  const body = fc.oneof(
    fc.constant(undefined),
    fc.json(),
    fc.string({ maxLength: 200 }),
    fc.record(
      { email: fc.string(), password: fc.string(), name: fc.string(), scopes: fc.array(fc.string()) },
      { requiredKeys: [] },
    ),
  );
  const contentType = fc.constantFrom(
    'application/json',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data',
    'x/y',
  );
  const auth = fc.oneof(
    fc.constant(undefined),
    fc.constant('session'),
    fc.string({ maxLength: 60 }).map((s) => `Bearer ${s}`),
  );

  it('never answers 500 and always answers', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'),
        paths,
        query,
        body,
        contentType,
        auth,
        async (method, path, q, payload, type, authorization) => {
          const search = q ? `?${new URLSearchParams(q).toString()}` : '';
          const headers: Record<string, string> = { 'content-type': type };
          if (authorization === 'session') headers.authorization = `Bearer ${token}`;
          else if (authorization) headers.authorization = authorization;
          const res = await h.app.inject({
            method: method as 'GET',
            url: `${path}${search}`,
            headers,
            ...(payload !== undefined && method !== 'GET'
              ? { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }
              : {}),
          });
          expect(res.statusCode, `${method} ${path}${search} -> ${res.body.slice(0, 200)}`).not.toBe(500);
          if (res.statusCode >= 400 && String(res.headers['content-type']).includes('json')) {
            expect(res.json()).toMatchObject({
              error: expect.any(String),
              message: expect.any(String),
              statusCode: res.statusCode,
            });
          }
        },
      ),
      { numRuns: 300, interruptAfterTimeLimit: 20_000 },
    );
  });
});
