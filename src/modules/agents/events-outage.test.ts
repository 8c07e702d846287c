import { PassThrough } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import { pgTestDatabaseUrl, testDatabaseTarget } from '../../../test/test-database.ts';
import { buildApp, loggerOptions } from '../../app.ts';
import { type Database, openDatabase } from '../../db/client.ts';
import type { App } from '../../http/types.ts';
import { NOTIFY_CHANNEL } from '../../lib/notifications.ts';
import { SseParser } from '../../lib/sse.ts';

/** Polls `check` until it answers true (every 100 ms, at most 20 s). */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

// A database outage needs a PostgreSQL server (PGlite is in this process: its notifications cannot be cut off).
describe.skipIf(testDatabaseTarget().kind !== 'pg')('conversation events across a database outage (PostgreSQL)', () => {
  let h: TestHarness;
  let database: Database;
  let other: App;
  const lines: Array<{ level: number; msg: string }> = [];
  /** A session that outlives the outage (the terminations spare it): writes what is stored while the others are refused. */
  let survivor: pg.Client;
  let survivorPid = 0;
  /** On the run's database: a database cannot close itself to connections. */
  let admin: pg.Client;
  let dbName = '';

  beforeAll(async () => {
    // No model is ever called: an upstream is configured only so agents can be made.
    h = await createHarness(
      { LLM_BASE_URL: 'http://127.0.0.1:9', LLM_MODELS: 'fake-model=1000000/2000000' },
      { privateDatabase: true },
    );
    const url = h.config.databaseUrl ?? '';
    dbName = new URL(url).pathname.slice(1);
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    });
    // The instance under test: its own connections (its own notification listener) and a log we read.
    database = await openDatabase({ databaseUrl: url, dataDir: h.config.dataDir, poolMax: 3 });
    other = await buildApp({
      config: h.config,
      database,
      keyRing: h.keyRing,
      logger: { ...(loggerOptions('info') as object), stream } as never,
    });
    await other.listen({ port: 0, host: '127.0.0.1' });
    survivor = new pg.Client({ connectionString: url });
    survivor.on('error', () => {});
    await survivor.connect();
    survivorPid = (await survivor.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0;
    admin = new pg.Client({ connectionString: pgTestDatabaseUrl() });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`).catch(() => {});
    await admin?.end().catch(() => {});
    await survivor?.end().catch(() => {});
    await other?.close();
    await database?.close();
    await h?.close();
  });

  const readyz = async () => {
    const addr = other.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const storeEvent = async (conversationId: string, content: string) => {
    await survivor.query(
      `INSERT INTO conversation_events (conversation_id, type, data, created_at) VALUES ($1, 'message.delta', $2::jsonb, now())`,
      [conversationId, JSON.stringify({ content })],
    );
    await survivor.query('SELECT pg_notify($1, $2)', [NOTIFY_CHANNEL, conversationId]);
  };

  it('a live subscriber gets what was written during and after the outage, without subscribing again', async () => {
    const u = await createUser(h.app);
    const made = await call(h.app, 'POST', '/api/v1/agents', { token: u.sessionToken, body: { name: 'O' } });
    expect(made.statusCode, made.body).toBe(201);
    const agent = made.json().id;
    const conversation = (
      await call(h.app, 'POST', `/api/v1/agents/${agent}/conversations`, { token: u.sessionToken, body: {} })
    ).json().id;
    const addr = other.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    const ac = new AbortController();
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/agents/${agent}/conversations/${conversation}/events`, {
      headers: { authorization: `Bearer ${u.sessionToken}` },
      signal: ac.signal,
    });
    expect(res.status).toBe(200);
    // The one subscription, read as it arrives, for the whole test.
    const received: string[] = [];
    const parser = new SseParser();
    const reading = (async () => {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        for (const e of parser.push(chunk)) if (e.event) received.push(JSON.parse(e.data).content);
      }
    })().catch(() => {});
    const readiness: Array<{ status: number; body: Record<string, unknown> }> = [];
    try {
      expect((await readyz()).status).toBe(200);
      // The outage: no new connections to this database, and every session but the survivor's ended.
      await admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> $2', [
        dbName,
        survivorPid,
      ]);
      await until('/readyz to report the listener', async () => {
        const r = await readyz();
        readiness.push(r);
        return r.status === 503 && /listener/.test(String(r.body.message));
      });
      // Stored during the outage: its notification reaches no listener.
      await storeEvent(conversation, 'during the outage');
      await new Promise((r) => setTimeout(r, 3000));
      await admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`);
      await until('/readyz 200 again', async () => (await readyz()).status === 200);
      // Replayed from the store once the listener is back, before anything else is written.
      await until('the event stored during the outage', async () => received.length > 0);
      expect(received).toEqual(['during the outage']);
      // And live notifications are heard again.
      await storeEvent(conversation, 'after the outage');
      await until('the event stored after the outage', async () => received.length > 1);
      expect(received).toEqual(['during the outage', 'after the outage']);
    } finally {
      ac.abort();
      await reading;
    }

    expect(readiness.at(-1)).toEqual({
      status: 503,
      body: {
        error: 'ServiceUnavailableError',
        message: 'Database unreachable; notification listener reconnecting',
        statusCode: 503,
      },
    });
    const outage = lines.filter((l) => /notification listener/i.test(l.msg));
    expect(outage.map((l) => [l.level, l.msg])).toEqual([
      [40, 'Notification listener lost its database connection; reconnecting'],
      [30, 'Notification listener reconnected; subscribers re-read what they missed'],
    ]);
  });
});
