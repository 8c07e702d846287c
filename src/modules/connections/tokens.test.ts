import { eq, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type FakeOAuthProvider,
  fakeProvidersEnv,
  startFakeOAuthProvider,
} from '../../../test/fakes/oauth-provider.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { buildApp } from '../../app.ts';
import type { ServiceContext } from '../../context.ts';
import { type Database, type Db, openDatabase } from '../../db/client.ts';
import { rowsOf } from '../../db/rows.ts';
import * as schema from '../../db/schema/index.ts';
import { connections } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';
import { refreshExpiringConnections } from './jobs.ts';
import { providerAgentTools } from './provider-tools.ts';
import { listActiveConnections } from './service.ts';
import { APP_REDIRECT, authorize, connectAcme, execute } from './test-support.ts';

/**
 * The token lifecycle against the fake provider: fresh tokens for every use, one upstream refresh however
 * many callers (and instances) race, §3's transitions on provider faults, and the provider HTTP client's
 * retries and time limits.
 */
describe('token lifecycle', () => {
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

  const rowOf = async (id: string) => {
    const [row] = await h.database.db.select().from(connections).where(eq(connections.id, id));
    if (!row) throw new Error(`no row ${id}`);
    return row;
  };
  const tokenOf = async (id: string) => h.keyRing.decrypt((await rowOf(id)).accessTokenEnc, id);
  const refreshTokenOf = async (id: string) => h.keyRing.decrypt((await rowOf(id)).refreshTokenEnc ?? '', id);
  /** The stored token expired a minute ago (the fake still accepts it: only our bookkeeping says so). */
  const expire = (id: string, at = new Date(Date.now() - 60_000)) =>
    h.database.db.update(connections).set({ expiresAt: at }).where(eq(connections.id, id));

  async function connected(): Promise<{ u: TestUser; id: string }> {
    const u = await createUser(h.app);
    const id = await connectAcme(h.app, u);
    fake.reset();
    return { u, id };
  }

  describe('fresh tokens', () => {
    it('20 concurrent tool calls on an expired token cause exactly one upstream refresh', async () => {
      const { u, id } = await connected();
      const old = await tokenOf(id);
      await expire(id);
      fake.fail('refresh', { delayMs: 300 });
      const results = await Promise.all(Array.from({ length: 20 }, () => execute(h.app, u.sessionToken, id, 'whoami')));
      expect(results.map((r) => r.statusCode)).toEqual(Array(20).fill(200));
      expect(fake.counts.refresh).toBe(1);
      const fresh = await tokenOf(id);
      expect(fresh).not.toBe(old);
      expect(new Set(fake.apiTokens)).toEqual(new Set([fresh]));
      const row = await rowOf(id);
      expect(row.status).toBe('active');
      expect(row.expiresAt?.getTime()).toBeGreaterThan(Date.now() + 3500_000);
      expect(row.refreshedAt).toBeInstanceOf(Date);
    });

    it('two app instances on one database: one upstream refresh (row lock)', async () => {
      const { u, id } = await connected();
      await expire(id);
      // A second instance: on PostgreSQL its own connection pool; on PGlite the one embedded database.
      let second: App;
      let secondDb: Database | undefined;
      if (h.config.databaseUrl) {
        secondDb = await openDatabase({ databaseUrl: h.config.databaseUrl, dataDir: h.config.dataDir, poolMax: 5 });
        second = await buildApp({ config: h.config, database: secondDb, keyRing: h.keyRing, logger: false });
        await second.ready();
      } else {
        second = await h.extraApp();
      }
      try {
        fake.fail('refresh', { delayMs: 400 });
        const calls = Array.from({ length: 20 }, (_, i) =>
          execute(i % 2 ? second : h.app, u.sessionToken, id, 'whoami'),
        );
        const results = await Promise.all(calls);
        expect(results.map((r) => r.statusCode)).toEqual(Array(20).fill(200));
        expect(fake.counts.refresh).toBe(1);
        expect(new Set(fake.apiTokens)).toEqual(new Set([await tokenOf(id)]));
      } finally {
        if (secondDb) {
          await second.close();
          await secondDb.close();
        }
      }
    });

    it('a refresh waiting on a slow provider holds up no other request (PGlite: no transaction across the call)', async () => {
      const { u, id } = await connected();
      await expire(id);
      fake.fail('refresh', { delayMs: 1500 });
      const order: string[] = [];
      const refresh = call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: u.sessionToken }).then((r) => {
        order.push('refresh');
        return r;
      });
      // The provider holds the refresh request; meanwhile the database answers others.
      await vi.waitFor(() => expect(fake.counts.refresh).toBe(1));
      const me = await call(h.app, 'GET', '/api/v1/accounts/me', { token: u.sessionToken });
      order.push('accounts/me');
      const list = await call(h.app, 'GET', '/api/v1/connections', { token: u.sessionToken });
      order.push('connections');
      expect([me.statusCode, list.statusCode]).toEqual([200, 200]);
      expect((await refresh).statusCode).toBe(200);
      expect(order).toEqual(['accounts/me', 'connections', 'refresh']);
      expect((await rowOf(id)).status).toBe('active');
      expect(fake.counts.refresh).toBe(1);
    });

    it('a connection deleted while its refresh waits on the provider stays deleted', async () => {
      const { u, id } = await connected();
      await expire(id);
      fake.fail('refresh', { delayMs: 800 });
      const refresh = call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: u.sessionToken });
      await vi.waitFor(() => expect(fake.counts.refresh).toBe(1));
      if (h.config.databaseUrl) {
        // PostgreSQL: the delete waits for the refresh's row lock, then removes the refreshed row.
        const [del, ref] = await Promise.all([
          call(h.app, 'DELETE', `/api/v1/connections/${id}`, { token: u.sessionToken }),
          refresh,
        ]);
        expect([del.statusCode, ref.statusCode]).toEqual([204, 200]);
      } else {
        const del = await call(h.app, 'DELETE', `/api/v1/connections/${id}`, { token: u.sessionToken });
        expect(del.statusCode).toBe(204);
        // The refresh's write finds the row gone and does not bring it back.
        expect((await refresh).statusCode).toBe(200);
      }
      expect(await h.database.db.select().from(connections).where(eq(connections.id, id))).toEqual([]);
    });

    it('a token within the refresh buffer is refreshed before use; one beyond it is not', async () => {
      const { u, id } = await connected();
      await expire(id, new Date(Date.now() + 120_000)); // buffer is 60 s
      expect((await execute(h.app, u.sessionToken, id, 'whoami')).statusCode).toBe(200);
      expect(fake.counts.refresh).toBe(0);
      await expire(id, new Date(Date.now() + 30_000));
      expect((await execute(h.app, u.sessionToken, id, 'whoami')).statusCode).toBe(200);
      expect(fake.counts.refresh).toBe(1);
    });

    it('keeps the old refresh token when the provider sends none', async () => {
      const { u, id } = await connected();
      const refreshToken = await refreshTokenOf(id);
      fake.omitRefreshToken = true;
      const res = await call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: u.sessionToken });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ status: 'active', canRefresh: true });
      expect(await refreshTokenOf(id)).toBe(refreshToken);
      const again = await call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: u.sessionToken });
      expect(again.json().status).toBe('active');
      expect(fake.counts.refresh).toBe(2);
    });

    it('rotates the refresh token when the provider does', async () => {
      const { u, id } = await connected();
      const first = await refreshTokenOf(id);
      const res = await call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: u.sessionToken });
      expect(res.statusCode).toBe(200);
      expect(await refreshTokenOf(id)).not.toBe(first);
      const again = await call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: u.sessionToken });
      expect(again.json().status).toBe('active');
    });
  });

  describe('status transitions (SPEC §3)', () => {
    it('invalid_grant: revoked, canRefresh false, and no further refresh attempts', async () => {
      const { u, id } = await connected();
      fake.revokeEverything();
      await expire(id);
      const res = await execute(h.app, u.sessionToken, id, 'whoami');
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toBe(
        `Connection ${id} (Acme) was revoked; reconnect it through POST /connections/initiate`,
      );
      const got = await call(h.app, 'GET', `/api/v1/connections/${id}`, { token: u.sessionToken });
      expect(got.json()).toMatchObject({ status: 'revoked', canRefresh: false });
      expect(got.json().lastError).toMatch(/invalid_grant/);
      expect(fake.counts.refresh).toBe(1);

      expect((await execute(h.app, u.sessionToken, id, 'whoami')).statusCode).toBe(400);
      const refresh = await call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: u.sessionToken });
      expect(refresh.statusCode).toBe(400);
      expect(refresh.json().message).toBe(
        'A revoked connection must be reconnected: start again with POST /connections/initiate',
      );
      expect(await refreshExpiringConnections(h.app.deps)).toMatchObject({ refreshed: 0 });
      expect(fake.counts.refresh).toBe(1);
      expect(fake.counts.api).toBe(0);
    });

    it('PUT refresh on an expired connection whose grant the provider revoked answers 200 with status revoked', async () => {
      const { u, id } = await connected();
      await expire(id);
      fake.revokeEverything();
      const res = await call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: u.sessionToken });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ id, status: 'revoked', canRefresh: false });
    });

    it('repeated 5xx: error after 3 consecutive failures, then a success makes it active again', async () => {
      const { u, id } = await connected();
      const refresh = () => call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: u.sessionToken });
      fake.fail('refresh', { status: 503 }, { status: 500 }, { status: 502 });
      // The token itself is still valid: the connection stays usable until the failures add up.
      const first = await refresh();
      expect(first.json()).toMatchObject({ status: 'active', canRefresh: true });
      expect((await rowOf(id)).refreshFailures).toBe(1);
      expect((await refresh()).json().status).toBe('active');
      const third = await refresh();
      expect(third.json()).toMatchObject({ status: 'error', canRefresh: true });
      expect(third.json().lastError).toMatch(/^Acme token endpoint answered 502/);
      const list = await call(h.app, 'GET', '/api/v1/connections?status=error', { token: u.sessionToken });
      expect(list.json().data.map((c: { id: string }) => c.id)).toEqual([id]);

      const ok = await refresh();
      expect(ok.json()).toMatchObject({ status: 'active', lastError: null });
      expect((await rowOf(id)).refreshFailures).toBe(0);
      expect(fake.counts.refresh).toBe(4);
    });

    it('an expired token whose refresh fails is expired (502 for the call); the next success makes it active', async () => {
      const { u, id } = await connected();
      await expire(id);
      fake.fail('refresh', { status: 503 });
      const res = await execute(h.app, u.sessionToken, id, 'whoami');
      expect(res.statusCode).toBe(502);
      expect(res.json().message).toMatch(/^The Acme token of connection conn_\S+ expired and could not be refreshed: /);
      expect((await rowOf(id)).status).toBe('expired');
      const again = await execute(h.app, u.sessionToken, id, 'whoami');
      expect(again.statusCode).toBe(200);
      expect((await rowOf(id)).status).toBe('active');
      expect(fake.counts.refresh).toBe(2);
    });

    it('refresh timeouts count as failures', async () => {
      const app = await h.extraApp({ PROVIDER_TOKEN_TIMEOUT_MS: '150', PROVIDER_REFRESH_MAX_FAILURES: '2' });
      const u = await createUser(app);
      const id = await connectAcme(app, u);
      fake.rotateRefreshTokens = false; // the fake still answers after we gave up: keep its token valid
      fake.fail('refresh', { delayMs: 400 }, { delayMs: 400 });
      const refresh = () => call(app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: u.sessionToken });
      const first = await refresh();
      expect(first.json().status).toBe('active');
      expect((await rowOf(id)).lastError).toBe('Acme did not answer within 150 ms');
      expect((await refresh()).json()).toMatchObject({
        status: 'error',
        lastError: 'Acme did not answer within 150 ms',
      });
      expect((await refresh()).json()).toMatchObject({ status: 'active', lastError: null });
    });
  });

  describe('provider answers to tool calls', () => {
    it('a provider 401 refreshes once and retries; concurrent 401s share that refresh', async () => {
      const { u, id } = await connected();
      const old = await tokenOf(id);
      fake.invalidateAccessTokens();
      // The refresh answers after 1 s, so every one of the ten has met its 401 while it is in flight: on a loaded
      // machine a call could otherwise start after a quick refresh ended and present the new token first.
      fake.fail('refresh', { delayMs: 1000 });
      const results = await Promise.all(Array.from({ length: 10 }, () => execute(h.app, u.sessionToken, id, 'whoami')));
      expect(results.map((r) => r.statusCode)).toEqual(Array(10).fill(200));
      expect(fake.counts.refresh).toBe(1);
      const fresh = await tokenOf(id);
      expect(fake.apiTokens.filter((t) => t === old)).toHaveLength(10);
      expect(fake.apiTokens.filter((t) => t === fresh)).toHaveLength(10);
    });

    it('a second 401 after the refresh marks the connection error (502)', async () => {
      const { u, id } = await connected();
      fake.fail('api', { status: 401 }, { status: 401 });
      const res = await execute(h.app, u.sessionToken, id, 'whoami');
      expect(res.statusCode).toBe(502);
      expect(res.json()).toEqual({
        error: 'BadGatewayError',
        message: `Acme refused the token of connection ${id} (401) even after a refresh; the connection is now error: refresh or reconnect it`,
        statusCode: 502,
      });
      expect(fake.counts.refresh).toBe(1);
      expect(await rowOf(id)).toMatchObject({
        status: 'error',
        canRefresh: true,
        lastError: 'Acme refused the token (401)',
      });
      // A success later brings it back.
      const ok = await call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: u.sessionToken });
      expect(ok.json().status).toBe('active');
    });

    it('a 401 on a token that cannot be refreshed marks it revoked', async () => {
      const { u, id } = await connected();
      await h.database.db
        .update(connections)
        .set({ canRefresh: false, refreshTokenEnc: null })
        .where(eq(connections.id, id));
      fake.invalidateAccessTokens();
      const res = await execute(h.app, u.sessionToken, id, 'whoami');
      expect(res.statusCode).toBe(502);
      expect(await rowOf(id)).toMatchObject({ status: 'revoked', canRefresh: false });
      expect(fake.counts.refresh).toBe(0);
    });

    it('429 with Retry-After is waited for and retried once', async () => {
      const { u, id } = await connected();
      fake.fail('api', { status: 429, headers: { 'retry-after': '1' } });
      const started = Date.now();
      const res = await execute(h.app, u.sessionToken, id, 'whoami');
      expect(res.statusCode).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(fake.counts.api).toBe(2);
    });

    it('429 again after the retry, or a wait beyond PROVIDER_MAX_RETRY_WAIT_MS, is a 429 with Retry-After', async () => {
      const { u, id } = await connected();
      fake.fail(
        'api',
        { status: 429, headers: { 'retry-after': '0' } },
        { status: 429, headers: { 'retry-after': '7' } },
      );
      const res = await execute(h.app, u.sessionToken, id, 'whoami');
      expect(res.statusCode).toBe(429);
      expect(res.headers['retry-after']).toBe('7');
      expect(res.json()).toEqual({
        error: 'TooManyRequestsError',
        message: 'Acme rate limit reached; retry after 7 s',
        statusCode: 429,
      });
      expect(fake.counts.api).toBe(2);

      fake.fail('api', { status: 429, headers: { 'retry-after': '120' } });
      const long = await execute(h.app, u.sessionToken, id, 'whoami');
      expect(long.statusCode).toBe(429);
      expect(long.headers['retry-after']).toBe('120');
      expect(fake.counts.api).toBe(3);
    });

    it('503 is retried once; 500 is a 502 without retry; a slow provider is a 504', async () => {
      const { u, id } = await connected();
      fake.fail('api', { status: 503, headers: { 'retry-after': '0' } });
      expect((await execute(h.app, u.sessionToken, id, 'whoami')).statusCode).toBe(200);
      expect(fake.counts.api).toBe(2);

      fake.fail('api', { status: 500, body: { message: 'database on fire' } });
      const failed = await execute(h.app, u.sessionToken, id, 'whoami');
      expect(failed.statusCode).toBe(502);
      expect(failed.json().message).toBe('Acme failed (500): database on fire');
      expect(fake.counts.api).toBe(3);

      const app = await h.extraApp({ PROVIDER_TIMEOUT_MS: '200' });
      fake.fail('api', { delayMs: 800 });
      const slow = await execute(app, u.sessionToken, id, 'whoami');
      expect(slow.statusCode).toBe(504);
      expect(slow.json()).toEqual({
        error: 'GatewayTimeoutError',
        message: 'Acme did not answer within 200 ms',
        statusCode: 504,
      });
      expect((await rowOf(id)).status).toBe('active');
    });
  });

  describe('crash safety', () => {
    it.runIf(process.env.TEST_DB === 'pg')(
      'a refresh whose database session dies mid-way leaves the row as it was, and the lock is released',
      async () => {
        const { u, id } = await connected();
        fake.rotateRefreshTokens = false;
        const before = await rowOf(id);
        await expire(id);
        // An instance whose sessions this test can single out among the others on the server.
        const name = `sb_crash_${Date.now().toString(36)}`;
        const url = new URL(h.config.databaseUrl ?? '');
        url.searchParams.set('application_name', name);
        const crashyDb = await crashablePostgres(url.toString());
        const crashy = await buildApp({ config: h.config, database: crashyDb, keyRing: h.keyRing, logger: false });
        try {
          fake.fail('refresh', { delayMs: 500 });
          const pending = execute(crashy, u.sessionToken, id, 'whoami');
          // While the refresh waits on the provider, the session holding the row lock dies.
          await new Promise((r) => setTimeout(r, 250));
          const killed = await h.database.db.execute(sql`
            SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
            WHERE application_name = ${name} AND state = 'idle in transaction'`);
          expect(rowsOf(killed)).toHaveLength(1);
          const res = await pending;
          // A database session lost mid-request is an outage, not the client's fault: 503 to retry (issue 39).
          expect(res.statusCode).toBe(503);
          expect(res.headers['retry-after']).toBe('5');
          expect(res.json()).toEqual({
            error: 'ServiceUnavailableError',
            message: 'The database is unavailable; retry shortly',
            statusCode: 503,
          });
        } finally {
          await crashy.close();
          await crashyDb.close();
        }
        const after = await rowOf(id);
        expect(after.accessTokenEnc).toBe(before.accessTokenEnc);
        expect(after.refreshTokenEnc).toBe(before.refreshTokenEnc);
        expect(after.status).toBe('active');
        expect(after.refreshFailures).toBe(0);
        // Nothing is held: the next call refreshes and succeeds.
        const next = await execute(h.app, u.sessionToken, id, 'whoami');
        expect(next.statusCode).toBe(200);
        expect(await tokenOf(id)).not.toBe(h.keyRing.decrypt(before.accessTokenEnc, id));
      },
    );
  });

  describe('recurring refresh', () => {
    it('refreshes tokens expiring soon, leaves the others, marks unrefreshable expired tokens expired', async () => {
      const a = await connected();
      const b = await connected();
      const c = await connected();
      await expire(a.id, new Date(Date.now() + 5 * 60_000));
      await h.database.db
        .update(connections)
        .set({ canRefresh: false, refreshTokenEnc: null, expiresAt: new Date(Date.now() - 1000) })
        .where(eq(connections.id, c.id));
      const aToken = await tokenOf(a.id);
      const bToken = await tokenOf(b.id);
      const result = await refreshExpiringConnections(h.app.deps);
      expect(result.refreshed).toBeGreaterThanOrEqual(1);
      expect(await tokenOf(a.id)).not.toBe(aToken);
      expect(await tokenOf(b.id)).toBe(bToken);
      expect((await rowOf(c.id)).status).toBe('expired');
      const use = await execute(h.app, c.u.sessionToken, c.id, 'whoami');
      expect(use.statusCode).toBe(400);
      expect(use.json().message).toBe(
        `The Acme token of connection ${c.id} expired and cannot be refreshed; reconnect it`,
      );
    });
  });

  describe('for the agent and MCP', () => {
    it('listActiveConnections and providerAgentTools: prefixed names, write tools hidden for read, connector filter', async () => {
      const { u, id } = await connected();
      // acme-team asks for a workspace after OAuth: pending, not an active connection yet.
      const pending = await authorize(h.app, u.sessionToken, { providerId: 'acme-team', redirectUrl: APP_REDIRECT });
      expect(pending.searchParams.get('pendingId')).toMatch(/^pcn_/);

      const active = await listActiveConnections(u.ctx);
      expect(active.map((c) => c.id)).toEqual([id]);

      const tools = await providerAgentTools(u.ctx, {});
      expect(tools.map((t) => t.name)).toEqual(['acme_list_items', 'acme_get_item', 'acme_create_item', 'acme_whoami']);
      expect(tools.every((t) => t.source === 'acme')).toBe(true);

      const readCtx: ServiceContext = {
        ...u.ctx,
        actor: { ...u.ctx.actor, providerPermissions: { acme: 'read' } },
      };
      const readTools = await providerAgentTools(readCtx, { connector: 'acme' });
      expect(readTools.map((t) => t.name)).toEqual(['acme_list_items', 'acme_get_item', 'acme_whoami']);
      expect(await providerAgentTools(u.ctx, { connector: 'github' })).toEqual([]);

      const whoami = tools.find((t) => t.name === 'acme_whoami');
      expect(await whoami?.run({}, new AbortController().signal)).toMatchObject({ id: 'u-1001', plan: 'pro' });
      const create = tools.find((t) => t.name === 'acme_create_item');
      await expect(create?.run({ title: '' }, new AbortController().signal)).rejects.toMatchObject({ statusCode: 422 });
    });
  });
});

/**
 * A PostgreSQL database like openDatabase's, whose checked-out clients survive their session being killed:
 * node-postgres emits `error` on a client in use when its server session dies, and without a listener that
 * is an uncaught exception. (openDatabase attaches none to clients in use; see the report on db/client.ts.)
 */
async function crashablePostgres(url: string): Promise<Database> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = drizzle({ client: pool, schema }) as unknown as Db;
  return {
    db,
    asyncCommitDb: db,
    driver: 'pg',
    migrate: async () => {},
    ping: async () => {},
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    listen: async () => async () => {},
    close: () => pool.end(),
  };
}
