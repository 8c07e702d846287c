import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pkcePair } from '../../../test/e2e/oauth-helpers.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { csrfOf, PageClient } from '../../../test/web-client.ts';
import type { App } from '../../http/types.ts';

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

  const viaApi = async (app: App, email: string, password: string, headers: Record<string, string> = {}) =>
    (await call(app, 'POST', '/api/v1/auth/authenticate', { body: { email, password }, headers })).statusCode;

  const viaPage = async (app: App, email: string, password: string) => {
    const browser = new PageClient(app);
    const page = await browser.get('/signin');
    return (await browser.post('/signin', { csrf: csrfOf(page.body), email, password })).statusCode;
  };

  async function viaOAuth(app: App, email: string, password: string): Promise<number> {
    const registered = await call(app, 'POST', '/api/v1/auth/register', {
      body: { redirect_uris: ['https://app.example.test/cb'], token_endpoint_auth_method: 'none' },
    });
    expect(registered.statusCode, registered.body).toBe(201);
    const { challenge } = pkcePair();
    const browser = new PageClient(app);
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
});
