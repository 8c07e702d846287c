import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness } from '../../test/harness.ts';
import { pgTestDatabaseUrl, testDatabaseTarget } from '../../test/test-database.ts';
import type { App } from './types.ts';

/**
 * A database outage on PostgreSQL, made without touching the server: the test's private database refuses new
 * connections and its sessions are ended, then it is opened again. PGlite is in-process: it has no outage.
 */
describe.skipIf(testDatabaseTarget().kind !== 'pg')('database outage (PostgreSQL only: PGlite runs in-process)', () => {
  let h: TestHarness;
  let admin: pg.Client;
  let dbName: string;
  beforeAll(async () => {
    // Low limits, so that counting the refused requests against the caller would show.
    h = await createHarness({ RATE_LIMIT_GLOBAL: '3', RATE_LIMIT_AUTH: '3' }, { privateDatabase: true });
    const url = new URL(pgTestDatabaseUrl());
    dbName = new URL(h.config.databaseUrl ?? '').pathname.slice(1);
    admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`).catch(() => {});
    await admin?.end();
    await h?.close();
  });

  /** The first answer that is not the outage's 503: the service finds the database back by itself (ping). */
  async function statusOnceBack(app: App, token: string): Promise<number> {
    for (let i = 0; i < 200; i++) {
      const res = await call(app, 'GET', '/api/v1/accounts/me', { token });
      if (res.statusCode !== 503) return res.statusCode;
      await new Promise((r) => setTimeout(r, 50));
    }
    return 503;
  }

  async function outage(on: boolean): Promise<void> {
    await admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS ${on ? 'false' : 'true'}`);
    if (on) {
      await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [dbName],
      );
    }
  }

  it('answers 503 with Retry-After while the database is down, and the caller is not rate limited after', async () => {
    const user = await createUser(h.app);
    expect((await call(h.app, 'GET', '/api/v1/accounts/me', { token: user.sessionToken })).statusCode).toBe(200);
    await outage(true);
    try {
      // More requests than the limit: none is the caller's fault, so none is counted against it.
      for (let i = 0; i < 5; i++) {
        const res = await call(h.app, 'GET', '/api/v1/accounts/me', { token: user.sessionToken });
        expect(res.statusCode).toBe(503);
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
        expect(res.json()).toEqual({
          error: 'ServiceUnavailableError',
          message: 'The database is unavailable; retry shortly',
          statusCode: 503,
        });
      }
    } finally {
      await outage(false);
    }
    expect(await statusOnceBack(h.app, user.sessionToken)).toBe(200);
    // An unknown token is a real refusal: it still counts against the address (3 per window here).
    const bad = [];
    for (let i = 0; i < 4; i++)
      bad.push((await call(h.app, 'GET', '/api/v1/accounts/me', { token: 'pat_unknown' })).statusCode);
    expect(bad).toEqual([401, 401, 401, 429]);
  });

  it('once /readyz answers 200 again, requests are served: a balancer puts back only an instance that serves', async () => {
    const user = await createUser(h.app);
    await outage(true);
    try {
      expect((await call(h.app, 'GET', '/api/v1/accounts/me', { token: user.sessionToken })).statusCode).toBe(503);
    } finally {
      await outage(false);
    }
    for (let i = 0; i < 200 && (await call(h.app, 'GET', '/readyz')).statusCode !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await call(h.app, 'GET', '/api/v1/accounts/me', { token: user.sessionToken })).statusCode).toBe(200);
  });

  it('a token cached from before the outage: its requests answer 503 too and spend none of the account budget', async () => {
    // The token cache outlives the outage's start, so requests pass the guard and meet the database in the route.
    const app = await h.extraApp({ AUTH_CACHE_TTL_MS: '600000' });
    const user = await createUser(app);
    expect((await call(app, 'GET', '/api/v1/accounts/me', { token: user.sessionToken })).statusCode).toBe(200);
    await outage(true);
    const during: number[] = [];
    try {
      for (let i = 0; i < 5; i++)
        during.push((await call(app, 'GET', '/api/v1/accounts/me', { token: user.sessionToken })).statusCode);
    } finally {
      await outage(false);
    }
    expect(during).toEqual([503, 503, 503, 503, 503]);
    // Once the database answers again (the service notices by itself), the account still has its budget.
    expect(await statusOnceBack(app, user.sessionToken)).toBe(200);
  });
});
