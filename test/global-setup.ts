import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { MIGRATIONS_DIR, openDatabase } from '../src/db/client.ts';

/**
 * Prepares the database every test file starts from, once per run:
 * - PGlite (default): a migrated data directory used as a template; each test file copies it (initdb is
 *   ~3 s, a copy and reopen well under one). The template is cached by a hash of the migrations.
 * - PostgreSQL (`TEST_DB=pg`): a fresh database on the server of `TEST_DATABASE_URL`, dropped afterwards.
 */
export async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.TEST_DB === 'pg') {
    const admin = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const name = `sb_test_${Date.now()}_${randomBytes(3).toString('hex')}`;
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    await client.query(`CREATE DATABASE ${name}`);
    await client.end();
    const url = new URL(admin);
    url.pathname = `/${name}`;
    const database = await openDatabase({ databaseUrl: url.toString(), dataDir: tmpdir() });
    await database.migrate();
    await database.close();
    project.provide('testDatabase', { kind: 'pg', url: url.toString() });
    return async () => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    };
  }

  const hash = createHash('sha256');
  for (const f of readdirSync(MIGRATIONS_DIR, { recursive: true }).map(String).sort()) {
    if (f.endsWith('.sql') || f.endsWith('.json')) hash.update(f).update(readFileSync(join(MIGRATIONS_DIR, f)));
  }
  const template = join(tmpdir(), `switchboard-test-template-${hash.digest('hex').slice(0, 16)}`);
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
  project.provide('testDatabase', { kind: 'pglite', template });
  return async () => {};
}

declare module 'vitest' {
  export interface ProvidedContext {
    testDatabase: { kind: 'pg'; url: string } | { kind: 'pglite'; template: string };
  }
}
