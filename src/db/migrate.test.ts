import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { pgTestDatabaseUrl, testDatabaseTarget } from '../../test/test-database.ts';
import { type Database, MIGRATIONS_DIR, openDatabase } from './client.ts';

/**
 * Every instance migrates on start (src/runtime.ts), so a cluster's instances started together all migrate one
 * fresh database at once: the advisory lock makes them take turns, and every one of them starts. PostgreSQL only
 * (the embedded database serves one process).
 */
describe.runIf(testDatabaseTarget().kind === 'pg')('migrations started by several instances at once', () => {
  it('all succeed, each migration applied once, the schema complete', async () => {
    const admin = pgTestDatabaseUrl();
    const name = `sb_migrate_${Date.now()}_${randomBytes(3).toString('hex')}`;
    const run = async (statement: string) => {
      const client = new pg.Client({ connectionString: admin });
      await client.connect();
      try {
        return await client.query(statement);
      } finally {
        await client.end();
      }
    };
    await run(`CREATE DATABASE ${name}`);
    const url = new URL(admin);
    url.pathname = `/${name}`;
    const databases: Database[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        databases.push(await openDatabase({ databaseUrl: url.toString(), dataDir: tmpdir(), poolMax: 2 }));
      }
      const results = await Promise.allSettled(databases.map((d) => d.migrate()));
      expect(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))).toEqual(['ok', 'ok', 'ok', 'ok']);
      const journal = JSON.parse(readFileSync(join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as {
        entries: unknown[];
      };
      const check = new pg.Client({ connectionString: url.toString() });
      await check.connect();
      try {
        const applied = await check.query('SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations');
        expect(applied.rows[0].n).toBe(journal.entries.length);
        // The last migration's table is there: the schema is whole, not half of one instance's run.
        const tables = await check.query("SELECT to_regclass('public.accounts') IS NOT NULL AS ok");
        expect(tables.rows[0].ok).toBe(true);
      } finally {
        await check.end();
      }
    } finally {
      for (const d of databases) await d.close();
      await run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  });
});
