import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type FakeOAuthProvider,
  fakeProvidersEnv,
  startFakeOAuthProvider,
} from '../../../test/fakes/oauth-provider.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import { rowsOf } from '../../db/rows.ts';
import { connections, oauthStates, pendingConnections } from '../../db/schema/index.ts';
import { APP_REDIRECT, authorize, connectAcme, execute, openAuthorizationUrl } from './test-support.ts';

describe('connections', () => {
  let h: TestHarness;
  let fake: FakeOAuthProvider;
  beforeAll(async () => {
    fake = await startFakeOAuthProvider();
    h = await createHarness(fakeProvidersEnv(fake));
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  const rowOf = async (id: string) => (await h.database.db.select().from(connections).where(eq(connections.id, id)))[0];

  describe('the connect journey', () => {
    it('initiate -> provider -> callback -> an active connection', async () => {
      const u = await createUser(h.app);
      const init = await call(h.app, 'POST', '/api/v1/connections/initiate', {
        token: u.sessionToken,
        body: { providerId: 'acme', redirectUrl: APP_REDIRECT },
      });
      expect(init.statusCode).toBe(200);
      const body = init.json();
      expect(body.providerMetadata).toEqual({
        name: 'Acme',
        logoUrl: 'http://localhost:8080/providers/logos/acme.svg',
        description: 'A fake provider for the tests: items, a profile and OAuth with PKCE.',
      });
      // Ours first: opening it binds the flow to this browser, then redirects to the provider.
      const ours = new URL(body.authorizationUrl);
      expect(ours.origin + ours.pathname).toBe('http://localhost:8080/api/v1/connections/authorize');
      const opened = await h.app.inject({ method: 'GET', url: ours.pathname + ours.search });
      expect(opened.statusCode).toBe(302);
      const [binding] = opened.cookies as { name: string; path?: string; httpOnly?: boolean; sameSite?: string }[];
      expect(binding).toMatchObject({
        name: expect.stringMatching(/^sb_conn_[0-9a-f]{16}$/),
        path: '/api/v1/connections/callback',
        httpOnly: true,
        sameSite: 'Lax',
        maxAge: 600,
      });
      const authUrl = new URL(String(opened.headers.location));
      expect(authUrl.origin + authUrl.pathname).toBe(`${fake.url}/authorize`);
      expect(Object.fromEntries(authUrl.searchParams)).toMatchObject({
        response_type: 'code',
        client_id: fake.clientId,
        redirect_uri: 'http://localhost:8080/api/v1/connections/callback',
        scope: 'items.read items.write',
        code_challenge_method: 'S256',
      });
      expect(authUrl.searchParams.get('state')).toMatch(/^ost_/);
      expect(authUrl.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);

      const back = await authorize(h.app, u.sessionToken);
      expect(back.origin + back.pathname).toBe(APP_REDIRECT);
      const connectionId = back.searchParams.get('connectionId') ?? '';
      expect(connectionId).toMatch(/^conn_/);
      expect(fake.counts.token).toBe(1);

      const got = await call(h.app, 'GET', `/api/v1/connections/${connectionId}`, { token: u.sessionToken });
      expect(got.statusCode).toBe(200);
      expect(got.json()).toEqual({
        id: connectionId,
        accountId: u.account.id,
        providerId: 'acme',
        providerUserId: 'u-1001',
        scopes: ['items.read', 'items.write'],
        status: 'active',
        expiresAt: expect.any(String),
        canRefresh: true,
        authType: 'oauth',
        metadata: {
          displayName: 'Ada Lovelace',
          email: 'ada@acme.test',
          avatar: 'https://acme.test/ada.png',
          providerName: 'Acme',
          providerIcon: '/providers/logos/acme.svg',
        },
        lastError: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      const expiresIn = Date.parse(got.json().expiresAt) - Date.now();
      expect(expiresIn).toBeGreaterThan(3500_000);
      expect(expiresIn).toBeLessThanOrEqual(3600_000);
    });

    it('stores tokens sealed: the raw columns never hold the token, and a ciphertext moved to another row does not open', async () => {
      const u = await createUser(h.app);
      const id = await connectAcme(h.app, u);
      const res = await execute(h.app, u.sessionToken, id, 'whoami');
      expect(res.statusCode, res.body).toBe(200);
      const accessToken = fake.apiTokens.at(-1) ?? '';
      expect(accessToken).toMatch(/^acme_at_/);
      const raw = await h.database.db.execute(
        sql`SELECT row_to_json(c)::text AS doc FROM connections c WHERE id = ${id}`,
      );
      const doc = String(rowsOf<{ doc: string }>(raw)[0]?.doc);
      expect(doc).not.toContain(accessToken);
      expect(doc).not.toContain('acme_rt_');
      expect(doc).not.toContain('acme_at_');
      const row = await rowOf(id);
      expect(row?.accessTokenEnc).toMatch(/^v1\./);
      expect(h.keyRing.decrypt(row?.accessTokenEnc ?? '', id)).toBe(accessToken);
      expect(() => h.keyRing.decrypt(row?.accessTokenEnc ?? '', 'conn_other')).toThrow();
      // The state and its PKCE verifier: hashed and sealed, consumed once.
      const states = await h.database.db.select().from(oauthStates).where(eq(oauthStates.accountId, u.account.id));
      expect(states).toHaveLength(1);
      expect(states[0]?.stateHash).toMatch(/^[0-9a-f]{64}$/);
      expect(states[0]?.usedAt).toBeInstanceOf(Date);
    });

    it('a state is single use, bound to what was initiated, and unknown states are refused', async () => {
      const u = await createUser(h.app);
      const init = await call(h.app, 'POST', '/api/v1/connections/initiate', {
        token: u.sessionToken,
        body: { providerId: 'acme', redirectUrl: `${APP_REDIRECT}?tab=mine` },
      });
      const { providerUrl, cookie } = await openAuthorizationUrl(h.app, init.json().authorizationUrl);
      const approved = await fetch(providerUrl, { redirect: 'manual' });
      const cbUrl = new URL(approved.headers.get('location') ?? '');
      const first = await h.app.inject({ method: 'GET', url: cbUrl.pathname + cbUrl.search, headers: { cookie } });
      const back = new URL(String(first.headers.location));
      expect(back.searchParams.get('tab')).toBe('mine');
      expect(back.searchParams.get('connectionId')).toMatch(/^conn_/);

      const replay = await h.app.inject({ method: 'GET', url: cbUrl.pathname + cbUrl.search, headers: { cookie } });
      expect(replay.statusCode).toBe(302);
      const replayed = new URL(String(replay.headers.location));
      expect(replayed.searchParams.get('error')).toBe('invalid_request');
      expect(replayed.searchParams.get('error_description')).toMatch(/already completed/);
      expect(fake.counts.token).toBe(1);

      const unknown = await h.app.inject({ method: 'GET', url: '/api/v1/connections/callback?code=x&state=ost_nope' });
      expect(unknown.statusCode).toBe(400);
      expect(unknown.json()).toEqual({
        error: 'BadRequestError',
        message: 'Unknown authorization state; start again with POST /connections/initiate',
        statusCode: 400,
      });
      // A browser landing there (a stale or copied link) gets a page that says what to do, not JSON.
      for (const url of ['/api/v1/connections/callback?code=x&state=ost_nope', '/api/v1/connections/callback']) {
        const page = await h.app.inject({ method: 'GET', url, headers: { accept: 'text/html,*/*;q=0.8' } });
        expect(page.statusCode, url).toBe(400);
        expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
        expect(page.body).toContain('This connection link does not work');
        expect(page.body).toContain('<a href="/account/connections">your connections</a>');
      }
    });

    it('login CSRF: a callback from a browser other than the one that opened the authorizationUrl makes no connection', async () => {
      const attacker = await createUser(h.app);
      const init = await call(h.app, 'POST', '/api/v1/connections/initiate', {
        token: attacker.sessionToken,
        body: { providerId: 'acme', redirectUrl: APP_REDIRECT },
      });
      const { authorizationUrl } = init.json() as { authorizationUrl: string };
      // The attacker opens it (their browser gets the cookie) and forwards the provider's URL to the victim.
      const { providerUrl, cookie } = await openAuthorizationUrl(h.app, authorizationUrl);
      // Forwarding our URL instead does not work either: it opens once.
      const ours = new URL(authorizationUrl);
      const again = await h.app.inject({ method: 'GET', url: ours.pathname + ours.search });
      expect(again.statusCode).toBe(400);
      expect(again.json()).toEqual({
        error: 'BadRequestError',
        message:
          'This authorization URL was already opened in a browser; it works once. Start again with POST /connections/initiate',
        statusCode: 400,
      });
      // The victim approves at the provider; their browser (no cookie, or another flow's) brings the state back.
      const approved = await fetch(providerUrl, { redirect: 'manual' });
      const cbUrl = new URL(approved.headers.get('location') ?? '');
      const otherFlow = `${cookie.split('=')[0]?.slice(0, -4)}abcd=${'x'.repeat(43)}`;
      for (const headers of [{}, { cookie: otherFlow }]) {
        const res = await h.app.inject({ method: 'GET', url: cbUrl.pathname + cbUrl.search, headers });
        expect(res.statusCode).toBe(302);
        const back = new URL(String(res.headers.location));
        expect(back.origin + back.pathname).toBe(APP_REDIRECT);
        expect(Object.fromEntries(back.searchParams)).toEqual({
          error: Object.keys(headers).length ? 'invalid_request' : 'access_denied',
          error_description: Object.keys(headers).length
            ? 'This authorization was already completed; start again to reconnect'
            : 'This authorization was not started in this browser (its authorizationUrl was opened elsewhere, or not at all): no connection was made; start again from this browser',
        });
      }
      expect(fake.counts.token).toBe(0);
      expect(
        await h.database.db.select().from(connections).where(eq(connections.accountId, attacker.account.id)),
      ).toEqual([]);

      // A wrong nonce under the right cookie name is refused too; the right one completes.
      const second = await call(h.app, 'POST', '/api/v1/connections/initiate', {
        token: attacker.sessionToken,
        body: { providerId: 'acme', redirectUrl: APP_REDIRECT },
      });
      const opened = await openAuthorizationUrl(h.app, second.json().authorizationUrl);
      const cb2 = new URL((await fetch(opened.providerUrl, { redirect: 'manual' })).headers.get('location') ?? '');
      const forged = `${opened.cookie.split('=')[0]}=${'y'.repeat(43)}`;
      const refused = await h.app.inject({
        method: 'GET',
        url: cb2.pathname + cb2.search,
        headers: { cookie: forged },
      });
      expect(new URL(String(refused.headers.location)).searchParams.get('error')).toBe('access_denied');
      expect(fake.counts.token).toBe(0);

      const third = await authorize(h.app, attacker.sessionToken);
      expect(third.searchParams.get('connectionId')).toMatch(/^conn_/);
      expect(fake.counts.token).toBe(1);
    });

    it('an expired state redirects back with an error', async () => {
      const u = await createUser(h.app);
      const init = await call(h.app, 'POST', '/api/v1/connections/initiate', {
        token: u.sessionToken,
        body: { providerId: 'acme', redirectUrl: APP_REDIRECT },
      });
      await h.database.db
        .update(oauthStates)
        .set({ expiresAt: new Date(Date.now() - 1000) })
        .where(eq(oauthStates.accountId, u.account.id));
      // Opening the authorization URL of an expired state is refused before the provider is involved.
      const ours = new URL(init.json().authorizationUrl);
      const opened = await h.app.inject({ method: 'GET', url: ours.pathname + ours.search });
      expect(opened.statusCode).toBe(400);
      expect(opened.json().message).toBe('This authorization expired; start again');
      const state = ours.searchParams.get('state') ?? '';
      const res = await h.app.inject({ method: 'GET', url: `/api/v1/connections/callback?code=x&state=${state}` });
      const back = new URL(String(res.headers.location));
      expect(back.searchParams.get('error')).toBe('invalid_request');
      expect(back.searchParams.get('error_description')).toBe('This authorization expired; start again');
      expect(fake.counts.token).toBe(0);
    });

    it('the provider refusing, or failing at the token endpoint, comes back as error and error_description', async () => {
      const u = await createUser(h.app);
      fake.fail('authorize', {});
      const denied = await authorize(h.app, u.sessionToken);
      expect(Object.fromEntries(denied.searchParams)).toEqual({
        error: 'access_denied',
        error_description: 'The user denied access',
      });

      fake.fail('token', { status: 503 });
      const failed = await authorize(h.app, u.sessionToken);
      expect(failed.searchParams.get('error')).toBe('server_error');
      expect(failed.searchParams.get('error_description')).toMatch(/^Acme token endpoint answered 503/);
      expect(failed.searchParams.get('connectionId')).toBeNull();
    });

    it('reconnecting the same provider user updates the connection; without allowMultipleConnections another user replaces it', async () => {
      const u = await createUser(h.app);
      const first = await connectAcme(h.app, u);
      await h.database.db
        .update(connections)
        .set({ status: 'revoked', canRefresh: false })
        .where(eq(connections.id, first));
      const again = await connectAcme(h.app, u);
      expect(again).toBe(first);
      expect((await rowOf(first))?.status).toBe('active');
      expect((await rowOf(first))?.canRefresh).toBe(true);

      fake.user = { id: 'u-2002', login: 'grace', name: 'Grace Hopper' };
      try {
        const other = await connectAcme(h.app, u);
        expect(other).toBe(first);
        const row = await rowOf(first);
        expect(row?.providerUserId).toBe('u-2002');
        expect(row?.metadata).toEqual({ displayName: 'Grace Hopper' });
      } finally {
        fake.user = { id: 'u-1001', login: 'ada', name: 'Ada Lovelace', email: 'ada@acme.test' };
      }
      const list = await call(h.app, 'GET', '/api/v1/connections', { token: u.sessionToken });
      expect(list.json().pagination.total).toBe(1);
    });
  });

  describe('list', () => {
    /** Rows made directly (the journey is tested above): statuses, providers and dates to filter on. */
    async function seed(accountId: string) {
      const specs: Array<[string, 'active' | 'expired' | 'error' | 'revoked', string, string]> = [
        ['acme', 'active', '2025-01-10T00:00:00Z', '2025-03-01T00:00:00Z'],
        ['acme-team', 'active', '2025-01-20T00:00:00Z', '2025-01-21T00:00:00Z'],
        ['acme-team', 'error', '2025-02-05T00:00:00Z', '2025-02-06T00:00:00Z'],
        ['github', 'revoked', '2025-02-15T00:00:00Z', '2025-04-01T00:00:00Z'],
        ['slack', 'expired', '2025-03-01T00:00:00Z', '2025-03-02T00:00:00Z'],
      ];
      const ids: string[] = [];
      for (const [n, [providerId, status, created, updated]] of specs.entries()) {
        const id = `conn_seed${n}_${accountId.slice(4, 14)}`;
        ids.push(id);
        await h.database.db.insert(connections).values({
          id,
          accountId,
          providerId,
          providerUserId: `user-${n}`,
          scopes: [],
          status,
          expiresAt: null,
          canRefresh: false,
          metadata: { displayName: `User ${n}` },
          vars: {},
          accessTokenEnc: h.keyRing.encrypt(`token-${n}`, id),
          createdAt: new Date(created),
          updatedAt: new Date(updated),
        });
      }
      return ids;
    }

    const list = (token: string, query: string) => call(h.app, 'GET', `/api/v1/connections${query}`, { token });
    const ids = (res: { json(): { data: Array<{ id: string }> } }) => res.json().data.map((c) => c.id);
    const enc = (f: unknown) => encodeURIComponent(JSON.stringify(f));

    it("pages, sorts and filters the caller's connections only", async () => {
      const [u, other] = [await createUser(h.app), await createUser(h.app)];
      const [a, b, c, d, e] = (await seed(u.account.id)) as [string, string, string, string, string];
      await seed(other.account.id);
      const t = u.sessionToken;

      const all = await list(t, '');
      expect(all.statusCode).toBe(200);
      expect(ids(all)).toEqual([e, d, c, b, a]);
      expect(all.json().pagination).toEqual({ page: 1, limit: 20, total: 5, hasMore: false });

      const page2 = await list(t, '?page=2&limit=2&sortOrder=asc');
      expect(ids(page2)).toEqual([c, d]);
      expect(page2.json().pagination).toEqual({ page: 2, limit: 2, total: 5, hasMore: true });
      expect(ids(await list(t, '?sortBy=updatedAt'))).toEqual([d, e, a, c, b]);

      const table: Array<[string, string[]]> = [
        [`?filter=${enc({ status: 'active' })}`, [b, a]],
        [`?filter=${enc({ status: { $in: ['error', 'expired'] } })}`, [e, c]],
        [`?filter=${enc({ status: { $nin: ['active'] } })}`, [e, d, c]],
        [`?filter=${enc({ providerId: { $ne: 'acme-team' } })}`, [e, d, a]],
        [`?filter=${enc({ createdAt: { $gte: '2025-02-01', $lt: '2025-03-01T00:00:00Z' } })}`, [d, c]],
        [`?filter=${enc({ updatedAt: { $gt: '2025-03-01T00:00:00Z' } })}`, [d, e]],
        [`?filter=${enc({ status: 'active', providerId: 'acme-team' })}`, [b]],
        ['?status=active', [b, a]],
        ['?filter[status]=revoked', [d]],
        [`?status=error,expired&filter=${enc({ providerId: 'slack' })}`, [e]],
        [`?filter=${enc({ providerId: { $in: [] } })}`, []],
      ];
      for (const [query, expected] of table) {
        const res = await list(t, query);
        expect(res.statusCode, `${query}: ${res.body}`).toBe(200);
        expect(new Set(ids(res)), query).toEqual(new Set(expected));
        expect(res.json().pagination.total, query).toBe(expected.length);
      }
    });

    it('answers 400 saying why for a bad filter, 422 for bad paging', async () => {
      const u = await createUser(h.app);
      const bad: Array<[string, string]> = [
        [`?filter=${enc({ accountId: 'x' })}`, 'unknown field "accountId"'],
        [`?filter=${enc({ status: { $regex: 'a' } })}`, 'unknown operator "$regex" on status'],
        ['?filter=%7Bnot%20json', 'filter must be URL-encoded JSON'],
        ['?status=sleeping', 'status must be one of active, expired, error, revoked, not "sleeping"'],
        [`?filter=${enc({ createdAt: { $gt: 'last week' } })}`, 'createdAt.$gt must be an ISO 8601 date'],
      ];
      for (const [query, message] of bad) {
        const res = await list(u.sessionToken, query);
        expect(res.statusCode, query).toBe(400);
        expect(res.json()).toEqual({
          error: 'BadRequestError',
          message: expect.stringContaining(message),
          statusCode: 400,
        });
      }
      for (const query of ['?limit=101', '?limit=0', '?page=0', '?sortBy=providerId', '?sortOrder=up']) {
        const res = await list(u.sessionToken, query);
        expect(res.statusCode, query).toBe(422);
        expect(res.json().error).toBe('ValidationError');
      }
    });

    it('list and get are refused to third-party OAuth clients, open to white-label ones', async () => {
      const { listConnections, getConnection } = await import('./service.ts');
      const u = await createUser(h.app);
      const [id] = await seed(u.account.id);
      const oauthCtx = (roles: string[]) => ({
        ...u.ctx,
        actor: { ...u.ctx.actor, kind: 'oauth' as const, clientId: 'app_x', clientRoles: roles },
      });
      const q = { page: 1, limit: 20, sortBy: 'createdAt' as const, sortOrder: 'desc' as const };
      await expect(listConnections(oauthCtx(['third-party']), q)).rejects.toMatchObject({ statusCode: 403 });
      await expect(getConnection(oauthCtx(['third-party']), id ?? '')).rejects.toMatchObject({ statusCode: 403 });
      expect((await listConnections(oauthCtx(['whitelabel-customer']), q)).pagination.total).toBe(5);
      expect((await getConnection(oauthCtx(['whitelabel-customer']), id ?? '')).id).toBe(id);
    });
  });

  describe('initiate', () => {
    it('answers 422 naming the variables when the provider is not configured, 404 for an unknown provider', async () => {
      const u = await createUser(h.app);
      const res = await call(h.app, 'POST', '/api/v1/connections/initiate', {
        token: u.sessionToken,
        body: { providerId: 'github', redirectUrl: APP_REDIRECT },
      });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({
        error: 'ValidationError',
        message:
          'GitHub is not configured on this server: set PROVIDER_GITHUB_CLIENT_ID and PROVIDER_GITHUB_CLIENT_SECRET',
        statusCode: 422,
      });
      const unknown = await call(h.app, 'POST', '/api/v1/connections/initiate', {
        token: u.sessionToken,
        body: { providerId: 'nope', redirectUrl: APP_REDIRECT },
      });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json()).toEqual({ error: 'NotFoundError', message: 'Provider nope not found', statusCode: 404 });
    });

    it("allows redirectUrl only on APP_URL's origin", async () => {
      const u = await createUser(h.app);
      for (const redirectUrl of [
        'https://evil.example/cb',
        'http://localhost:8081/app',
        'http://user:pw@localhost:8080/app',
        'javascript:alert(1)',
      ]) {
        const res = await call(h.app, 'POST', '/api/v1/connections/initiate', {
          token: u.sessionToken,
          body: { providerId: 'acme', redirectUrl },
        });
        expect(res.statusCode, redirectUrl).toBe(422);
        expect(res.json().details[0].field).toBe('body.redirectUrl');
      }
    });

    it("also allows the redirect URIs of the account's own auth clients (and not another account's)", async () => {
      const [u, other] = [await createUser(h.app), await createUser(h.app)];
      const created = await call(h.app, 'POST', '/api/v1/auth-clients', {
        token: u.sessionToken,
        body: {
          name: 'My app',
          type: 'public',
          redirectUris: ['https://myapp.example/oauth/done', 'http://127.0.0.1:5173/cb'],
        },
      });
      expect(created.statusCode, created.body).toBe(201);
      const initiate = (token: string, redirectUrl: string) =>
        call(h.app, 'POST', '/api/v1/connections/initiate', { token, body: { providerId: 'acme', redirectUrl } });
      expect((await initiate(u.sessionToken, 'https://myapp.example/oauth/done?from=settings')).statusCode).toBe(200);
      expect((await initiate(u.sessionToken, 'http://127.0.0.1:5173/cb')).statusCode).toBe(200);
      expect((await initiate(u.sessionToken, 'https://myapp.example/elsewhere')).statusCode).toBe(422);
      expect((await initiate(u.sessionToken, 'http://127.0.0.1:5174/cb')).statusCode).toBe(422);
      expect((await initiate(other.sessionToken, 'https://myapp.example/oauth/done')).statusCode).toBe(422);
    });

    it('checks providerParams: connection fields by their pattern, extra scopes, pass-through parameters; others refused', async () => {
      const u = await createUser(h.app);
      const ok = await call(h.app, 'POST', '/api/v1/connections/initiate', {
        token: u.sessionToken,
        body: {
          providerId: 'acme',
          redirectUrl: APP_REDIRECT,
          providerParams: { scopes: ['admin'], login_hint: 'ada' },
        },
      });
      expect(ok.statusCode, ok.body).toBe(200);
      const url = new URL((await openAuthorizationUrl(h.app, ok.json().authorizationUrl)).providerUrl);
      expect(url.searchParams.get('scope')).toBe('items.read items.write admin');
      expect(url.searchParams.get('login_hint')).toBe('ada');

      const bad = await call(h.app, 'POST', '/api/v1/connections/initiate', {
        token: u.sessionToken,
        body: {
          providerId: 'acme-team',
          redirectUrl: APP_REDIRECT,
          providerParams: { workspace: 'NO SPACES', color: 'x' },
        },
      });
      expect(bad.statusCode).toBe(422);
      expect(bad.json().details).toEqual([
        { field: 'body.providerParams.workspace', message: 'must match [a-z0-9-]{2,30}' },
        {
          field: 'body.providerParams.color',
          message: 'is not a parameter of Acme Team (allowed: workspace, scopes, login_hint, prompt)',
        },
      ]);
    });
  });

  describe('pending connections (fields after OAuth)', () => {
    it('callback -> pendingId -> fields -> finalize (single use) -> a connection on the workspace', async () => {
      const u = await createUser(h.app);
      const back = await authorize(h.app, u.sessionToken, { providerId: 'acme-team', redirectUrl: APP_REDIRECT });
      const pendingId = back.searchParams.get('pendingId') ?? '';
      expect(pendingId).toMatch(/^pcn_/);
      expect(back.searchParams.get('connectionId')).toBeNull();

      const fields = await h.app.inject({ method: 'GET', url: `/api/v1/connections/pending/${pendingId}/fields` });
      expect(fields.statusCode).toBe(200);
      expect(fields.json()).toEqual({
        pendingId,
        providerId: 'acme-team',
        providerMetadata: expect.objectContaining({ name: 'Acme Team' }),
        fields: [
          { name: 'workspace', label: 'Workspace', description: 'Your workspace name', pattern: '[a-z0-9-]{2,30}' },
        ],
        expiresAt: expect.any(String),
      });
      // The pending row holds the tokens sealed, keyed by the id's hash.
      const [pending] = await h.database.db
        .select()
        .from(pendingConnections)
        .where(eq(pendingConnections.accountId, u.account.id));
      expect(pending?.idHash).not.toContain(pendingId);
      expect(pending?.payloadEnc).not.toContain('acme_at_');

      const bad = await h.app.inject({
        method: 'POST',
        url: `/api/v1/connections/pending/${pendingId}/finalize`,
        payload: { fields: { workspace: 'Bad Name!' } },
      });
      expect(bad.statusCode).toBe(422);
      expect(bad.json().details).toEqual([{ field: 'body.fields.workspace', message: 'must match [a-z0-9-]{2,30}' }]);

      const fin = await h.app.inject({
        method: 'POST',
        url: `/api/v1/connections/pending/${pendingId}/finalize`,
        payload: { fields: { workspace: 'research' } },
      });
      expect(fin.statusCode, fin.body).toBe(200);
      const { connectionId, redirectUrl } = fin.json();
      expect(connectionId).toMatch(/^conn_/);
      expect(redirectUrl).toBe(`${APP_REDIRECT}?connectionId=${connectionId}`);
      expect((await rowOf(connectionId))?.vars).toEqual({ workspace: 'research' });

      const again = await h.app.inject({
        method: 'POST',
        url: `/api/v1/connections/pending/${pendingId}/finalize`,
        payload: { fields: { workspace: 'research' } },
      });
      expect(again.statusCode).toBe(404);
      const gone = await h.app.inject({ method: 'GET', url: `/api/v1/connections/pending/${pendingId}/fields` });
      expect(gone.statusCode).toBe(404);

      // Its tools reach the workspace's API.
      const res = await execute(h.app, u.sessionToken, connectionId, 'whoami', {}, 'acme-team');
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().result).toMatchObject({ id: 'u-1001', plan: 'pro' });
    });

    it('an unknown or expired pending id is 404', async () => {
      const res = await h.app.inject({ method: 'GET', url: '/api/v1/connections/pending/pcn_unknown/fields' });
      expect(res.statusCode).toBe(404);
      expect(res.json().error).toBe('NotFoundError');
    });
  });

  describe('from the catalog', () => {
    it('initiate-oauth answers like initiate', async () => {
      const u = await createUser(h.app);
      const back = await authorize(
        h.app,
        u.sessionToken,
        { catalogEntryId: 'acme', redirectUrl: APP_REDIRECT },
        '/api/v1/connections/from-catalog/initiate-oauth',
      );
      expect(back.searchParams.get('connectionId')).toMatch(/^conn_/);
    });

    it('a bearer token the provider accepts becomes a connection that cannot be refreshed; a refused one is 422', async () => {
      const u = await createUser(h.app);
      // A token the fake issued to this user through another client.
      const other = await createUser(h.app);
      const otherId = await connectAcme(h.app, other);
      const token = h.keyRing.decrypt((await rowOf(otherId))?.accessTokenEnc ?? '', otherId);

      const res = await call(h.app, 'POST', '/api/v1/connections/from-catalog', {
        token: u.sessionToken,
        body: { catalogEntryId: 'acme', bearerToken: token },
      });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json()).toMatchObject({
        providerId: 'acme',
        providerUserId: 'u-1001',
        status: 'active',
        expiresAt: null,
        canRefresh: false,
      });
      const run = await execute(h.app, u.sessionToken, res.json().id, 'whoami');
      expect(run.statusCode).toBe(200);
      const refresh = await call(h.app, 'PUT', `/api/v1/connections/${res.json().id}/refresh`, {
        token: u.sessionToken,
      });
      expect(refresh.statusCode).toBe(400);
      expect(refresh.json().message).toBe('This Acme connection has no refresh token; reconnect it to renew access');

      const refused = await call(h.app, 'POST', '/api/v1/connections/from-catalog', {
        token: u.sessionToken,
        body: { catalogEntryId: 'acme', bearerToken: 'not-a-token' },
      });
      expect(refused.statusCode).toBe(422);
      expect(refused.json().details).toEqual([
        { field: 'body.bearerToken', message: 'was refused by Acme (401: Bad credentials)' },
      ]);
    });
  });

  describe('delete', () => {
    it('deletes and revokes the token at the provider', async () => {
      const u = await createUser(h.app);
      const id = await connectAcme(h.app, u);
      const token = h.keyRing.decrypt((await rowOf(id))?.accessTokenEnc ?? '', id);
      const res = await call(h.app, 'DELETE', `/api/v1/connections/${id}`, { token: u.sessionToken });
      expect(res.statusCode).toBe(204);
      await h.app.deps.background.drain();
      expect(fake.revokedTokens).toEqual([token]);
      expect(await rowOf(id)).toBeUndefined();
      const again = await call(h.app, 'DELETE', `/api/v1/connections/${id}`, { token: u.sessionToken });
      expect(again.statusCode).toBe(404);
    });

    it('a failed revocation is logged and does not block the delete', async () => {
      const u = await createUser(h.app);
      const id = await connectAcme(h.app, u);
      fake.fail('revoke', { status: 500 });
      const res = await call(h.app, 'DELETE', `/api/v1/connections/${id}`, { token: u.sessionToken });
      expect(res.statusCode).toBe(204);
      await h.app.deps.background.drain();
      expect(fake.counts.revoke).toBe(1);
      expect(fake.revokedTokens).toEqual([]);
      expect(await rowOf(id)).toBeUndefined();
    });
  });

  describe('running tools', () => {
    it('runs a read tool across pages and answers the shaped result', async () => {
      const u = await createUser(h.app);
      const id = await connectAcme(h.app, u);
      const res = await execute(h.app, u.sessionToken, id, 'list_items');
      expect(res.statusCode, res.body).toBe(200);
      const { result } = res.json();
      expect(result.total).toBe(12);
      expect(result.items).toHaveLength(12);
      expect(result.items[0]).toEqual({ id: 'item-1', title: 'Item 1' });
      expect(fake.apiPaths).toEqual(['/items?limit=5', '/items?limit=5&cursor=5', '/items?limit=5&cursor=10']);

      const one = await execute(h.app, u.sessionToken, id, 'get_item', { id: 'item-3' });
      expect(one.json()).toEqual({
        providerId: 'acme',
        toolName: 'get_item',
        connectionId: id,
        result: { id: 'item-3', title: 'Item 3' },
      });
    });

    it('422 names the argument at fault; unknown tool 404; a provider 404 is a 400 with its message', async () => {
      const u = await createUser(h.app);
      const id = await connectAcme(h.app, u);
      const bad = await execute(h.app, u.sessionToken, id, 'create_item', { title: '', color: 'red' });
      expect(bad.statusCode).toBe(422);
      expect(bad.json()).toMatchObject({ error: 'ValidationError', statusCode: 422 });
      expect(bad.json().details).toEqual([
        { field: 'arguments.title', message: 'must be at least 1 characters' },
        { field: 'arguments.color', message: 'is not a parameter of this tool' },
      ]);
      const missing = await execute(h.app, u.sessionToken, id, 'get_item', {});
      expect(missing.json().details).toEqual([{ field: 'arguments.id', message: 'is required' }]);

      const unknown = await execute(h.app, u.sessionToken, id, 'drop_everything');
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().message).toBe('Tool drop_everything not found for provider acme');

      const notThere = await execute(h.app, u.sessionToken, id, 'get_item', { id: 'item-999' });
      expect(notThere.statusCode).toBe(400);
      expect(notThere.json().message).toBe('Acme refused the request (404): Item not found');
      expect(fake.counts.api).toBe(1);
    });

    it('a read PAT runs read tools only; a read-write permission for the provider runs write tools', async () => {
      const u = await createUser(h.app);
      const id = await connectAcme(h.app, u);
      const readOnly = await u.pat(['connections'], { default_provider_permission: 'read' });
      const write = await execute(h.app, readOnly, id, 'create_item', { title: 'New' });
      expect(write.statusCode).toBe(403);
      expect(write.json()).toEqual({
        error: 'ForbiddenError',
        message: 'This token may only run read tools of Acme (provider permission "read"); create_item writes',
        statusCode: 403,
      });
      expect(fake.counts.api).toBe(0);
      expect((await execute(h.app, readOnly, id, 'whoami')).statusCode).toBe(200);

      const perProvider = await u.pat(['connections'], {
        default_provider_permission: 'read',
        provider_permissions: { acme: 'read-write' },
      });
      const created = await execute(h.app, perProvider, id, 'create_item', { title: 'New' });
      expect(created.statusCode, created.body).toBe(200);
      expect(created.json().result).toMatchObject({ title: 'New' });

      const readForAcme = await u.pat(['connections'], { provider_permissions: { acme: 'read' } });
      expect((await execute(h.app, readForAcme, id, 'create_item', { title: 'x' })).statusCode).toBe(403);
    });

    it("a connection of another provider is 400; another account's connection is 404", async () => {
      const [u, other] = [await createUser(h.app), await createUser(h.app)];
      const id = await connectAcme(h.app, u);
      const wrong = await execute(h.app, u.sessionToken, id, 'whoami', {}, 'acme-team');
      expect(wrong.statusCode).toBe(400);
      expect(wrong.json().message).toBe(`Connection ${id} is a acme connection, not acme-team`);
      const theirs = await execute(h.app, other.sessionToken, id, 'whoami');
      expect(theirs.statusCode).toBe(404);
      expect(theirs.json().message).toBe(`Connection ${id} not found`);
    });
  });

  describe('the tools of one connection (GET /providers/:providerId/tools?connectionId=)', () => {
    const tools = (app: typeof h.app, token: string, url: string) => call(app, 'GET', url, { token });
    const names = (res: { json(): unknown }) => (res.json() as Array<{ name: string }>).map((t) => t.name);
    const ALL = ['list_items', 'get_item', 'create_item', 'whoami'];
    const READ = ['list_items', 'get_item', 'whoami'];

    it('answers the tools the caller may run there: write tools only with a read-write permission', async () => {
      const u = await createUser(h.app);
      const id = await connectAcme(h.app, u);
      const url = `/api/v1/providers/acme/tools?connectionId=${id}`;
      const all = await tools(h.app, u.sessionToken, url);
      expect(all.statusCode).toBe(200);
      expect(all.json()).toEqual((await tools(h.app, u.sessionToken, '/api/v1/providers/acme/tools')).json());
      expect(names(all)).toEqual(ALL);
      expect(all.json()).toContainEqual({
        name: 'create_item',
        description: 'Create an Acme item with a title; answers the new item with its id.',
        parameters: expect.objectContaining({ type: 'object', required: ['title'] }),
        mode: 'write',
      });

      const byDefault = await u.pat(['connections'], { default_provider_permission: 'read' });
      const byProvider = await u.pat(['connections'], { provider_permissions: { acme: 'read' } });
      const otherProviderRead = await u.pat(['connections'], { provider_permissions: { github: 'read' } });
      const readButAcme = await u.pat(['connections'], {
        default_provider_permission: 'read',
        provider_permissions: { acme: 'read-write' },
      });
      for (const [token, expected] of [
        [byDefault, READ],
        [byProvider, READ],
        [otherProviderRead, ALL],
        [readButAcme, ALL],
      ] as const) {
        const res = await tools(h.app, token, url);
        expect(res.statusCode, res.body).toBe(200);
        expect(names(res)).toEqual(expected);
      }
      // The same rule as running them: the write tool left out is the one execute refuses.
      const connectionsRead = await u.pat(['connections'], { provider_permissions: { acme: 'read' } });
      expect(names(await tools(h.app, connectionsRead, url))).not.toContain('create_item');
      expect((await execute(h.app, connectionsRead, id, 'create_item', { title: 'x' })).statusCode).toBe(403);
      // Without a connection the catalog answers every tool, whatever the permission.
      expect(names(await tools(h.app, byDefault, '/api/v1/providers/acme/tools'))).toEqual(ALL);
    });

    it('with connectionId it takes the connections scope (403 without it); the catalog alone does not', async () => {
      const u = await createUser(h.app);
      const id = await connectAcme(h.app, u);
      const accountOnly = await u.pat(['account']);
      const refused = await tools(h.app, accountOnly, `/api/v1/providers/acme/tools?connectionId=${id}`);
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toEqual({
        error: 'ForbiddenError',
        message: 'Missing required scope: connections',
        statusCode: 403,
      });
      // Not even whether the id exists is told without the scope.
      const unknown = await tools(h.app, accountOnly, '/api/v1/providers/acme/tools?connectionId=conn_AbC123_-xyz789Q');
      expect(unknown.statusCode).toBe(403);
      expect(names(await tools(h.app, accountOnly, '/api/v1/providers/acme/tools'))).toEqual(ALL);
      expect(
        (await tools(h.app, await u.pat(['connections']), `/api/v1/providers/acme/tools?connectionId=${id}`))
          .statusCode,
      ).toBe(200);
    });

    it("answers 404 for another account's connection, another provider's and an unknown one", async () => {
      const [u, other] = [await createUser(h.app), await createUser(h.app)];
      const id = await connectAcme(h.app, u);
      const theirs = await tools(h.app, other.sessionToken, `/api/v1/providers/acme/tools?connectionId=${id}`);
      expect(theirs.statusCode).toBe(404);
      expect(theirs.json()).toEqual({ error: 'NotFoundError', message: `Connection ${id} not found`, statusCode: 404 });
      const wrong = await tools(h.app, u.sessionToken, `/api/v1/providers/acme-team/tools?connectionId=${id}`);
      expect(wrong.statusCode).toBe(404);
      expect(wrong.json()).toEqual({
        error: 'NotFoundError',
        message: `Connection ${id} is a acme connection, not acme-team`,
        statusCode: 404,
      });
      const unknown = await tools(
        h.app,
        u.sessionToken,
        '/api/v1/providers/acme/tools?connectionId=conn_AbC123_-xyz789Q',
      );
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().message).toBe('Connection conn_AbC123_-xyz789Q not found');
      const noProvider = await tools(h.app, u.sessionToken, `/api/v1/providers/myspace/tools?connectionId=${id}`);
      expect(noProvider.statusCode).toBe(404);
      expect(noProvider.json().message).toBe('Provider myspace not found');
    });
  });

  describe('guards', () => {
    const executeBody = { connectionId: 'conn_xxxxxxxxxxxx', arguments: {} };
    guardTests(
      () => h,
      [
        {
          method: 'GET',
          url: '/api/v1/connections/conn_xxxxxxxxxxxx',
          scopes: ['connections'],
          ownedUrl: async (owner) => `/api/v1/connections/${await connectAcme(h.app, owner)}`,
        },
        { method: 'GET', url: '/api/v1/connections', scopes: ['connections'] },
        {
          method: 'PUT',
          url: '/api/v1/connections/conn_xxxxxxxxxxxx/refresh',
          scopes: ['connections'],
          ownedUrl: async (owner) => `/api/v1/connections/${await connectAcme(h.app, owner)}/refresh`,
        },
        {
          method: 'DELETE',
          url: '/api/v1/connections/conn_xxxxxxxxxxxx',
          scopes: ['connections'],
          ownedUrl: async (owner) => `/api/v1/connections/${await connectAcme(h.app, owner)}`,
        },
        {
          method: 'POST',
          url: '/api/v1/connections/initiate',
          scopes: ['connections'],
          body: { providerId: 'acme', redirectUrl: APP_REDIRECT },
        },
        {
          method: 'POST',
          url: '/api/v1/connections/from-catalog/initiate-oauth',
          scopes: ['connections'],
          body: { catalogEntryId: 'acme', redirectUrl: APP_REDIRECT },
        },
        {
          method: 'POST',
          url: '/api/v1/connections/from-catalog',
          scopes: ['connections'],
          body: { catalogEntryId: 'acme', bearerToken: 'not-a-token' },
        },
        {
          method: 'GET',
          url: '/api/v1/providers/acme/tools?connectionId=conn_xxxxxxxxxxxx',
          // With connectionId the route reads a connection: `connections` (checked in the service).
          scopes: ['connections'],
          ownedUrl: async (owner) => `/api/v1/providers/acme/tools?connectionId=${await connectAcme(h.app, owner)}`,
        },
        {
          method: 'POST',
          url: '/api/v1/providers/acme/tools/whoami/execute',
          scopes: ['connections'],
          // The owner's connection id goes into the body once ownedUrl has made it.
          body: executeBody,
          ownedUrl: async (owner) => {
            executeBody.connectionId = await connectAcme(h.app, owner);
            return '/api/v1/providers/acme/tools/whoami/execute';
          },
        },
      ],
    );
  });
});
