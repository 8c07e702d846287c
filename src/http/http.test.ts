import { once } from 'node:events';
import { type AddressInfo, connect } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyLoggerOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { call, createHarness, createUser, openTestDatabase, type TestHarness } from '../../test/harness.ts';
import { buildApp, loggerOptions } from '../app.ts';
import { jobs } from '../db/schema/index.ts';
import { newId } from '../lib/ids.ts';
import { LATENCY_BUCKETS } from './metrics.ts';

const REQUEST_ID = /^req_[A-Za-z0-9_-]{22}$/;

/** The §7 body, exactly, and the request id header that every error answer carries. */
function expectError(res: LightMyRequestResponse, status: number, error: string, message: string): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.json()).toEqual({ error, message, statusCode: status });
  expect(res.headers['x-request-id']).toMatch(REQUEST_ID);
}

/** The app's real logger settings (redaction included), written to memory. */
function captureLogs() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const logger = { ...(loggerOptions('info') as FastifyLoggerOptions), stream };
  return { logger, lines, entries: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('errors, request ids, logs and operations endpoints', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  describe('every error has the §7 body and an X-Request-Id', () => {
    it('unknown routes: 404 NotFoundError, without the query string in the message', async () => {
      expectError(
        await call(h.app, 'GET', '/api/v1/nope?token=pat_secret'),
        404,
        'NotFoundError',
        'Route GET /api/v1/nope not found',
      );
      expectError(
        await call(h.app, 'POST', '/nowhere', { body: {} }),
        404,
        'NotFoundError',
        'Route POST /nowhere not found',
      );
      expectError(
        await call(h.app, 'DELETE', '/api/v1/accounts/me/avatar/extra'),
        404,
        'NotFoundError',
        'Route DELETE /api/v1/accounts/me/avatar/extra not found',
      );
    });

    it('echoes a well-formed X-Request-Id, replaces a bad one, and sends one on success too', async () => {
      const good = await call(h.app, 'GET', '/healthz', { headers: { 'x-request-id': 'trace-123' } });
      expect(good.headers['x-request-id']).toBe('trace-123');
      const bad = await call(h.app, 'GET', '/healthz', { headers: { 'x-request-id': 'bad id\twith spaces' } });
      expect(bad.headers['x-request-id']).toMatch(REQUEST_ID);
      const a = await call(h.app, 'GET', '/healthz');
      const b = await call(h.app, 'GET', '/healthz');
      expect(a.headers['x-request-id']).toMatch(REQUEST_ID);
      expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
    });

    it('a URL fastify cannot decode or an over-long path segment: 400 BadRequestError', async () => {
      expectError(
        await h.app.inject({ method: 'GET', url: '/api/v1/accounts/%E0%A4%A' }),
        400,
        'BadRequestError',
        'Malformed URL: invalid percent-encoding',
      );
      const u = await createUser(h.app);
      expectError(
        await call(h.app, 'GET', `/api/v1/accounts/${'a'.repeat(200)}`, { token: u.sessionToken }),
        400,
        'BadRequestError',
        'A path segment of the URL is too long',
      );
    });

    it('malformed JSON and an empty JSON body: 400 BadRequestError', async () => {
      const send = (payload: string) =>
        h.app.inject({
          method: 'POST',
          url: '/api/v1/auth/signup',
          headers: { 'content-type': 'application/json' },
          payload,
        });
      expectError(await send('{"email": '), 400, 'BadRequestError', 'Malformed JSON body');
      expectError(await send('{"a":1}}'), 400, 'BadRequestError', 'Malformed JSON body');
      expectError(await send(''), 400, 'BadRequestError', 'Body cannot be empty when Content-Type is application/json');
      // Prototype pollution attempts are refused by the parser, not passed on.
      expectError(await send('{"__proto__": {"admin": true}}'), 400, 'BadRequestError', 'Malformed JSON body');
    });

    it('schema failures: 422 ValidationError with a details entry per field', async () => {
      const res = await call(h.app, 'POST', '/api/v1/auth/authenticate', { body: { email: 5 } });
      expect(res.statusCode).toBe(422);
      expect(res.headers['x-request-id']).toMatch(REQUEST_ID);
      expect(res.json()).toEqual({
        error: 'ValidationError',
        message:
          'Validation failed: body.email: Invalid input: expected string, received number; ' +
          'body.password: Invalid input: expected string, received undefined',
        statusCode: 422,
        details: [
          { field: 'body.email', message: 'Invalid input: expected string, received number' },
          { field: 'body.password', message: 'Invalid input: expected string, received undefined' },
        ],
      });
      const notAnObject = await call(h.app, 'POST', '/api/v1/auth/authenticate', { body: [1, 2] });
      expect(notAnObject.json().details).toEqual([
        { field: 'body', message: 'Invalid input: expected object, received array' },
      ]);
      const u = await createUser(h.app);
      const query = await call(h.app, 'GET', '/api/v1/auth/pats?limit=500&page=x', { token: u.sessionToken });
      expect(
        query
          .json()
          .details.map((d: { field: string }) => d.field)
          .sort(),
      ).toEqual(['query.limit', 'query.page']);
    });

    it('a content type the route does not read: 415', async () => {
      const xml = await h.app.inject({
        method: 'POST',
        url: '/api/v1/auth/authenticate',
        headers: { 'content-type': 'application/xml' },
        payload: '<a/>',
      });
      expectError(xml, 415, 'UnsupportedMediaTypeError', 'Unsupported Content-Type; send application/json');
      // text/plain too: no route reads it, so it is refused before the schema (not a 422 for a string body).
      const text = await h.app.inject({
        method: 'POST',
        url: '/api/v1/auth/authenticate',
        headers: { 'content-type': 'text/plain' },
        payload: '{"email":"a@example.test","password":"x"}',
      });
      expectError(text, 415, 'UnsupportedMediaTypeError', 'Unsupported Content-Type; send application/json');
    });

    it('a body over BODY_LIMIT_BYTES: 413, while one under it is read', async () => {
      const small = await h.extraApp({ BODY_LIMIT_BYTES: '200' });
      const under = await call(small, 'POST', '/api/v1/auth/authenticate', {
        body: { email: 'a@b.c', password: 'x'.repeat(100) },
      });
      expect(under.statusCode).toBe(401);
      const over = await call(small, 'POST', '/api/v1/auth/authenticate', {
        body: { email: 'a@b.c', password: 'x'.repeat(500) },
      });
      expectError(over, 413, 'PayloadTooLargeError', 'Request body too large');
    });

    it('an unexpected fault: 500 without internals, logged with its request id', async () => {
      const logs = captureLogs();
      // A route on an instance of its own: the fault is a plain Error, as a bug would throw.
      const broken = await buildApp({
        config: h.config,
        database: h.database,
        keyRing: h.keyRing,
        logger: logs.logger,
      });
      broken.get('/boom', { config: { auth: 'public' } }, async () => {
        throw new Error('secret internals: password=hunter2 at db.query');
      });
      broken.get('/api/v1/boom-async', { config: { scopes: ['account'] } }, async () => {
        await Promise.reject(new TypeError("Cannot read properties of undefined (reading 'id')"));
      });
      await broken.ready();
      try {
        const res = await broken.inject({ method: 'GET', url: '/boom' });
        expectError(res, 500, 'InternalServerError', 'Internal server error');
        expect(res.body).not.toContain('hunter2');
        const u = await createUser(broken);
        const typed = await call(broken, 'GET', '/api/v1/boom-async', { token: u.sessionToken });
        expectError(typed, 500, 'InternalServerError', 'Internal server error');

        const failures = logs.entries().filter((e) => e.msg === 'request failed');
        expect(failures.map((e) => e.requestId)).toEqual([res.headers['x-request-id'], typed.headers['x-request-id']]);
        expect(failures[0]).toMatchObject({ level: 50, reqId: res.headers['x-request-id'] });
        expect(failures[0]?.err).toMatchObject({ message: expect.stringContaining('secret internals') });
      } finally {
        await broken.close();
      }
    });
  });

  it('logs one JSON line per request with its request id, and never a token or a password', async () => {
    const logs = captureLogs();
    const app = await buildApp({ config: h.config, database: h.database, keyRing: h.keyRing, logger: logs.logger });
    try {
      const u = await createUser(app);
      const pat = await u.pat(['account']);
      const res = await call(app, 'GET', `/api/v1/accounts/me?access_token=${pat}`, { token: pat });
      expect(res.statusCode).toBe(200);
      await call(app, 'GET', '/api/v1/accounts/me', { token: u.sessionToken });
      await call(app, 'POST', '/api/v1/auth/authenticate', { body: { email: u.account.email, password: u.password } });
      await call(app, 'GET', '/api/v1/accounts/me', { token: `${pat.slice(0, -4)}XXXX` });

      const requests = logs.entries().filter((e) => e.msg === 'request');
      expect(requests).toHaveLength(4);
      expect(requests[0]).toMatchObject({
        level: 30,
        reqId: res.headers['x-request-id'],
        method: 'GET',
        url: '/api/v1/accounts/me?access_token=[REDACTED]',
        statusCode: 200,
        accountId: u.account.id,
      });
      const everything = logs.lines.join('\n');
      for (const secret of [pat, pat.slice(4, 30), u.sessionToken.slice(5, 30), u.password]) {
        expect(everything).not.toContain(secret);
      }
    } finally {
      await app.close();
    }
  });

  describe('operations', () => {
    it('GET /healthz and /readyz answer without a token', async () => {
      const health = await call(h.app, 'GET', '/healthz');
      expect(health.statusCode).toBe(200);
      expect(health.json()).toEqual({ status: 'ok' });
      const ready = await call(h.app, 'GET', '/readyz');
      expect(ready.statusCode).toBe(200);
      expect(ready.json()).toEqual({ status: 'ready' });
    });

    it('GET /readyz is 503 when the database does not answer', async () => {
      const { database } = await openTestDatabase();
      const app = await buildApp({ config: h.config, database, keyRing: h.keyRing });
      try {
        expect((await call(app, 'GET', '/readyz')).statusCode).toBe(200);
        await database.close();
        expectError(await call(app, 'GET', '/readyz'), 503, 'ServiceUnavailableError', 'Database unreachable');
        expect((await call(app, 'GET', '/healthz')).statusCode).toBe(200);
      } finally {
        await app.close();
      }
    });

    it('GET /metrics: Prometheus text, requests counted by route pattern and status, the pool', async () => {
      const app = await h.extraApp();
      const u = await createUser(app);
      for (let i = 0; i < 3; i++) await call(app, 'GET', '/api/v1/auth-scopes');
      await call(app, 'GET', `/api/v1/accounts/${u.account.id}`, { token: u.sessionToken });
      await call(app, 'GET', '/api/v1/nope');
      const metrics = await call(app, 'GET', '/metrics');
      expect(metrics.statusCode).toBe(200);
      expect(metrics.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      const text = metrics.body;
      expect(text).toContain('# TYPE http_requests_total counter');
      expect(text).toContain('http_requests_total{method="GET",route="/api/v1/auth-scopes",status_code="401"} 3\n');
      expect(text).toContain(
        'http_requests_total{method="GET",route="/api/v1/accounts/:accountId",status_code="200"} 1\n',
      );
      expect(text).toContain('http_requests_total{method="GET",route="unmatched",status_code="404"} 1\n');
      expect(text).not.toContain(u.account.id);
      expect(text).toMatch(
        /http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/auth-scopes",status_code="401"\} 3\n/,
      );
      // The histogram's buckets are cumulative and end at +Inf with every request; its sum is in seconds.
      const bucket = (le: string) =>
        Number(
          text.match(
            new RegExp(
              `^http_request_duration_seconds_bucket\\{method="GET",route="/api/v1/auth-scopes",status_code="401",le="${le.replace('+', '\\+')}"\\} (\\d+)$`,
              'm',
            ),
          )?.[1],
        );
      const les = [...LATENCY_BUCKETS.map(String), '+Inf'];
      const counts = les.map(bucket);
      expect(counts.every(Number.isInteger)).toBe(true);
      expect(counts.every((n, i) => i === 0 || n >= (counts[i - 1] ?? 0))).toBe(true);
      expect(counts.at(-1)).toBe(3);
      const sum = Number(
        /^http_request_duration_seconds_sum\{method="GET",route="\/api\/v1\/auth-scopes",status_code="401"\} (\S+)$/m.exec(
          text,
        )?.[1],
      );
      expect(sum).toBeGreaterThan(0);
      expect(sum).toBeLessThan(3);
      expect(text).toContain('# TYPE http_request_duration_seconds histogram');
      expect(text).toMatch(/db_pool_connections\{state="total"\} \d+/);
      expect(text).toContain('process_resident_memory_bytes');
      // Jobs by status, as the table holds them (a dead one is counted until an operator retries it).
      const jobsIn = (body: string, status: string) =>
        Number(body.match(new RegExp(`^jobs\\{status="${status}"\\} (\\d+)$`, 'm'))?.[1]);
      for (const status of ['queued', 'running', 'succeeded', 'dead'])
        expect(jobsIn(text, status)).toBeGreaterThanOrEqual(0);
      await h.database.db
        .insert(jobs)
        .values({ id: newId('job'), type: 'test.metrics', payload: {}, status: 'dead', maxAttempts: 1 });
      const after = (await call(app, 'GET', '/metrics')).body;
      expect(jobsIn(after, 'dead')).toBeGreaterThanOrEqual(jobsIn(text, 'dead') + 1);
    });
  });

  it('METRICS_TOKEN: /metrics answers only its bearer token (401 §7 body otherwise, no figures leak)', async () => {
    const token = 'metrics-token-0123456789abcdef';
    const app = await h.extraApp({ METRICS_TOKEN: token });
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Bearer wrong-token-0123456789abcdef' },
      { authorization: token },
    ]) {
      const res = await call(app, 'GET', '/metrics', { headers });
      expectError(res, 401, 'UnauthorizedError', 'Missing or invalid bearer token');
      expect(res.body).not.toContain('http_requests_total');
    }
    const ok = await call(app, 'GET', '/metrics', { headers: { authorization: `Bearer ${token}` } });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('# TYPE http_requests_total counter');
    // The probes stay open: a balancer's health check carries no token.
    expect((await call(app, 'GET', '/healthz')).statusCode).toBe(200);
    expect((await call(app, 'GET', '/readyz')).statusCode).toBe(200);
  });

  it('a request on a kept-alive connection after shutdown began: 503 with the §7 body, X-Request-Id and Connection: close', async () => {
    const app = await buildApp({ config: h.config, database: h.database, keyRing: h.keyRing });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d: Buffer) => {
      received += d.toString();
    });
    // The first request is held open (Expect: 100-continue, no body yet), so closing waits for it.
    const body = JSON.stringify({ email: 'x@example.test', password: 'wrong password' });
    socket.write(
      [
        'POST /api/v1/auth/authenticate HTTP/1.1',
        'Host: 127.0.0.1',
        'Content-Type: application/json',
        `Content-Length: ${Buffer.byteLength(body)}`,
        'Expect: 100-continue',
        '',
        '',
      ].join('\r\n'),
    );
    await vi.waitFor(() => expect(received).toContain('100 Continue'));
    const closed = app.close();
    // Its body, then a second request on the same connection, arriving while the app closes.
    socket.write(`${body}GET /api/v1/auth-scopes HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    await once(socket, 'end');
    await closed;
    const answers = received.split(/(?=HTTP\/1\.1 \d{3} )/).filter((a) => !a.startsWith('HTTP/1.1 100'));
    expect(answers).toHaveLength(2);
    expect(answers[0]).toMatch(/^HTTP\/1\.1 401 /);
    const [head, payload] = (answers[1] ?? '').split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 503 /);
    expect(head).toMatch(/\r\nx-request-id: req_[A-Za-z0-9_-]{22}\r\n/i);
    expect(head).toMatch(/\r\nconnection: close\r\n/i);
    expect(head).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(JSON.parse(payload ?? '')).toEqual({
      error: 'ServiceUnavailableError',
      message: 'The service is shutting down; retry',
      statusCode: 503,
    });
  });
});
