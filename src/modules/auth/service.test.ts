import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import { creditTransactions, personalAccessTokens, sessions } from '../../db/schema/index.ts';
import { sha256Hex } from '../../lib/ids.ts';

describe('sign-up, sign-in and personal access tokens', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());
  const db = () => h.database.db;

  guardTests(
    () => h,
    [
      { method: 'POST', url: '/api/v1/auth/logout', scopes: [] },
      { method: 'POST', url: '/api/v1/auth/pat', scopes: [], body: { name: 't', scopes: ['account'] } },
      { method: 'GET', url: '/api/v1/auth/pats', scopes: ['account'] },
      {
        method: 'DELETE',
        url: '/api/v1/auth/pats/tok_x',
        scopes: ['account'],
        otherAccountUrl: async (o) => {
          const res = await call(h.app, 'POST', '/api/v1/auth/pat', {
            token: o.sessionToken,
            body: { name: 'theirs', scopes: ['account'] },
          });
          return `/api/v1/auth/pats/${res.json().id}`;
        },
      },
      { method: 'GET', url: '/api/v1/auth-scopes', scopes: [] },
    ],
  );

  it('signs up with 100,000 credits recorded as a grant, then signs in', async () => {
    const email = `new-${Date.now()}@example.test`;
    const res = await call(h.app, 'POST', '/api/v1/auth/signup', {
      body: { email, password: 'correct horse', name: 'New User' },
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      token_type: 'Bearer',
      expires_in: 604800,
      account: { email, name: 'New User', creditBalance: 100000 },
    });
    expect(body.session_token).toMatch(/^sess_[A-Za-z0-9_-]{43}$/);
    const grants = await db()
      .select()
      .from(creditTransactions)
      .where(eq(creditTransactions.accountId, body.account.id));
    expect(grants).toHaveLength(1);
    expect(grants[0]).toMatchObject({ type: 'grant', amount: 100000, balanceAfter: 100000 });
    const stored = await db().select().from(sessions).where(eq(sessions.accountId, body.account.id));
    expect(stored[0]?.tokenHash).toBe(sha256Hex(body.session_token));

    const signin = await call(h.app, 'POST', '/api/v1/auth/authenticate', {
      body: { email: email.toUpperCase(), password: 'correct horse' },
    });
    expect(signin.statusCode).toBe(200);
    expect(signin.json()).toMatchObject({ token_type: 'Bearer', account: { id: body.account.id } });
  });

  it('refuses a second account with the same e-mail in another case (409)', async () => {
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
  });

  it('answers the same 401 for a wrong e-mail and a wrong password', async () => {
    const u = await createUser(h.app);
    const wrongPassword = await call(h.app, 'POST', '/api/v1/auth/authenticate', {
      body: { email: u.account.email, password: 'not-the-password' },
    });
    const wrongEmail = await call(h.app, 'POST', '/api/v1/auth/authenticate', {
      body: { email: `nobody-${Date.now()}@example.test`, password: u.password },
    });
    const expected = { error: 'UnauthorizedError', message: 'Invalid e-mail or password', statusCode: 401 };
    expect([wrongPassword.statusCode, wrongEmail.statusCode]).toEqual([401, 401]);
    expect(wrongPassword.json()).toEqual(expected);
    expect(wrongEmail.json()).toEqual(expected);
  });

  it('validates sign-up fields with a details array', async () => {
    const res = await call(h.app, 'POST', '/api/v1/auth/signup', {
      body: { email: 'not-an-email', password: 'short' },
    });
    expect(res.statusCode).toBe(422);
    const fields = res
      .json()
      .details.map((d: { field: string }) => d.field)
      .sort();
    expect(fields).toEqual(['body.email', 'body.name', 'body.password']);
  });

  it('logout ends the session at once', async () => {
    const u = await createUser(h.app);
    expect((await call(h.app, 'POST', '/api/v1/auth/logout', { token: u.sessionToken })).statusCode).toBe(204);
    const after = await call(h.app, 'GET', '/api/v1/accounts/me', { token: u.sessionToken });
    expect(after.statusCode).toBe(401);
  });

  it('an expired session answers 401 TokenExpiredError', async () => {
    const u = await createUser(h.app);
    await db()
      .update(sessions)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(sessions.tokenHash, sha256Hex(u.sessionToken)));
    const res = await call(h.app, 'GET', '/api/v1/accounts/me', { token: u.sessionToken });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({
      error: 'TokenExpiredError',
      message: 'Session expired; sign in again',
      statusCode: 401,
    });
  });

  it('creates a PAT once, stores only its hash, and lists it without the token', async () => {
    const u = await createUser(h.app);
    const res = await call(h.app, 'POST', '/api/v1/auth/pat', {
      token: u.sessionToken,
      body: {
        name: 'ci',
        scopes: ['account', 'connections'],
        expires_in: 3600,
        provider_permissions: { github: 'read', slack: 'read-write' },
        default_provider_permission: 'read',
      },
    });
    expect(res.statusCode).toBe(201);
    const pat = res.json();
    expect(pat.personal_access_token).toMatch(/^pat_[A-Za-z0-9_-]{43}$/);
    expect(pat).toMatchObject({
      name: 'ci',
      scopes: ['connections', 'account'],
      provider_permissions: { github: 'read', slack: 'read-write' },
      default_provider_permission: 'read',
      last_used_at: null,
    });
    expect(Date.parse(pat.expires_at) - Date.now()).toBeGreaterThan(3500_000);
    const [row] = await db().select().from(personalAccessTokens).where(eq(personalAccessTokens.id, pat.id));
    expect(row?.tokenHash).toBe(sha256Hex(pat.personal_access_token));
    expect(JSON.stringify(row)).not.toContain(pat.personal_access_token);

    const list = await call(h.app, 'GET', '/api/v1/auth/pats', { token: pat.personal_access_token });
    expect(list.statusCode).toBe(200);
    expect(list.json().pagination).toEqual({ page: 1, limit: 20, total: 1, hasMore: false });
    expect(list.body).not.toContain(pat.personal_access_token);
    expect(list.json().data[0]).toMatchObject({ id: pat.id, token_prefix: pat.personal_access_token.slice(0, 10) });
  });

  it('only a session may mint PATs; scopes and lifetime are bounded', async () => {
    const u = await createUser(h.app);
    const pat = await u.pat(['account']);
    const byPat = await call(h.app, 'POST', '/api/v1/auth/pat', {
      token: pat,
      body: { name: 'x', scopes: ['account'] },
    });
    expect(byPat.statusCode).toBe(403);
    expect(byPat.json().error).toBe('ForbiddenError');
    const tooLong = await call(h.app, 'POST', '/api/v1/auth/pat', {
      token: u.sessionToken,
      body: { name: 'x', scopes: ['account'], expires_in: 10 * 365 * 24 * 3600 },
    });
    expect(tooLong.statusCode).toBe(422);
    expect(tooLong.json().details).toEqual([{ field: 'body.expires_in', message: 'must be at most 31536000 seconds' }]);
    const unknownScope = await call(h.app, 'POST', '/api/v1/auth/pat', {
      token: u.sessionToken,
      body: { name: 'x', scopes: ['root'] },
    });
    expect(unknownScope.statusCode).toBe(422);
  });

  it('an expired PAT is TokenExpiredError; a revoked one is 401 and gone from the list', async () => {
    const u = await createUser(h.app);
    const created = await call(h.app, 'POST', '/api/v1/auth/pat', {
      token: u.sessionToken,
      body: { name: 'short', scopes: ['account'] },
    });
    const { id, personal_access_token: token } = created.json();
    await db()
      .update(personalAccessTokens)
      .set({ expiresAt: new Date(Date.now() - 1) })
      .where(eq(personalAccessTokens.id, id));
    const expired = await call(h.app, 'GET', '/api/v1/accounts/me', { token });
    expect(expired.json()).toEqual({
      error: 'TokenExpiredError',
      message: 'Personal access token expired',
      statusCode: 401,
    });

    const other = await u.pat(['account']);
    const [row] = await db()
      .select()
      .from(personalAccessTokens)
      .where(eq(personalAccessTokens.tokenHash, sha256Hex(other)));
    expect((await call(h.app, 'DELETE', `/api/v1/auth/pats/${row?.id}`, { token: u.sessionToken })).statusCode).toBe(
      204,
    );
    expect((await call(h.app, 'GET', '/api/v1/accounts/me', { token: other })).statusCode).toBe(401);
    expect((await call(h.app, 'DELETE', `/api/v1/auth/pats/${row?.id}`, { token: u.sessionToken })).statusCode).toBe(
      404,
    );
  });

  it('lists the scopes with descriptions', async () => {
    const u = await createUser(h.app);
    const res = await call(h.app, 'GET', '/api/v1/auth-scopes', { token: await u.pat(['llm-all']) });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toHaveLength(11);
    expect(res.json().data[0]).toEqual({
      name: 'universal-mcp-read',
      description: 'Discover the MCP tools (initialize, tools/list)',
    });
  });

  it('pages the PAT list and checks limit and sortBy', async () => {
    const u = await createUser(h.app);
    for (let i = 0; i < 3; i++) await u.pat(['account']);
    const page2 = await call(h.app, 'GET', '/api/v1/auth/pats?page=2&limit=2', { token: u.sessionToken });
    expect(page2.json().pagination).toEqual({ page: 2, limit: 2, total: 3, hasMore: false });
    expect(page2.json().data).toHaveLength(1);
    const page1 = await call(h.app, 'GET', '/api/v1/auth/pats?limit=2', { token: u.sessionToken });
    expect(page1.json().pagination.hasMore).toBe(true);
    for (const q of ['limit=101', 'limit=0', 'page=0', 'sortBy=name', 'sortOrder=up']) {
      const bad = await call(h.app, 'GET', `/api/v1/auth/pats?${q}`, { token: u.sessionToken });
      expect(bad.statusCode, q).toBe(422);
      expect(bad.json().error).toBe('ValidationError');
    }
  });
});
