import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import { accounts, creditTransactions, personalAccessTokens, sessions } from '../../db/schema/index.ts';

const PNG_1PX =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

describe('accounts', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  guardTests(
    () => h,
    [
      { method: 'GET', url: '/api/v1/accounts/me', scopes: ['account'] },
      { method: 'PUT', url: '/api/v1/accounts/me', scopes: ['account'], body: { name: 'x' } },
      {
        method: 'GET',
        url: '/api/v1/accounts/acc_x',
        scopes: ['account'],
        otherAccountUrl: (o) => `/api/v1/accounts/${o.account.id}`,
      },
      {
        method: 'PUT',
        url: '/api/v1/accounts/acc_x',
        scopes: ['account'],
        body: { name: 'x' },
        otherAccountUrl: (o) => `/api/v1/accounts/${o.account.id}`,
      },
      {
        method: 'DELETE',
        url: '/api/v1/accounts/acc_x',
        scopes: ['account'],
        otherAccountUrl: (o) => `/api/v1/accounts/${o.account.id}`,
      },
      {
        method: 'GET',
        url: '/api/v1/accounts/acc_x/avatar',
        scopes: [],
        otherAccountUrl: (o) => `/api/v1/accounts/${o.account.id}/avatar`,
      },
    ],
  );

  it('GET /accounts/me answers the account with 100,000 starting credits', async () => {
    const u = await createUser(h.app, { name: 'Ada Lovelace' });
    const res = await call(h.app, 'GET', '/api/v1/accounts/me', { token: await u.pat(['account']) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: u.account.id,
      name: 'Ada Lovelace',
      email: u.account.email,
      avatar: `http://localhost:8080/api/v1/accounts/${u.account.id}/avatar`,
      creditBalance: 100000,
      createdAt: u.account.createdAt,
      updatedAt: u.account.updatedAt,
    });
    const byId = await call(h.app, 'GET', `/api/v1/accounts/${u.account.id}`, { token: u.sessionToken });
    expect(byId.json()).toEqual(res.json());
  });

  it('PUT updates name and avatar only; unknown fields and bad avatars are 422', async () => {
    const u = await createUser(h.app);
    const res = await call(h.app, 'PUT', '/api/v1/accounts/me', {
      token: u.sessionToken,
      body: { name: '  Grace Hopper ', avatar: 'https://example.com/grace.png' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ name: 'Grace Hopper', avatar: 'https://example.com/grace.png' });
    expect(Date.parse(res.json().updatedAt)).toBeGreaterThanOrEqual(Date.parse(u.account.updatedAt));

    const extra = await call(h.app, 'PUT', '/api/v1/accounts/me', { token: u.sessionToken, body: { email: 'x@y.z' } });
    expect(extra.statusCode).toBe(422);
    expect(extra.json().error).toBe('ValidationError');
    const svg = await call(h.app, 'PUT', `/api/v1/accounts/${u.account.id}`, {
      token: u.sessionToken,
      body: { avatar: 'data:image/svg+xml;base64,PHN2Zz4=' },
    });
    expect(svg.statusCode).toBe(422);
    expect(svg.json().details).toEqual([
      {
        field: 'body.avatar',
        message: 'avatar must be an http(s) URL or a base64 data URI of a PNG, JPEG, GIF or WEBP image',
      },
    ]);
  });

  it('serves the avatar: generated initials, an uploaded image, or a redirect to its URL', async () => {
    const u = await createUser(h.app, { name: 'Ada Lovelace' });
    const url = `/api/v1/accounts/${u.account.id}/avatar`;
    const initials = await call(h.app, 'GET', url, { token: await u.pat(['llm-all']) });
    expect(initials.statusCode).toBe(200);
    expect(initials.headers['content-type']).toBe('image/svg+xml');
    expect(initials.body).toContain('>AL</text>');
    expect(initials.headers['content-security-policy']).toContain("default-src 'none'");

    await call(h.app, 'PUT', '/api/v1/accounts/me', { token: u.sessionToken, body: { avatar: PNG_1PX } });
    const png = await call(h.app, 'GET', url, { token: u.sessionToken });
    expect(png.headers['content-type']).toBe('image/png');
    expect(png.rawPayload.subarray(1, 4).toString()).toBe('PNG');

    await call(h.app, 'PUT', '/api/v1/accounts/me', {
      token: u.sessionToken,
      body: { avatar: 'https://cdn.example/a.png' },
    });
    const redirect = await call(h.app, 'GET', url, { token: u.sessionToken });
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toBe('https://cdn.example/a.png');
  });

  it('DELETE removes the account and everything it owns; its tokens stop working', async () => {
    const u = await createUser(h.app);
    const pat = await u.pat(['account']);
    const res = await call(h.app, 'DELETE', `/api/v1/accounts/${u.account.id}`, { token: u.sessionToken });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    const db = h.database.db;
    expect(await db.select().from(accounts).where(eq(accounts.id, u.account.id))).toEqual([]);
    expect(await db.select().from(sessions).where(eq(sessions.accountId, u.account.id))).toEqual([]);
    expect(
      await db.select().from(personalAccessTokens).where(eq(personalAccessTokens.accountId, u.account.id)),
    ).toEqual([]);
    expect(await db.select().from(creditTransactions).where(eq(creditTransactions.accountId, u.account.id))).toEqual(
      [],
    );
    expect((await call(h.app, 'GET', '/api/v1/accounts/me', { token: pat })).statusCode).toBe(401);
    expect((await call(h.app, 'GET', '/api/v1/accounts/me', { token: u.sessionToken })).statusCode).toBe(401);
  });
});
