import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { SCOPES } from '../../access/scopes.ts';
import { resolveBearer } from '../../access/tokens.ts';
import { buildApp } from '../../app.ts';
import type { Actor } from '../../context.ts';
import { rowsOf } from '../../db/rows.ts';
import { accounts, creditTransactions, personalAccessTokens, sessions } from '../../db/schema/index.ts';
import { sha256Hex } from '../../lib/ids.ts';
import { createPat } from './service.ts';

const DAY = 24 * 3600;
const TOKEN = (prefix: string) => new RegExp(`^${prefix}_[A-Za-z0-9_-]{43}$`);

/** Every column of the raw row, as text: what someone reading the database would see. */
async function rawRow(h: TestHarness, table: 'sessions' | 'personal_access_tokens' | 'accounts', id: string) {
  const res = await h.database.db.execute(sql`SELECT * FROM ${sql.identifier(table)} WHERE id = ${id}`);
  const [row] = rowsOf(res);
  if (!row) throw new Error(`no ${table} row ${id}`);
  return row;
}

/** `before + seconds <= at <= after + seconds`, for a timestamp set from "now" during a call. */
function expectAbout(at: string | Date, before: number, after: number, seconds: number): void {
  const t = new Date(at).getTime();
  expect(t).toBeGreaterThanOrEqual(before + seconds * 1000 - 1000);
  expect(t).toBeLessThanOrEqual(after + seconds * 1000 + 1000);
}

