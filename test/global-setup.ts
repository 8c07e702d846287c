import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { MIGRATIONS_DIR, openDatabase } from '../src/db/client.ts';
import { testTmpDir } from './tmp-dir.ts';

/**
 * Settings of every test database on PostgreSQL: commits do not wait for the WAL to reach the disk. What a
 * test can see is unchanged (visibility, locks, isolation); only a crash of the server itself could lose the
 * last commits, which no test does. On the CI machine a commit otherwise waits on a busy disk.
 */
export const PG_TEST_DATABASE_SETTINGS = 'SET synchronous_commit = off';

/** Runs one statement on the server of `url` (a fresh connection: CREATE/DROP DATABASE). */
export async function adminQuery(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** `url` with another database name. */
export function databaseUrl(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Prepares the database every test file starts from, once per run:
 * - PGlite (default): a migrated data directory used as a template, cached by a hash of the migrations; each
 *   worker's shared database, and each database a file asks of its own, is a copy of it (test/harness.ts).
 * - PostgreSQL (`TEST_DB=pg`): a migrated template database on the server of `TEST_DATABASE_URL`, and a database
 *   a worker slot cloned from it (`CREATE DATABASE … TEMPLATE`); a file that needs a database of its own clones
 *   the template too, instead of migrating one (seconds each). All are dropped afterwards.
 */
export async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.TEST_DB === 'pg') {
    const admin = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const name = `sb_test_${Date.now()}_${randomBytes(3).toString('hex')}`;
    const template = `${name}_template`;
    await adminQuery(admin, `CREATE DATABASE ${template}`);
    await adminQuery(admin, `ALTER DATABASE ${template} ${PG_TEST_DATABASE_SETTINGS}`);
    const database = await openDatabase({ databaseUrl: databaseUrl(admin, template), dataDir: tmpdir() });
    await database.migrate();
    await database.close();
    // A database a worker slot (test/test-database.ts): files that run side by side never share one.
    const names = Array.from({ length: project.config.maxWorkers ?? 1 }, (_, i) => `${name}_${i + 1}`);
    for (const slot of names) {
      await adminQuery(admin, `CREATE DATABASE ${slot} TEMPLATE ${template}`);
      await adminQuery(admin, `ALTER DATABASE ${slot} ${PG_TEST_DATABASE_SETTINGS}`);
    }
    project.provide('testDatabase', { kind: 'pg', urls: names.map((slot) => databaseUrl(admin, slot)), template });
    return async () => {
      for (const slot of [...names, template]) await adminQuery(admin, `DROP DATABASE IF EXISTS ${slot} WITH (FORCE)`);
    };
  }

  const hash = createHash('sha256');
  for (const f of readdirSync(MIGRATIONS_DIR, { recursive: true }).map(String).sort()) {
    if (f.endsWith('.sql') || f.endsWith('.json')) hash.update(f).update(readFileSync(join(MIGRATIONS_DIR, f)));
  }
  const template = join(testTmpDir(), `switchboard-test-template-${hash.digest('hex').slice(0, 16)}`);
  if (!existsSync(join(template, 'pgdata', 'PG_VERSION'))) {
    const building = `${template}.${process.pid}`;
    rmSync(building, { recursive: true, force: true });
    mkdirSync(building, { recursive: true });
    const database = await openDatabase({ dataDir: building });
    await database.migrate();
    await database.close();
    rmSync(template, { recursive: true, force: true });
    try {
      renameSync(building, template);
    } catch {
      cpSync(building, template, { recursive: true });
    }
  }
  // The workers' shared databases (test/harness.ts), removed with the run.
  const runDir = mkdtempSync(join(testTmpDir(), 'sb-test-run-'));
  project.provide('testDatabase', { kind: 'pglite', template, runDir });
  return async () => {
    rmSync(runDir, { recursive: true, force: true });
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** On PostgreSQL, a database a worker slot (test/test-database.ts picks this worker's). */
    testDatabase:
      | { kind: 'pg'; urls: string[]; template: string }
      | { kind: 'pglite'; template: string; runDir: string };
  }
}
