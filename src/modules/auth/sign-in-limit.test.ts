import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { pkcePair } from '../../../test/e2e/oauth-helpers.ts';
import {
  call,
  createHarness,
  createUser,
  type TestHarness,
  type TestUser,
  uniqueAddress,
} from '../../../test/harness.ts';
import { csrfOf, PageClient } from '../../../test/web-client.ts';
import { signInAttempts } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';
import { sha256Hex } from '../../lib/ids.ts';

/**
 * Issue 10 item 7: §8's sign-in limit (10 a minute) is one budget across the API, the sign-in page and the
 * OAuth sign-in, per address and per account; before, each route had its own 10, so 30 guesses a minute.
 */
describe('one sign-in budget for every way in', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  /** The client address of the test under way: the budget is shared by every test file over the database. */
  let from = '';
  beforeEach(() => {
    from = uniqueAddress();
  });

  const viaApi = async (app: App, email: string, password: string, headers: Record<string, string> = {}) =>
    (await call(app, 'POST', '/api/v1/auth/authenticate', { body: { email, password }, headers, remoteAddress: from }))
      .statusCode;

  const viaPage = async (app: App, email: string, password: string) => {
    const browser = new PageClient(app, { remoteAddress: from });
    const page = await browser.get('/signin');
    return (await browser.post('/signin', { csrf: csrfOf(page.body), email, password })).statusCode;
  };

  async function viaOAuth(app: App, email: string, password: string): Promise<number> {
    const registered = await call(app, 'POST', '/api/v1/auth/register', {
      body: { redirect_uris: ['https://app.example.test/cb'], token_endpoint_auth_method: 'none' },
      remoteAddress: from,
    });
    expect(registered.statusCode, registered.body).toBe(201);
    const { challenge } = pkcePair();
    const browser = new PageClient(app, { remoteAddress: from });
    const query = new URLSearchParams({
      client_id: registered.json().client_id,
      response_type: 'code',
      redirect_uri: 'https://app.example.test/cb',
      scope: 'account',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's',
    });
    const start = await browser.get(`/oauth/authorize?${query}`);
    const interaction = String(start.headers.location ?? '');
    expect(interaction, start.body).toMatch(/^\/interaction\/[\w-]+$/);
    const page = await browser.get(interaction);
    const res = await browser.post(`${interaction}/login`, { csrf: csrfOf(page.body), email, password });
    return res.statusCode;
  }

  it('per address: 4 API + 3 page + 3 OAuth sign-ins spend the 10; the 11th is 429 on each of them', async () => {
    const app = await h.extraApp({ RATE_LIMIT_AUTH: '10' });
    const u: TestUser = await createUser(app);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push(await viaApi(app, `nobody${i}@example.test`, 'wrong-password'));
    for (let i = 0; i < 3; i++) statuses.push(await viaPage(app, `nobody-p${i}@example.test`, 'wrong-password'));
    for (let i = 0; i < 2; i++) statuses.push(await viaOAuth(app, `nobody-o${i}@example.test`, 'wrong-password'));
    statuses.push(await viaOAuth(app, u.account.email, u.password));
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 401, 401, 401, 303]);
    // The budget is spent for every way in, even with the right password.
    expect(await viaApi(app, u.account.email, u.password)).toBe(429);
    expect(await viaPage(app, u.account.email, u.password)).toBe(429);
    expect(await viaOAuth(app, u.account.email, u.password)).toBe(429);
    const api = await call(app, 'POST', '/api/v1/auth/authenticate', {
      body: { email: u.account.email, password: u.password },
      remoteAddress: from,
    });
    expect(api.json()).toEqual({
      error: 'TooManyRequestsError',
      message: 'Too many sign-in attempts; try again later',
      statusCode: 429,
    });
    expect(Number(api.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('per account: guesses from many addresses share the account budget; other accounts are not affected', async () => {
    const app = await h.extraApp({ RATE_LIMIT_AUTH: '10', TRUST_PROXY: 'true' });
    const [victim, bystander] = [await createUser(app), await createUser(app)];
    const from = (i: number) => ({ 'x-forwarded-for': `10.9.${i}.1` });
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      statuses.push(await viaApi(app, victim.account.email.toUpperCase(), 'wrong-password', from(i)));
    }
    expect(statuses).toEqual(Array(10).fill(401));
    expect(await viaApi(app, victim.account.email, victim.password, from(50))).toBe(429);
    expect(await viaApi(app, bystander.account.email, bystander.password, from(51))).toBe(200);
  });

  /**
   * Issue 39 item 6: behind a round-robin balancer each instance used to count alone (30 guesses passed with 3
   * instances). The budget is kept in the database, or in Redis when REDIS_URL is set, so every instance counts
   * the same attempts.
   */
  for (const [store, env] of [
    ['the database', {}],
    ['Redis', { REDIS_URL: 'redis://127.0.0.1:6379' }],
    // Redis unreachable: the attempts are counted in the database rather than let through.
    ['the database, Redis down', { REDIS_URL: 'redis://127.0.0.1:1' }],
  ] as const) {
    describe(`two instances share one budget (${store})`, () => {
      it('per address: 6 wrong passwords on A and 5 on B, through every way in: the 11th is 429', async () => {
        const a = await h.extraApp({ RATE_LIMIT_AUTH: '10', ...env });
        const b = await h.extraApp({ RATE_LIMIT_AUTH: '10', ...env });
        const u = await createUser(a);
        const statuses: number[] = [];
        for (let i = 0; i < 3; i++) statuses.push(await viaApi(a, `nobody-a${i}@example.test`, 'wrong-password'));
        for (let i = 0; i < 3; i++) statuses.push(await viaPage(a, `nobody-p${i}@example.test`, 'wrong-password'));
        for (let i = 0; i < 2; i++) statuses.push(await viaPage(b, `nobody-q${i}@example.test`, 'wrong-password'));
        for (let i = 0; i < 2; i++) statuses.push(await viaOAuth(b, `nobody-o${i}@example.test`, 'wrong-password'));
        expect(statuses).toEqual(Array(10).fill(401));
        // The 11th, on B, with the right password.
        const api = await call(b, 'POST', '/api/v1/auth/authenticate', {
          body: { email: u.account.email, password: u.password },
          remoteAddress: from,
        });
        expect(api.statusCode).toBe(429);
        expect(api.json()).toEqual({
          error: 'TooManyRequestsError',
          message: 'Too many sign-in attempts; try again later',
          statusCode: 429,
        });
        const retryAfter = Number(api.headers['retry-after']);
        expect(retryAfter >= 1 && retryAfter <= 60, String(retryAfter)).toBe(true);
        expect(await viaPage(a, u.account.email, u.password)).toBe(429);
        expect(await viaOAuth(b, u.account.email, u.password)).toBe(429);
        // Counted where the store says (13 attempts), under the address's hash: no address or e-mail in the clear.
        const key = sha256Hex(`ip:${from}`);
        const [row] = await h.database.db.select().from(signInAttempts).where(eq(signInAttempts.key, key));
        const inRedis = await a.deps.redis?.get(`sb:signin:${key}`).catch(() => null);
        if (store === 'Redis') expect([row, inRedis]).toEqual([undefined, '13']);
        else expect([row?.count, inRedis ?? null]).toEqual([13, null]);
        // Another address is not affected.
        from = uniqueAddress();
        expect(await viaApi(b, u.account.email.replace('@', '+x@'), 'wrong-password')).toBe(401);
      });

      it('per account: 6 guesses on A and 5 on B from 11 addresses: the 11th is 429, even with the password', async () => {
        const a = await h.extraApp({ RATE_LIMIT_AUTH: '10', ...env });
        const b = await h.extraApp({ RATE_LIMIT_AUTH: '10', ...env });
        const [victim, bystander] = [await createUser(a), await createUser(a)];
        const statuses: number[] = [];
        for (let i = 0; i < 10; i++) {
          from = uniqueAddress();
          statuses.push(await viaApi(i < 6 ? a : b, victim.account.email, 'wrong-password'));
        }
        expect(statuses).toEqual(Array(10).fill(401));
        from = uniqueAddress();
        expect(await viaApi(b, victim.account.email, victim.password)).toBe(429);
        expect(await viaApi(a, bystander.account.email, bystander.password)).toBe(200);
      });
    });
  }
});
