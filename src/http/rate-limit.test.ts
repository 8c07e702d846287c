import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness, uniqueAddress } from '../../test/harness.ts';
import type { App } from './types.ts';

/** SPEC §8: 429 TooManyRequestsError with Retry-After and X-RateLimit-* headers. */
function expectLimited(res: LightMyRequestResponse, max: number): void {
  expect(res.statusCode, res.body).toBe(429);
  expect(res.json()).toEqual({
    error: 'TooManyRequestsError',
    message: expect.stringMatching(
      new RegExp(`^Rate limit exceeded \\(${max} requests per window\\); retry in (1 minute|\\d+ seconds?)$`),
    ),
    statusCode: 429,
  });
  const retryAfter = Number(res.headers['retry-after']);
  expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, String(retryAfter)).toBe(true);
  expect(res.headers['x-ratelimit-limit']).toBe(String(max));
  expect(res.headers['x-ratelimit-remaining']).toBe('0');
  expect(res.headers['x-ratelimit-reset']).toMatch(/^\d+$/);
  expect(res.headers['x-request-id']).toBeTruthy();
}

const wrong = { email: 'nobody@example.test', password: 'wrong-password' };
/**
 * The sign-in budget is shared (database or Redis) by every test file, so each test signs in from an address
 * of its own (`from`, set before each test); a spoofed X-Forwarded-For header changes nothing unless trusted.
 */
let from = '';
const signIn = (app: App, headers: Record<string, string> = {}, body: unknown = wrong) =>
  call(app, 'POST', '/api/v1/auth/authenticate', {
    body: body === wrong ? { ...wrong, email: `nobody-${from}@example.test` } : body,
    headers,
    remoteAddress: from,
  });

