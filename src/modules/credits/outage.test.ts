import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { eq } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { createHarness, createUser, FAKE_MODELS, type TestHarness, testConfig } from '../../../test/harness.ts';
import { pgTestDatabaseUrl, testDatabaseTarget } from '../../../test/test-database.ts';
import { buildApp, loggerOptions } from '../../app.ts';
import { openDatabase } from '../../db/client.ts';
import { accounts, creditHolds, creditTransactions } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';
import { JOURNAL_DIR } from './journal.ts';
import { returnIdleLeases } from './service.ts';

/** Polls `check` until it answers true (every 100 ms, at most 20 s). */
async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const OUTAGE_MS = 10_000;
/** Each answer's cost at FAKE_MODELS' rates: 10 prompt tokens at 1 credit, 5 completion tokens at 2. */
const COST = 20;

/**
 * Issue 39: charges of calls answered while the database is unreachable are kept (in memory, and journaled under
 * DATA_DIR) until it answers again, then written exactly once. A database outage needs a PostgreSQL server:
 * PGlite runs in this process and cannot be cut off.
 */
describe.skipIf(testDatabaseTarget().kind !== 'pg')('credit charges across a database outage (PostgreSQL)', () => {
  let h: TestHarness;
  let fake: FakeLlm;
  /** On the run's database: a database cannot close itself to connections. */
  let admin: pg.Client;
  let dbName = '';
  let url = '';
  const dirs: string[] = [];

  beforeAll(async () => {
    fake = await startFakeLlm();
    h = await createHarness({ LLM_BASE_URL: fake.url, LLM_MODELS: FAKE_MODELS }, { privateDatabase: true });
    url = h.config.databaseUrl ?? '';
    dbName = new URL(url).pathname.slice(1);
    admin = new pg.Client({ connectionString: pgTestDatabaseUrl() });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`).catch(() => {});
    await admin?.end().catch(() => {});
    await h?.close();
    await fake?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** An instance of its own: its own connections, its own DATA_DIR, and a log the test reads. */
  async function instance(dataDir: string) {
    const lines: Array<{ level: number; msg: string }> = [];
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    });
    const database = await openDatabase({ databaseUrl: url, dataDir, poolMax: 3 });
    const app: App = await buildApp({
      config: testConfig(dataDir, { DATABASE_URL: url, LLM_BASE_URL: fake.url, LLM_MODELS: FAKE_MODELS }),
      database,
      keyRing: h.keyRing,
      logger: { ...(loggerOptions('info') as object), stream } as never,
    });
    await app.ready();
    return {
      app,
      lines,
      credits: () => lines.filter((l) => /^credits/.test(l.msg)).map((l) => [l.level, l.msg]),
      async close() {
        await app.close();
        await database.close();
      },
    };
  }

  const newDataDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-charges-'));
    dirs.push(dir);
    return dir;
  };

  async function account(id: string) {
    const db = h.database.db;
    const ledger = await db.select().from(creditTransactions).where(eq(creditTransactions.accountId, id));
    const [row] = await db.select().from(accounts).where(eq(accounts.id, id));
    const holds = await db.select().from(creditHolds).where(eq(creditHolds.accountId, id));
    return {
      charges: ledger.filter((r) => r.type === 'llm'),
      ledger: ledger.reduce((a, r) => a + r.amount, 0),
      balance: row?.creditBalance ?? Number.NaN,
      holds,
    };
  }

  /** Ten paid calls the upstream holds until `answer` is called: in flight when the database goes away. */
  async function tenHeldCalls(app: App, pat: string) {
    let answer = () => {};
    const gate = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const before = fake.requests.length;
    fake.enqueue(
      ...Array.from({ length: 10 }, () => ({ content: 'answered', usage: { prompt: 10, completion: 5 }, until: gate })),
    );
    const calls = Array.from({ length: 10 }, () =>
      app.inject({
        method: 'POST',
        url: '/api/v1/chat/completions',
        headers: { authorization: `Bearer ${pat}` },
        payload: { model: 'fake-model', messages: [{ role: 'user', content: 'q' }], max_tokens: 20 },
      }),
    );
    await until('the ten calls at the upstream', () => fake.requests.length === before + 10);
    return {
      async answered() {
        answer();
        return Promise.all(calls);
      },
    };
  }

  /** The outage: no new connections to the test's database, and every session on it ended. */
  async function cutDatabase(): Promise<number> {
    await admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS false`);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [dbName]);
    return Date.now();
  }
  const restoreDatabase = () => admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`);

  it('ten calls answered during a 10 s outage are each charged once when it ends, and the balance matches', async () => {
    const inst = await instance(newDataDir());
    try {
      const u = await createUser(h.app);
      const pat = await u.pat(['llm-all']);
      const held = await tenHeldCalls(inst.app, pat);
      const cut = await cutDatabase();
      const answers = await held.answered();
      expect(answers.map((r) => r.statusCode)).toEqual(answers.map(() => 200));
      expect(answers.map((r) => r.headers['x-credits-consumed'])).toEqual(answers.map(() => String(COST)));
      // The outage lasts its ten seconds (the retries of today's code gave up after about 350 ms).
      await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - cut))));
      await restoreDatabase();

      await until('the ten charges in the ledger', async () => (await account(u.account.id)).charges.length >= 10);
      await returnIdleLeases(inst.app.deps);
      const after = await account(u.account.id);
      expect(after.charges.map((r) => r.amount)).toEqual(Array.from({ length: 10 }, () => -COST));
      expect(after.holds).toEqual([]);
      expect(after.balance).toBe(after.ledger);
      expect(after.balance).toBe(u.account.creditBalance - 10 * COST);
      // The outage and the recovery are logged once each, whatever the number of retries.
      expect(inst.credits()).toEqual([
        [40, 'credits: the database is unreachable; charges are kept until it answers'],
        [30, 'credits: the database answers again; the charges kept meanwhile are written'],
      ]);
    } finally {
      await restoreDatabase();
      await inst.close();
    }
  }, 60_000);

  it('charges journaled during an outage survive a restart, and are written once however often replayed', async () => {
    const dataDir = newDataDir();
    const first = await instance(dataDir);
    const u = await createUser(h.app);
    const pat = await u.pat(['llm-all']);
    let saved = '';
    try {
      const held = await tenHeldCalls(first.app, pat);
      await cutDatabase();
      const answers = await held.answered();
      expect(answers.map((r) => r.statusCode)).toEqual(answers.map(() => 200));
      await until('the outage noticed', () => first.credits().length > 0);
      // What a crash now would leave behind (replayed last, once its charges are written).
      saved = mkdtempSync(join(tmpdir(), 'sb-journal-'));
      dirs.push(saved);
      cpSync(join(dataDir, JOURNAL_DIR), saved, { recursive: true });
      // Stopped before the database is back: the charges stay in the journal.
      await first.close();
      expect(first.credits().at(-1)).toEqual([
        40,
        'credits: stopping with charges unwritten; they stay in the journal under DATA_DIR and the next start writes them',
      ]);
    } finally {
      await restoreDatabase();
    }
    expect((await account(u.account.id)).charges).toEqual([]);

    // A new instance on the same DATA_DIR writes the journaled charges, and gives the old instance's leases back.
    const second = await instance(dataDir);
    try {
      await until('the ten charges in the ledger', async () => (await account(u.account.id)).charges.length >= 10);
      await returnIdleLeases(second.app.deps);
    } finally {
      await second.close();
    }
    const after = await account(u.account.id);
    expect(after.charges.map((r) => r.amount)).toEqual(Array.from({ length: 10 }, () => -COST));
    expect(after.holds).toEqual([]);
    expect(after.balance).toBe(after.ledger);
    expect(after.balance).toBe(u.account.creditBalance - 10 * COST);
    expect(readdirSync(join(dataDir, JOURNAL_DIR))).toEqual([]);

    // The journal as a crash during the outage left it, replayed after its charges were written: nothing changes.
    cpSync(saved, join(dataDir, JOURNAL_DIR), { recursive: true });
    const third = await instance(dataDir);
    try {
      await returnIdleLeases(third.app.deps);
    } finally {
      await third.close();
    }
    expect(await account(u.account.id)).toEqual(after);
    expect(readdirSync(join(dataDir, JOURNAL_DIR))).toEqual([]);
  }, 60_000);
});
