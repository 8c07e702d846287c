import { count, eq, getTableColumns, is } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import * as schema from '../../db/schema/index.ts';

const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
const PNG_1PX = `data:image/png;base64,${PNG_BASE64}`;

/** Every table with an `account_id` column, so a table added later is checked by the cascade test too. */
const OWNED_TABLES = Object.entries(schema).flatMap(([name, table]) => {
  if (!is(table, PgTable)) return [];
  const column = (getTableColumns(table) as Record<string, unknown>).accountId;
  return column ? [{ name, table, column: column as typeof schema.sessions.accountId }] : [];
});

describe('accounts', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());
  const me = (token: string) => call(h.app, 'GET', '/api/v1/accounts/me', { token });

  guardTests(
    () => h,
    [
      { method: 'GET', url: '/api/v1/accounts/me', scopes: ['account'] },
      { method: 'PUT', url: '/api/v1/accounts/me', scopes: ['account'], body: { name: 'x' } },
      {
        method: 'GET',
        url: '/api/v1/accounts/acc_x',
        scopes: ['account'],
        ownedUrl: (o) => `/api/v1/accounts/${o.account.id}`,
      },
      {
        method: 'PUT',
        url: '/api/v1/accounts/acc_x',
        scopes: ['account'],
        body: { name: 'x' },
        ownedUrl: (o) => `/api/v1/accounts/${o.account.id}`,
      },
      {
        method: 'DELETE',
        url: '/api/v1/accounts/acc_x',
        scopes: [],
        sessionOnly: true,
        ownedUrl: (o) => `/api/v1/accounts/${o.account.id}`,
      },
      {
        method: 'GET',
        url: '/api/v1/accounts/acc_x/avatar',
        scopes: [],
        ownedUrl: (o) => `/api/v1/accounts/${o.account.id}/avatar`,
      },
    ],
  );

  it('GET /accounts/me and /accounts/:ownId answer the account with 100,000 starting credits', async () => {
    const u = await createUser(h.app, { name: 'Ada Lovelace' });
    const res = await me(await u.pat(['account']));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.json()).toEqual({
      id: u.account.id,
      name: 'Ada Lovelace',
      email: u.account.email,
      avatar: `http://localhost:8080/api/v1/accounts/${u.account.id}/avatar`,
      creditBalance: 100000,
      createdAt: u.account.createdAt,
      updatedAt: u.account.updatedAt,
    });
    expect(u.account.id).toMatch(/^acc_[A-Za-z0-9_-]{22}$/);
    const byId = await call(h.app, 'GET', `/api/v1/accounts/${u.account.id}`, { token: u.sessionToken });
    expect(byId.statusCode).toBe(200);
    expect(byId.json()).toEqual(res.json());
  });

  it('an unknown account id is 404 like another account’s', async () => {
    const u = await createUser(h.app);
    const res = await call(h.app, 'GET', '/api/v1/accounts/acc_doesnotexist', { token: u.sessionToken });
    expect(res.json()).toEqual({
      error: 'NotFoundError',
      message: 'Account acc_doesnotexist not found',
      statusCode: 404,
    });
  });

  it('PUT /accounts/me updates name and avatar, answers the whole account and keeps it', async () => {
    const u = await createUser(h.app);
    const res = await call(h.app, 'PUT', '/api/v1/accounts/me', {
      token: u.sessionToken,
      body: { name: '  Grace Hopper ', avatar: 'https://example.com/grace.png' },
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      ...u.account,
      name: 'Grace Hopper',
      avatar: 'https://example.com/grace.png',
      updatedAt: expect.any(String),
    });
    expect(Date.parse(body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(u.account.updatedAt));
    expect((await me(u.sessionToken)).json()).toEqual(body);

    // Only the name: the avatar stays.
    const renamed = await call(h.app, 'PUT', `/api/v1/accounts/${u.account.id}`, {
      token: u.sessionToken,
      body: { name: 'Amazing Grace' },
    });
    expect(renamed.json()).toMatchObject({ name: 'Amazing Grace', avatar: 'https://example.com/grace.png' });
  });

  it('PUT refuses unknown fields, empty names and unsafe avatars with a 422 naming each field', async () => {
    const u = await createUser(h.app);
    const put = (body: unknown) => call(h.app, 'PUT', '/api/v1/accounts/me', { token: u.sessionToken, body });

    const extra = await put({ email: 'x@y.z', creditBalance: 1e9 });
    expect(extra.statusCode).toBe(422);
    expect(extra.json()).toEqual({
      error: 'ValidationError',
      message: expect.stringMatching(/^Validation failed: /),
      statusCode: 422,
      details: [
        { field: 'body.email', message: 'is not an allowed field' },
        { field: 'body.creditBalance', message: 'is not an allowed field' },
      ],
    });

    const avatarMessage = 'avatar must be an http(s) URL or a base64 data URI of a PNG, JPEG, GIF or WEBP image';
    for (const avatar of ['data:image/svg+xml;base64,PHN2Zz4=', 'javascript:alert(1)', 'file:///etc/passwd']) {
      const bad = await put({ avatar });
      expect(bad.statusCode, avatar).toBe(422);
      expect(bad.json().details).toEqual([{ field: 'body.avatar', message: avatarMessage }]);
    }
    const huge = await put({ avatar: `data:image/png;base64,${'A'.repeat(140_000)}` });
    expect(huge.json().details).toEqual([{ field: 'body.avatar', message: 'avatar image must be at most 100 KB' }]);

    const blank = await put({ name: '   ' });
    expect(blank.statusCode).toBe(422);
    expect(blank.json().details.map((d: { field: string }) => d.field)).toEqual(['body.name']);

    // Nothing of the refused updates was stored.
    expect((await me(u.sessionToken)).json()).toEqual(u.account);
  });

  it('serves generated initials (escaped), an uploaded image, a redirect to a URL, and initials again on null', async () => {
    const u = await createUser(h.app, { name: 'Ada Lovelace' });
    const url = `/api/v1/accounts/${u.account.id}/avatar`;
    const initials = await call(h.app, 'GET', url, { token: await u.pat(['llm-all']) });
    expect(initials.statusCode).toBe(200);
    expect(initials.headers['content-type']).toBe('image/svg+xml');
    expect(initials.headers['x-content-type-options']).toBe('nosniff');
    expect(initials.headers['content-security-policy']).toBe("default-src 'none'; style-src 'unsafe-inline'; sandbox");
    expect(initials.body).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(initials.body).toContain('>AL</text></svg>');

    const put = (avatar: string | null) =>
      call(h.app, 'PUT', '/api/v1/accounts/me', { token: u.sessionToken, body: { avatar } });
    const uploaded = await put(PNG_1PX);
    // The account shows where to fetch the image, never the data URI itself.
    expect(uploaded.json().avatar).toBe(`http://localhost:8080${url}`);
    const png = await call(h.app, 'GET', url, { token: u.sessionToken });
    expect(png.statusCode).toBe(200);
    expect(png.headers['content-type']).toBe('image/png');
    expect(png.rawPayload.equals(Buffer.from(PNG_BASE64, 'base64'))).toBe(true);

    expect((await put('https://cdn.example/a.png')).json().avatar).toBe('https://cdn.example/a.png');
    const redirect = await call(h.app, 'GET', url, { token: u.sessionToken });
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toBe('https://cdn.example/a.png');

    expect((await put(null)).json().avatar).toBe(`http://localhost:8080${url}`);
    const again = await call(h.app, 'GET', url, { token: u.sessionToken });
    expect(again.headers['content-type']).toBe('image/svg+xml');
    expect(again.body).toContain('>AL</text>');
  });

  it('escapes markup in the initials and copes with one-word names', async () => {
    const svg = async (name: string) => {
      const u = await createUser(h.app, { name });
      return (await call(h.app, 'GET', `/api/v1/accounts/${u.account.id}/avatar`, { token: u.sessionToken })).body;
    };
    const evil = await svg('<script>alert(1)</script> "x');
    expect(evil).not.toContain('<script');
    expect(evil).toContain('>&lt;&quot;</text>');
    expect(await svg('plato')).toContain('>P</text>');
  });

  it('DELETE removes the account and every row it owns; its tokens stop working; others are untouched', async () => {
    const u = await createUser(h.app);
    const bystander = await createUser(h.app);
    const pat = await u.pat(['account']);
    await call(h.app, 'POST', '/api/v1/auth/authenticate', { body: { email: u.account.email, password: u.password } });
    const db = h.database.db;
    const rowsOf = async (accountId: string) => {
      const out: Record<string, number> = {};
      for (const { name, table, column } of OWNED_TABLES) {
        const [row] = await db.select({ n: count() }).from(table).where(eq(column, accountId));
        out[name] = Number(row?.n ?? 0);
      }
      return out;
    };
    expect(OWNED_TABLES.map((t) => t.name)).toEqual(
      expect.arrayContaining(['sessions', 'personalAccessTokens', 'creditTransactions']),
    );
    const before = await rowsOf(u.account.id);
    expect(before).toMatchObject({ sessions: 2, personalAccessTokens: 1, creditTransactions: 1 });
    const bystanderBefore = await rowsOf(bystander.account.id);

    const res = await call(h.app, 'DELETE', `/api/v1/accounts/${u.account.id}`, { token: u.sessionToken });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');

    expect(await db.select().from(schema.accounts).where(eq(schema.accounts.id, u.account.id))).toEqual([]);
    expect(Object.values(await rowsOf(u.account.id)).every((n) => n === 0)).toBe(true);
    expect(await rowsOf(bystander.account.id)).toEqual(bystanderBefore);

    for (const token of [pat, u.sessionToken]) {
      const after = await me(token);
      expect(after.statusCode).toBe(401);
      expect(after.json().error).toBe('UnauthorizedError');
    }
    expect((await me(bystander.sessionToken)).statusCode).toBe(200);
    // The e-mail is free again.
    const again = await call(h.app, 'POST', '/api/v1/auth/signup', {
      body: { email: u.account.email, password: 'a new password', name: 'Again' },
    });
    expect(again.statusCode).toBe(201);
    expect(again.json().account.id).not.toBe(u.account.id);
  });
});