describe('rate limits', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());
  beforeEach(() => {
    from = uniqueAddress();
  });

  it('the 101st request in a minute from one account is 429; another account has its own budget', async () => {
    const limited = await h.extraApp({ RATE_LIMIT_GLOBAL: '100' });
    const u = await createUser(limited);
    const pat = await u.pat(['account']);
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) {
      // A PAT and the session of one account share the account's budget.
      const res = await call(limited, 'GET', '/api/v1/accounts/me', { token: i % 2 ? pat : u.sessionToken });
      statuses.push(res.statusCode);
      if (i === 0) {
        expect(res.headers['x-ratelimit-limit']).toBe('100');
        expect(res.headers['x-ratelimit-remaining']).toBe('99');
      }
    }
    expect(statuses).toEqual(Array(100).fill(200));
    expectLimited(await call(limited, 'GET', '/api/v1/accounts/me', { token: pat }), 100);
    // Every route counts against the same budget.
    expectLimited(await call(limited, 'GET', '/api/v1/auth-scopes', { token: u.sessionToken }), 100);

    const other = await createUser(limited);
    expect((await call(limited, 'GET', '/api/v1/accounts/me', { token: other.sessionToken })).statusCode).toBe(200);
  });

  it('callers without a valid token are limited per address, and do not eat an account’s budget', async () => {
    const limited = await h.extraApp({ RATE_LIMIT_GLOBAL: '3' });
    const u = await createUser(limited);
    const statuses: number[] = [];
    for (const token of [undefined, 'pat_unknown', 'garbage']) {
      statuses.push((await call(limited, 'GET', '/api/v1/accounts/me', token ? { token } : {})).statusCode);
    }
    expect(statuses).toEqual([401, 401, 401]);
    expectLimited(await call(limited, 'GET', '/api/v1/accounts/me', { token: 'pat_another-guess' }), 3);
    expectLimited(await call(limited, 'GET', '/api/v1/unknown-route'), 3);
    expect((await call(limited, 'GET', '/api/v1/accounts/me', { token: u.sessionToken })).statusCode).toBe(200);
  });

  it('POST /auth/authenticate: 10 a minute per address, whatever the outcome', async () => {
    const app = await h.extraApp({ RATE_LIMIT_AUTH: '10' });
    const u = await createUser(app);
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++) statuses.push((await signIn(app)).statusCode);
    statuses.push((await signIn(app, {}, { email: u.account.email, password: u.password })).statusCode);
    expect(statuses).toEqual([...Array(9).fill(401), 200]);
    // The 11th is refused even with the right password.
    expectLimited(await signIn(app, {}, { email: u.account.email, password: u.password }), 10);
    // Signed-in calls are counted per account, not against the address's sign-in budget.
    expect((await call(app, 'GET', '/api/v1/accounts/me', { token: u.sessionToken })).statusCode).toBe(200);
  });

  describe('X-Forwarded-For counts only as TRUST_PROXY says', () => {
    const run = async (env: Record<string, string>, forwardedFor: (i: number) => string) => {
      const app = await h.extraApp({ RATE_LIMIT_AUTH: '2', ...env });
      const statuses: number[] = [];
      // A new e-mail each time: the per-account sign-in budget (one per e-mail) stays out of the address's count.
      for (let i = 0; i < 3; i++) {
        const body = { email: `nobody${i}-${from}@example.test`, password: 'wrong-password' };
        statuses.push((await signIn(app, { 'x-forwarded-for': forwardedFor(i) }, body)).statusCode);
      }
      return statuses;
    };
    /** Addresses of this test's own (the budgets outlive the test in the shared store): `net(7)` is 10.a.b.7. */
    let net = (_: number) => '';
    beforeEach(() => {
      const prefix = uniqueAddress().split('.').slice(0, 3).join('.');
      net = (i) => `${prefix}.${i}`;
    });

    it('unset: the header is ignored, a spoofed address changes nothing', async () => {
      expect(await run({}, (i) => net(i))).toEqual([401, 401, 429]);
    });

    it('true: the client address is the first in the header', async () => {
      expect(await run({ TRUST_PROXY: 'true' }, (i) => net(10 + i))).toEqual([401, 401, 401]);
      expect(await run({ TRUST_PROXY: 'true' }, (i) => `${net(29)}, ${net(20 + i)}`)).toEqual([401, 401, 429]);
    });

    it('a hop count: only that many proxies are trusted, so an address the client added is not', async () => {
      // One trusted proxy: the client is the last address it appended; what comes before is the client's claim.
      expect(await run({ TRUST_PROXY: '1' }, (i) => `6.6.6.${i}, ${net(37)}`)).toEqual([401, 401, 429]);
      expect(await run({ TRUST_PROXY: '1' }, (i) => `6.6.6.6, ${net(30 + i)}`)).toEqual([401, 401, 401]);
    });

    it('a list: the header counts only when it comes from a listed proxy', async () => {
      expect(await run({ TRUST_PROXY: from }, (i) => net(40 + i))).toEqual([401, 401, 401]);
      expect(await run({ TRUST_PROXY: '10.9.9.0/24, 192.168.0.1' }, (i) => net(50 + i))).toEqual([401, 401, 429]);
    });
  });

  it('RATE_LIMIT_ENABLED=false turns the limits off', async () => {
    const app = await h.extraApp({ RATE_LIMIT_ENABLED: 'false', RATE_LIMIT_AUTH: '1' });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await signIn(app)).statusCode);
    expect(statuses).toEqual([401, 401, 401]);
  });

  it('with REDIS_URL two instances share one counter', async () => {
    const env = { RATE_LIMIT_GLOBAL: '3', REDIS_URL: 'redis://127.0.0.1:6379' };
    const a = await h.extraApp(env);
    // A fresh account per run: keys never collide with another run sharing the Redis server.
    const u = await createUser(a);
    const token = await u.pat(['account']);
    const me = (app: App) => call(app, 'GET', '/api/v1/accounts/me', { token });
    const seq = [(await me(a)).statusCode];
    // An instance counts from its very first request: it is ready only once its Redis client is.
    const b = await h.extraApp(env);
    seq.push((await me(b)).statusCode, (await me(a)).statusCode);
    expect(seq).toEqual([200, 200, 200]);
    expectLimited(await call(b, 'GET', '/api/v1/accounts/me', { token }), 3);
    expectLimited(await call(a, 'GET', '/api/v1/accounts/me', { token }), 3);
    // Without Redis each instance counts alone: the same calls pass on a third, memory-backed instance.
    const alone = await h.extraApp({ RATE_LIMIT_GLOBAL: '3' });
    expect((await call(alone, 'GET', '/api/v1/accounts/me', { token })).statusCode).toBe(200);
  });
});
