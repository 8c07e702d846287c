import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseTarget } from '../../test/test-database.ts';
import { isUniqueViolation } from '../lib/errors.ts';
import { type Database, openDatabase } from './client.ts';
import { RemotePglite } from './pglite-remote.ts';
import { rowsOf } from './rows.ts';

/**
 * The embedded database on its own thread behaves as PGlite in the process did: what drizzle and the services
 * rely on (transactions, PostgreSQL's error fields, notifications, drizzle's row shapes), and a process that
 * never closes it still ends. PGlite only.
 */
describe.runIf(testDatabaseTarget().kind === 'pglite')('the embedded database on its own thread', () => {
  let dir: string;
  let database: Database;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-remote-'));
    cpSync(testDatabaseTarget().template, dir, { recursive: true });
    database = await openDatabase({ dataDir: dir });
    await database.db.execute(sql`CREATE TABLE remote_t (id int PRIMARY KEY, at timestamptz, doc jsonb)`);
  });
  afterAll(async () => {
    await database?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers rows as drizzle reads them: timestamps as PostgreSQL wrote them, JSON parsed, int8 as numbers', async () => {
    await database.db.execute(
      sql`INSERT INTO remote_t VALUES (1, '2026-11-27T10:00:00Z', ${JSON.stringify({ a: [1, 'b'] })}::jsonb)`,
    );
    const rows = rowsOf(
      await database.db.execute(sql`SELECT id, at, doc, 9007199254740991::int8 AS big FROM remote_t WHERE id = 1`),
    );
    expect(rows).toEqual([{ id: 1, at: '2026-11-27 10:00:00+00', doc: { a: [1, 'b'] }, big: 9007199254740991 }]);
    // The array types too (the thread sets them as text after PGlite's start-up installs their parsers).
    const arrays = rowsOf(
      await database.db.execute(
        sql`SELECT ARRAY[at] AS ats, ARRAY[at::date] AS days, ARRAY[interval '1 day'] AS spans FROM remote_t WHERE id = 1`,
      ),
    );
    expect(arrays).toEqual([{ ats: '{"2026-11-27 10:00:00+00"}', days: '{2026-11-27}', spans: '{"1 day"}' }]);
  });

  it('commits a transaction that returns and rolls back one that throws, with its error', async () => {
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`INSERT INTO remote_t (id) VALUES (2)`);
    });
    const boom = new Error('changed my mind');
    await expect(
      database.db.transaction(async (tx) => {
        await tx.execute(sql`INSERT INTO remote_t (id) VALUES (3)`);
        throw boom;
      }),
    ).rejects.toBe(boom);
    const { rows } = (await database.db.execute(
      sql`SELECT id FROM remote_t WHERE id IN (2, 3) ORDER BY id`,
    )) as unknown as {
      rows: unknown[];
    };
    expect(rows).toEqual([{ id: 2 }]);
  });

  it("keeps PostgreSQL's error fields, so a unique violation is told apart", async () => {
    const err = await database.db.execute(sql`INSERT INTO remote_t (id) VALUES (1)`).catch((e: unknown) => e);
    expect(isUniqueViolation(err)).toBe(true);
    const cause = (err as { cause?: Record<string, unknown> }).cause;
    expect(cause).toMatchObject({ code: '23505', constraint: 'remote_t_pkey', table: 'remote_t' });
  });

  it('runs a statement from outside a transaction after the transaction ends, as PGlite does', async () => {
    const order: string[] = [];
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => {
      inside = resolve;
    });
    const tx = database.db.transaction(async (t) => {
      await t.execute(sql`INSERT INTO remote_t (id) VALUES (4)`);
      inside();
      await new Promise((resolve) => setTimeout(resolve, 50));
      order.push('transaction');
    });
    await entered;
    const outside = database.db
      .execute(sql`SELECT count(*)::int AS n FROM remote_t WHERE id = 4`)
      .then((r) => order.push(`outside saw ${rowsOf<{ n: number }>(r)[0]?.n}`));
    await Promise.all([tx, outside]);
    expect(order).toEqual(['transaction', 'outside saw 1']);
  });

  it('delivers notifications to each listener until it stops listening', async () => {
    const a: string[] = [];
    const b: string[] = [];
    const stopA = await database.listen('remote_c', (p) => a.push(p));
    const stopB = await database.listen('remote_c', (p) => b.push(p));
    await database.db.execute(sql`SELECT pg_notify('remote_c', 'one')`);
    await stopA();
    await database.db.execute(sql`SELECT pg_notify('remote_c', 'two')`);
    await database.ping();
    await stopB();
    expect(a).toEqual(['one']);
    expect(b).toEqual(['one', 'two']);
  });

  it('refuses a parameter it cannot send, statements once closed, and a failed start says why', async () => {
    const other = mkdtempSync(join(tmpdir(), 'sb-remote-'));
    try {
      cpSync(testDatabaseTarget().template, other, { recursive: true });
      const client = await RemotePglite.open(join(other, 'pgdata'), []);
      // A parameter that cannot cross to the thread is refused, and the next statement is served.
      await expect(client.query('SELECT $1::text AS v', [() => 1])).rejects.toThrow(/could not be cloned/);
      await expect(client.query('SELECT $1::text AS v', ['ok'])).resolves.toMatchObject({ rows: [{ v: 'ok' }] });
      // Dates stay text without parsers too; a caller's parser for another type runs here, on the text.
      const parsed = await client.query("SELECT '2026-11-27'::date AS d, 41 AS n", [], {
        parsers: { 23: (value) => Number(value) + 1 },
      });
      expect(parsed.rows).toEqual([{ d: '2026-11-27', n: 42 }]);
      await client.close();
      await expect(client.query('SELECT 1')).rejects.toThrow('The embedded database is closed');
      await expect(RemotePglite.open(join(other, 'pgdata'), ['-c', 'no_such_setting=1'])).rejects.toThrow(
        'PGlite failed to initialize properly',
      );
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("refreshes a growing table's planner statistics, which PGlite's missing autovacuum never would", async () => {
    const other = mkdtempSync(join(tmpdir(), 'sb-remote-'));
    try {
      cpSync(testDatabaseTarget().template, other, { recursive: true });
      const client = await RemotePglite.open(join(other, 'pgdata'), [], 50);
      const stats = async () =>
        (
          await client.query<{ pages: number; tuples: number }>(
            "SELECT relpages AS pages, reltuples::int AS tuples FROM pg_class WHERE relname = 'grown'",
          )
        ).rows[0];
      await client.exec('CREATE TABLE grown (id int PRIMARY KEY, note text)');
      // Never analyzed: PostgreSQL records -1 rows until ANALYZE or VACUUM runs.
      expect(await stats()).toEqual({ pages: 0, tuples: -1 });
      await client.query("INSERT INTO grown SELECT n, 'row ' || n FROM generate_series(1, 20000) AS n");
      await expect.poll(stats, { timeout: 5000, interval: 50 }).toMatchObject({ tuples: 20000 });
      expect((await stats())?.pages).toBeGreaterThan(8);
      // A tenth more rows: analyzed again.
      await client.query("INSERT INTO grown SELECT n, 'row ' || n FROM generate_series(20001, 24000) AS n");
      await expect.poll(stats, { timeout: 5000, interval: 50 }).toMatchObject({ tuples: 24000 });
      await client.close();
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('lets a process that never closes the database end once its statements are answered', async () => {
    const other = mkdtempSync(join(tmpdir(), 'sb-remote-'));
    try {
      cpSync(testDatabaseTarget().template, other, { recursive: true });
      // The statement is answered, the database is never closed: the process ends of itself.
      const script = join(other, 'unclosed.mts');
      writeFileSync(
        script,
        `import { RemotePglite } from ${JSON.stringify(join(import.meta.dirname, 'pglite-remote.ts'))};\n` +
          `const c = await RemotePglite.open(${JSON.stringify(join(other, 'pgdata'))}, []);\n` +
          "console.log((await c.query<{ n: number }>('SELECT 41 + 1 AS n')).rows[0]?.n);\n",
      );
      const run = promisify(execFile)(process.execPath, ['--import', 'tsx', script], { timeout: 20_000 });
      await expect(run).resolves.toMatchObject({ stdout: '42\n' });
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
