import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness } from '../../test/harness.ts';
import { buildApp } from '../app.ts';

describe('errors, limits, API description and operations', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('unknown routes answer 404 NotFoundError with a request id', async () => {
    const res = await call(h.app, 'GET', '/api/v1/nope?token=pat_secret');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      error: 'NotFoundError',
      message: 'Route GET /api/v1/nope not found',
      statusCode: 404,
    });
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  });

  it('echoes a well-formed X-Request-Id and replaces a bad one', async () => {
    const good = await call(h.app, 'GET', '/healthz', { headers: { 'x-request-id': 'trace-123' } });
    expect(good.headers['x-request-id']).toBe('trace-123');
    const bad = await call(h.app, 'GET', '/healthz', { headers: { 'x-request-id': 'bad id\twith spaces' } });
    expect(bad.headers['x-request-id']).toMatch(/^req_/);
  });

  it('malformed JSON is 400, a schema failure 422 with details, a wrong type 415, a huge body 413', async () => {
    const malformed = await h.app.inject({
      method: 'POST',
      url: '/api/v1/auth/signup',
      headers: { 'content-type': 'application/json' },
      payload: '{"email": ',
    });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toEqual({ error: 'BadRequestError', message: 'Malformed JSON body', statusCode: 400 });
    expect(malformed.headers['x-request-id']).toBeTruthy();

    const invalid = await call(h.app, 'POST', '/api/v1/auth/authenticate', { body: { email: 5 } });
    expect(invalid.statusCode).toBe(422);
    expect(invalid.json()).toMatchObject({ error: 'ValidationError', statusCode: 422 });
    expect(
      invalid
        .json()
        .details.map((d: { field: string }) => d.field)
        .sort(),
    ).toEqual(['body.email', 'body.password']);

    const xml = await h.app.inject({
      method: 'POST',
      url: '/api/v1/auth/authenticate',
      headers: { 'content-type': 'application/xml' },
      payload: '<a/>',
    });
    expect(xml.statusCode).toBe(415);
    expect(xml.json()).toMatchObject({ error: 'UnsupportedMediaTypeError', statusCode: 415 });

    const small = await h.extraApp({ BODY_LIMIT_BYTES: '200' });
    const huge = await call(small, 'POST', '/api/v1/auth/authenticate', {
      body: { email: 'a@b.c', password: 'x'.repeat(500) },
    });
    expect(huge.statusCode).toBe(413);
    expect(huge.json()).toEqual({ error: 'PayloadTooLargeError', message: 'Request body too large', statusCode: 413 });
  });

  it('an unexpected fault is a 500 without internals', async () => {
    // A route on an instance of its own: the fault is a plain Error, as a bug would throw.
    const broken = await buildApp({ config: h.config, database: h.database, keyRing: h.keyRing });
    broken.get('/boom', { config: { auth: 'public' } }, async () => {
      throw new Error('secret internals: password=hunter2');
    });
    await broken.ready();
    const res = await broken.inject({ method: 'GET', url: '/boom' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: 'InternalServerError', message: 'Internal server error', statusCode: 500 });
    expect(res.body).not.toContain('hunter2');
    await broken.close();
  });

  it('the 101st request in a minute from one account is 429 with Retry-After and X-RateLimit headers', async () => {
    const limited = await h.extraApp({ RATE_LIMIT_GLOBAL: '100' });
    const u = await createUser(limited);
    const token = await u.pat(['account']);
    for (let i = 0; i < 100; i++) {
      const ok = await call(limited, 'GET', '/api/v1/accounts/me', { token });
      expect(ok.statusCode).toBe(200);
      if (i === 0) expect(ok.headers['x-ratelimit-limit']).toBe('100');
    }
    const res = await call(limited, 'GET', '/api/v1/accounts/me', { token });
    expect(res.statusCode).toBe(429);
    expect(res.json()).toMatchObject({ error: 'TooManyRequestsError', statusCode: 429 });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.headers['x-ratelimit-remaining']).toBe('0');
    // Another account has its own budget.
    const other = await createUser(limited);
    expect((await call(limited, 'GET', '/api/v1/accounts/me', { token: other.sessionToken })).statusCode).toBe(200);
  });

  it('sign-in is limited to RATE_LIMIT_AUTH a minute per address; X-Forwarded-For counts only behind TRUST_PROXY', async () => {
    const body = { email: 'nobody@example.test', password: 'wrong-password' };
    const plain = await h.extraApp({ RATE_LIMIT_AUTH: '2' });
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      // Without TRUST_PROXY a spoofed header changes nothing: same client, same counter.
      const res = await call(plain, 'POST', '/api/v1/auth/authenticate', {
        body,
        headers: { 'x-forwarded-for': `10.0.0.${i}` },
      });
      statuses.push(res.statusCode);
    }
    expect(statuses).toEqual([401, 401, 429]);

    const proxied = await h.extraApp({ RATE_LIMIT_AUTH: '2', TRUST_PROXY: 'true' });
    const perClient = [];
    for (let i = 0; i < 3; i++) {
      const res = await call(proxied, 'POST', '/api/v1/auth/authenticate', {
        body,
        headers: { 'x-forwarded-for': `10.0.1.${i}` },
      });
      perClient.push(res.statusCode);
    }
    expect(perClient).toEqual([401, 401, 401]);
  });

  it('with REDIS_URL two instances share one counter', async () => {
    const prefix = { RATE_LIMIT_GLOBAL: '3', REDIS_URL: 'redis://127.0.0.1:6379' };
    const a = await h.extraApp(prefix);
    const b = await h.extraApp(prefix);
    const u = await createUser(a);
    const token = await u.pat(['account']);
    const seq = [];
    for (const app of [a, b, a, b]) seq.push((await call(app, 'GET', '/api/v1/accounts/me', { token })).statusCode);
    expect(seq).toEqual([200, 200, 200, 429]);
  });

  it('/openapi.json describes every API route with its scopes and error answers; /docs serves a reference', async () => {
    const served: string[] = [];
    const app = await buildApp({
      config: h.config,
      database: h.database,
      keyRing: h.keyRing,
      onRoute: (r) => {
        for (const m of [r.method].flat()) if (r.url.startsWith('/api/') && m !== 'HEAD') served.push(`${m} ${r.url}`);
      },
    });
    const res = await call(app, 'GET', '/openapi.json');
    await app.close();
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    const documented = new Set(
      Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
        Object.keys(item).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
      ),
    );
    expect(served.length).toBeGreaterThan(15);
    for (const route of served) expect(documented.has(route), route).toBe(true);

    const me = doc.paths['/api/v1/accounts/me'].get;
    expect(me.security).toEqual([{ bearerAuth: ['account'] }]);
    expect(Object.keys(me.responses)).toEqual(expect.arrayContaining(['200', '401', '403', '429', '500']));
    expect(doc.paths['/api/v1/chat/completions'].post.responses['402']).toBeDefined();
    expect(doc.paths['/api/v1/auth/signup'].post.security).toEqual([]);
    const docs = await call(h.app, 'GET', '/docs/');
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toContain('text/html');
  });

  it('healthz, readyz and Prometheus metrics', async () => {
    expect((await call(h.app, 'GET', '/healthz')).json()).toEqual({ status: 'ok' });
    expect((await call(h.app, 'GET', '/readyz')).json()).toEqual({ status: 'ready' });
    await call(h.app, 'GET', '/api/v1/accounts/me');
    const metrics = await call(h.app, 'GET', '/metrics');
    expect(metrics.statusCode).toBe(200);
    expect(metrics.headers['content-type']).toContain('text/plain');
    expect(metrics.body).toMatch(
      /http_requests_total\{method="GET",route="\/api\/v1\/accounts\/me",status_code="401"\} \d+/,
    );
    expect(metrics.body).toContain('http_request_duration_seconds_bucket');
    expect(metrics.body).toContain('db_pool_connections{state="total"}');
  });
});