describe('sign-up, sign-in, sessions and personal access tokens', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());
  const db = () => h.database.db;
  const me = (token: string) => call(h.app, 'GET', '/api/v1/accounts/me', { token });
  const mint = (u: TestUser, body: Record<string, unknown>) =>
    call(h.app, 'POST', '/api/v1/auth/pat', { token: u.sessionToken, body: { name: 'token', ...body } });

  guardTests(
    () => h,
    [
      { method: 'POST', url: '/api/v1/auth/logout', scopes: [], sessionOnly: true },
      {
        method: 'POST',
        url: '/api/v1/auth/pat',
        scopes: [],
        sessionOnly: true,
        body: { name: 't', scopes: ['account'] },
      },
      { method: 'GET', url: '/api/v1/auth/pats', scopes: [], sessionOnly: true },
      {
        method: 'DELETE',
        url: '/api/v1/auth/pats/tok_x',
        scopes: [],
        sessionOnly: true,
        ownedUrl: async (owner) => `/api/v1/auth/pats/${(await mint(owner, { scopes: ['account'] })).json().id}`,
      },
      { method: 'GET', url: '/api/v1/auth-scopes', scopes: [] },
    ],
  );

  describe('sign-up', () => {
    it('answers 201 with a session and an account of 100,000 credits, recorded as one grant', async () => {
      // An app at production's password cost (the harness hashes at the test-only least one; src/config.ts).
      const app = await h.extraApp({ INSECURE_TEST_PASSWORD_HASHING: 'false' });
      const email = `New.User-${Date.now()}@Example.test`;
      const before = Date.now();
      const res = await call(app, 'POST', '/api/v1/auth/signup', {
        body: { email, password: 'correct horse', name: ' New User ' },
      });
      const after = Date.now();
      expect(res.statusCode).toBe(201);
      const body = res.json();
      expect(body).toEqual({
        session_token: expect.stringMatching(TOKEN('sess')),
        token_type: 'Bearer',
        expires_in: 604800,
        account: {
          id: expect.stringMatching(/^acc_/),
          name: 'New User',
          email,
          avatar: `http://localhost:8080/api/v1/accounts/${body.account.id}/avatar`,
          creditBalance: 100000,
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      });
      expect(Buffer.from(body.session_token.slice(5), 'base64url')).toHaveLength(32);

      const ledger = await db()
        .select()
        .from(creditTransactions)
        .where(eq(creditTransactions.accountId, body.account.id));
      expect(ledger).toEqual([
        expect.objectContaining({
          type: 'grant',
          amount: 100000,
          balanceAfter: 100000,
          description: 'Welcome credits',
        }),
      ]);
      const [account] = await db().select().from(accounts).where(eq(accounts.id, body.account.id));
      expect(account?.creditBalance).toBe(100000);

      // Stored: the password as argon2id, the session as a SHA-256 hash; neither in clear anywhere in the row.
      const rawAccount = await rawRow(h, 'accounts', body.account.id);
      expect(rawAccount.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
      expect(JSON.stringify(rawAccount)).not.toContain('correct horse');
      const [session] = await db().select().from(sessions).where(eq(sessions.accountId, body.account.id));
      const rawSession = await rawRow(h, 'sessions', session?.id ?? '');
      expect(rawSession.token_hash).toBe(sha256Hex(body.session_token));
      expect(JSON.stringify(rawSession)).not.toContain(body.session_token.slice(5));
      expectAbout(session?.expiresAt ?? '', before, after, 604800);

      expect((await me(body.session_token)).json()).toEqual(body.account);
    });

    it('refuses a second account with the same e-mail in another case (409), changing nothing', async () => {
      const u = await createUser(h.app);
      const res = await call(h.app, 'POST', '/api/v1/auth/signup', {
        body: { email: u.account.email.toUpperCase(), password: 'another password', name: 'Dup' },
      });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({
        error: 'ConflictError',
        message: 'An account with this e-mail already exists',
        statusCode: 409,
      });
      const same = await db()
        .select()
        .from(accounts)
        .where(sql`lower(${accounts.email}) = ${u.account.email.toLowerCase()}`);
      expect(same.map((a) => a.id)).toEqual([u.account.id]);
      // The refused sign-up left no grant behind (its transaction rolled back).
      const grants = await db().select().from(creditTransactions).where(eq(creditTransactions.accountId, u.account.id));
      expect(grants).toHaveLength(1);
    });

    it('validates the fields with a details array naming each', async () => {
      const res = await call(h.app, 'POST', '/api/v1/auth/signup', {
        body: { email: 'not-an-email', password: 'short' },
      });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ error: 'ValidationError', statusCode: 422 });
      expect(res.json().details).toEqual(
        expect.arrayContaining([
          { field: 'body.email', message: expect.any(String) },
          { field: 'body.password', message: 'password must be at least 8 characters' },
          { field: 'body.name', message: expect.any(String) },
        ]),
      );
      expect(res.json().details).toHaveLength(3);
    });
  });

  describe('sign-in and sessions', () => {
    it('authenticates with the e-mail in any case and answers a new session', async () => {
      const u = await createUser(h.app);
      const res = await call(h.app, 'POST', '/api/v1/auth/authenticate', {
        body: { email: u.account.email.toUpperCase(), password: u.password },
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        session_token: expect.stringMatching(TOKEN('sess')),
        token_type: 'Bearer',
        expires_in: 604800,
        account: u.account,
      });
      expect(res.json().session_token).not.toBe(u.sessionToken);
      expect((await me(res.json().session_token)).statusCode).toBe(200);
      expect((await me(u.sessionToken)).statusCode).toBe(200);
    });

    it('answers the same 401 for a wrong e-mail and a wrong password', async () => {
      const u = await createUser(h.app);
      const attempt = (email: string, password: string) =>
        call(h.app, 'POST', '/api/v1/auth/authenticate', { body: { email, password } });
      const expected = { error: 'UnauthorizedError', message: 'Invalid e-mail or password', statusCode: 401 };
      for (const res of [
        await attempt(u.account.email, 'not-the-password'),
        await attempt(`nobody-${Date.now()}@example.test`, u.password),
        await attempt(u.account.email, u.password.toUpperCase()),
      ]) {
        expect(res.statusCode).toBe(401);
        expect(res.json()).toEqual(expected);
      }
      const missing = await call(h.app, 'POST', '/api/v1/auth/authenticate', { body: { email: u.account.email } });
      expect(missing.statusCode).toBe(422);
      expect(missing.json().details).toEqual([{ field: 'body.password', message: expect.any(String) }]);
    });

    it('logout ends the calling session at once, and only that one', async () => {
      const u = await createUser(h.app);
      const second = (
        await call(h.app, 'POST', '/api/v1/auth/authenticate', {
          body: { email: u.account.email, password: u.password },
        })
      ).json().session_token;
      const res = await call(h.app, 'POST', '/api/v1/auth/logout', { token: u.sessionToken });
      expect(res.statusCode).toBe(204);
      expect(res.body).toBe('');
      expect((await me(u.sessionToken)).json()).toEqual({
        error: 'UnauthorizedError',
        message: 'Invalid session token',
        statusCode: 401,
      });
      expect((await me(second)).statusCode).toBe(200);
      const left = await db().select().from(sessions).where(eq(sessions.accountId, u.account.id));
      expect(left.map((s) => s.tokenHash)).toEqual([sha256Hex(second)]);
    });

    it('a session lives SESSION_TTL_SECONDS, then answers 401 TokenExpiredError', async () => {
      const shortLived = await h.extraApp({ SESSION_TTL_SECONDS: '60' });
      const email = `ttl-${Date.now()}@example.test`;
      const before = Date.now();
      const res = await call(shortLived, 'POST', '/api/v1/auth/signup', {
        body: { email, password: 'a long password', name: 'TTL' },
      });
      const after = Date.now();
      const { session_token: token, expires_in: expiresIn } = res.json();
      expect(expiresIn).toBe(60);
      const [row] = await db()
        .select()
        .from(sessions)
        .where(eq(sessions.tokenHash, sha256Hex(token)));
      expectAbout(row?.expiresAt ?? '', before, after, 60);
      expect((await me(token)).statusCode).toBe(200);

      // Sixty seconds later, as far as the row is concerned.
      await db()
        .update(sessions)
        .set({ expiresAt: new Date(Date.now() - 1000) })
        .where(eq(sessions.tokenHash, sha256Hex(token)));
      const expired = await me(token);
      expect(expired.statusCode).toBe(401);
      expect(expired.json()).toEqual({
        error: 'TokenExpiredError',
        message: 'Session expired; sign in again',
        statusCode: 401,
      });
    });
  });

  describe('personal access tokens', () => {
    it('creates a token once: pat_ + 32 random bytes, only its SHA-256 stored, permissions kept', async () => {
      const u = await createUser(h.app);
      const before = Date.now();
      const res = await mint(u, {
        name: 'ci',
        scopes: ['account', 'connections', 'account'],
        expires_in: 3600,
        provider_permissions: { github: 'read', slack: 'read-write' },
        default_provider_permission: 'read',
      });
      const after = Date.now();
      expect(res.statusCode).toBe(201);
      const pat = res.json();
      const token: string = pat.personal_access_token;
      expect(pat).toEqual({
        id: expect.stringMatching(/^tok_[A-Za-z0-9_-]{22}$/),
        name: 'ci',
        token_prefix: token.slice(0, 10),
        scopes: ['connections', 'account'],
        provider_permissions: { github: 'read', slack: 'read-write' },
        default_provider_permission: 'read',
        knowledge_base_ids: null,
        expires_at: expect.any(String),
        last_used_at: null,
        created_at: expect.any(String),
        personal_access_token: expect.stringMatching(TOKEN('pat')),
      });
      expect(Buffer.from(token.slice(4), 'base64url')).toHaveLength(32);
      expectAbout(pat.expires_at, before, after, 3600);
      expect(token).not.toBe((await mint(u, { scopes: ['account'] })).json().personal_access_token);

      const raw = await rawRow(h, 'personal_access_tokens', pat.id);
      expect(raw.token_hash).toBe(sha256Hex(token));
      expect(JSON.stringify(raw)).not.toContain(token.slice(10));
      expect(raw.provider_permissions).toEqual({ github: 'read', slack: 'read-write' });
      expect(raw.default_provider_permission).toBe('read');

      // What the guard makes of the token: its scopes and permissions, nothing more.
      const actor = await resolveBearer(db(), token);
      expect(actor).toMatchObject({
        kind: 'pat',
        accountId: u.account.id,
        tokenId: pat.id,
        providerPermissions: { github: 'read', slack: 'read-write' },
        defaultProviderPermission: 'read',
      });
      expect([...actor.scopes].sort()).toEqual(['account', 'connections']);
    });

    it('defaults the lifetime to PAT_DEFAULT_EXPIRES_IN and refuses more than PAT_MAX_EXPIRES_IN', async () => {
      const u = await createUser(h.app);
      const before = Date.now();
      const plain = await mint(u, { scopes: ['account'] });
      expectAbout(plain.json().expires_at, before, Date.now(), 90 * DAY);
      expect(plain.json()).toMatchObject({ provider_permissions: {}, default_provider_permission: 'read-write' });

      expect((await mint(u, { scopes: ['account'], expires_in: 365 * DAY })).statusCode).toBe(201);
      const tooLong = await mint(u, { scopes: ['account'], expires_in: 365 * DAY + 1 });
      expect(tooLong.statusCode).toBe(422);
      expect(tooLong.json()).toEqual({
        error: 'ValidationError',
        message: 'Validation failed',
        statusCode: 422,
        details: [{ field: 'body.expires_in', message: 'must be at most 31536000 seconds' }],
      });
      for (const expires_in of [0, -5, 1.5, '60']) {
        const bad = await mint(u, { scopes: ['account'], expires_in });
        expect(bad.statusCode, String(expires_in)).toBe(422);
        expect(bad.json().details.map((d: { field: string }) => d.field)).toEqual(['body.expires_in']);
      }
    });

    it('refuses unknown scopes, no scopes and bad permissions with 422', async () => {
      const u = await createUser(h.app);
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{ scopes: ['root'] }, ['body.scopes.0']],
        [{ scopes: [] }, ['body.scopes']],
        [{ scopes: ['account'], provider_permissions: { github: 'write' } }, ['body.provider_permissions.github']],
        [{ scopes: ['account'], default_provider_permission: 'admin' }, ['body.default_provider_permission']],
        [{ scopes: ['account'], expiresIn: 60 }, ['body.expiresIn']],
      ];
      for (const [body, fields] of cases) {
        const res = await mint(u, body);
        expect(res.statusCode, JSON.stringify(body)).toBe(422);
        expect(res.json().details.map((d: { field: string }) => d.field)).toEqual(fields);
      }
    });

    it('refuses provider_permissions for unknown provider ids with 422 naming each', async () => {
      const u = await createUser(h.app);
      const res = await mint(u, {
        scopes: ['account'],
        provider_permissions: { github: 'read', githb: 'read', 'no-such-provider': 'read-write' },
      });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toEqual({
        error: 'ValidationError',
        message: 'Unknown provider ids in provider_permissions: githb, no-such-provider',
        statusCode: 422,
        details: [
          {
            field: 'body.provider_permissions.githb',
            message: 'unknown provider id "githb" (see GET /api/v1/providers)',
          },
          {
            field: 'body.provider_permissions.no-such-provider',
            message: 'unknown provider id "no-such-provider" (see GET /api/v1/providers)',
          },
        ],
      });
      expect(
        await db().select().from(personalAccessTokens).where(eq(personalAccessTokens.accountId, u.account.id)),
      ).toEqual([]);
      expect((await mint(u, { scopes: ['account'], provider_permissions: { github: 'read' } })).statusCode).toBe(201);
    });

    it('cannot grant scopes the caller does not hold', async () => {
      const u = await createUser(h.app);
      const narrow = { ...u.ctx, scopes: new Set(['account', 'connections'] as const) };
      await expect(
        createPat(narrow, { name: 'wide', scopes: ['account', 'llm-all', 'agents-all'] }),
      ).rejects.toMatchObject({
        name: 'ForbiddenError',
        statusCode: 403,
        message: 'Cannot grant scopes you do not hold: llm-all, agents-all',
      });
      const ok = await createPat(narrow, { name: 'narrow', scopes: ['connections'] });
      expect(ok.scopes).toEqual(['connections']);
      const [row] = await db()
        .select()
        .from(personalAccessTokens)
        .where(and(eq(personalAccessTokens.accountId, u.account.id), eq(personalAccessTokens.name, 'wide')));
      expect(row).toBeUndefined();
    });

    it('only a session mints tokens: an OAuth access token gets 403 too', async () => {
      const u = await createUser(h.app);
      const oauthActor: Actor = {
        kind: 'oauth',
        accountId: u.account.id,
        tokenId: 'grant_test',
        scopes: new Set(Object.keys(SCOPES) as Array<keyof typeof SCOPES>),
        providerPermissions: {},
        defaultProviderPermission: 'read-write',
        clientId: 'client_test',
        creditBalance: 100000,
      };
      const app = await buildApp({
        config: h.config,
        database: h.database,
        keyRing: h.keyRing,
        verifiers: [async (t) => (t === 'oauth-access-token' ? oauthActor : undefined)],
      });
      try {
        expect((await call(app, 'GET', '/api/v1/accounts/me', { token: 'oauth-access-token' })).statusCode).toBe(200);
        for (const url of ['/api/v1/auth/pat', '/api/v1/auth/logout']) {
          const res = await call(app, 'POST', url, {
            token: 'oauth-access-token',
            body: { name: 'x', scopes: ['account'] },
          });
          expect(res.statusCode, url).toBe(403);
          expect(res.json()).toEqual({
            error: 'ForbiddenError',
            message: 'This endpoint requires a session token (sign in), not an access token',
            statusCode: 403,
          });
        }
      } finally {
        await app.close();
      }
      const pats = await db()
        .select()
        .from(personalAccessTokens)
        .where(eq(personalAccessTokens.accountId, u.account.id));
      expect(pats).toEqual([]);
    });

    it('an expired PAT answers 401 TokenExpiredError', async () => {
      const u = await createUser(h.app);
      const { id, personal_access_token: token } = (await mint(u, { scopes: ['account'], expires_in: 60 })).json();
      expect((await me(token)).statusCode).toBe(200);
      await db()
        .update(personalAccessTokens)
        .set({ expiresAt: new Date(Date.now() - 1) })
        .where(eq(personalAccessTokens.id, id));
      const expired = await me(token);
      expect(expired.statusCode).toBe(401);
      expect(expired.json()).toEqual({
        error: 'TokenExpiredError',
        message: 'Personal access token expired',
        statusCode: 401,
      });
    });

    it('lists only the account’s live tokens, never the token itself', async () => {
      const u = await createUser(h.app);
      const other = await createUser(h.app);
      await other.pat(['account']);
      const created = (await mint(u, { name: 'listed', scopes: ['llm-all'], expires_in: 600 })).json();
      const revoked = (await mint(u, { name: 'revoked', scopes: ['account'] })).json();
      await call(h.app, 'DELETE', `/api/v1/auth/pats/${revoked.id}`, { token: u.sessionToken });

      const list = await call(h.app, 'GET', '/api/v1/auth/pats', { token: u.sessionToken });
      expect(list.statusCode).toBe(200);
      const { personal_access_token: token, ...metadata } = created;
      expect(list.json()).toEqual({ data: [metadata], pagination: { page: 1, limit: 20, total: 1, hasMore: false } });
      expect(list.body).not.toContain(token.slice(10));
    });

    it('revoking answers 204, the token then 401s, and a second revoke is 404', async () => {
      const u = await createUser(h.app);
      const { id, personal_access_token: token } = (await mint(u, { scopes: ['account'] })).json();
      expect((await me(token)).statusCode).toBe(200);
      const res = await call(h.app, 'DELETE', `/api/v1/auth/pats/${id}`, { token: u.sessionToken });
      expect(res.statusCode).toBe(204);
      expect(res.body).toBe('');
      expect((await me(token)).json()).toEqual({
        error: 'UnauthorizedError',
        message: 'Invalid or revoked personal access token',
        statusCode: 401,
      });
      const [row] = await db().select().from(personalAccessTokens).where(eq(personalAccessTokens.id, id));
      expect(row?.revokedAt).toBeInstanceOf(Date);
      const again = await call(h.app, 'DELETE', `/api/v1/auth/pats/${id}`, { token: u.sessionToken });
      expect(again.json()).toEqual({
        error: 'NotFoundError',
        message: `Personal access token ${id} not found`,
        statusCode: 404,
      });
    });

    it('pages the list: page, limit, total, hasMore, sortOrder; bad parameters are 422 naming the field', async () => {
      const u = await createUser(h.app);
      const ids: string[] = [];
      for (const name of ['first', 'second', 'third'])
        ids.push((await mint(u, { name, scopes: ['account'] })).json().id);
      const list = async (q: string) => {
        const res = await call(h.app, 'GET', `/api/v1/auth/pats?${q}`, { token: u.sessionToken });
        expect(res.statusCode, `${q}: ${res.body}`).toBe(200);
        return res.json() as { data: Array<{ id: string }>; pagination: unknown };
      };
      const newestFirst = [...ids].reverse();

      const all = await list('');
      expect(all.data.map((p) => p.id)).toEqual(newestFirst);
      expect((await list('sortBy=createdAt&sortOrder=asc')).data.map((p) => p.id)).toEqual(ids);

      const page1 = await list('limit=2');
      expect(page1.pagination).toEqual({ page: 1, limit: 2, total: 3, hasMore: true });
      expect(page1.data.map((p) => p.id)).toEqual(newestFirst.slice(0, 2));
      const page2 = await list('page=2&limit=2');
      expect(page2.pagination).toEqual({ page: 2, limit: 2, total: 3, hasMore: false });
      expect(page2.data.map((p) => p.id)).toEqual(newestFirst.slice(2));
      expect(await list('page=3&limit=2')).toEqual({
        data: [],
        pagination: { page: 3, limit: 2, total: 3, hasMore: false },
      });
      expect((await list('limit=100')).pagination).toEqual({ page: 1, limit: 100, total: 3, hasMore: false });
      expect((await list('limit=3')).pagination).toEqual({ page: 1, limit: 3, total: 3, hasMore: false });

      const bad: Array<[string, string]> = [
        ['limit=101', 'query.limit'],
        ['limit=0', 'query.limit'],
        ['limit=-1', 'query.limit'],
        ['limit=ten', 'query.limit'],
        ['page=0', 'query.page'],
        ['page=1.5', 'query.page'],
        ['sortBy=name', 'query.sortBy'],
        ['sortBy=tokenHash', 'query.sortBy'],
        ['sortOrder=up', 'query.sortOrder'],
      ];
      for (const [q, field] of bad) {
        const res = await call(h.app, 'GET', `/api/v1/auth/pats?${q}`, { token: u.sessionToken });
        expect(res.statusCode, q).toBe(422);
        expect(res.json()).toMatchObject({ error: 'ValidationError', statusCode: 422 });
        expect(
          res.json().details.map((d: { field: string }) => d.field),
          q,
        ).toEqual([field]);
      }
    });
  });

  it('GET /auth-scopes lists the §5 scopes with descriptions', async () => {
    const u = await createUser(h.app);
    const res = await call(h.app, 'GET', '/api/v1/auth-scopes', { token: await u.pat(['llm-all']) });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.map((s: { name: string }) => s.name)).toEqual([
      'universal-mcp-read',
      'universal-mcp-read-write',
      'llm-all',
      'agents-use',
      'agents-all',
      'connections',
      'account',
      'messaging-channels',
      'openid',
      'profile',
      'email',
    ]);
    expect(res.json().data).toEqual(Object.entries(SCOPES).map(([name, description]) => ({ name, description })));
  });
});
