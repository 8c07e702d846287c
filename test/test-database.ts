import { inject } from 'vitest';
import { workerSlotDatabaseUrl } from './worker-slot.ts';

/** Where this test file's database comes from (test/global-setup.ts prepares it once a run). */
export type TestDatabaseTarget =
  | { kind: 'pg'; url: string; template: string }
  | { kind: 'pglite'; template: string; runDir: string };

/**
 * This worker's database: on PostgreSQL the database of its worker slot (`VITEST_POOL_ID`, unique among the files
 * running at one time), so that files running side by side never meet each other's rows, as on PGlite, where each
 * worker has a copy of the template (test/harness.ts).
 */
export function testDatabaseTarget(): TestDatabaseTarget {
  const provided = inject('testDatabase');
  if (provided.kind === 'pglite') return provided;
  return { kind: 'pg', url: workerSlotDatabaseUrl(provided.urls), template: provided.template };
}

/** This worker's PostgreSQL database (for the files and describes that run on PostgreSQL only). */
export function pgTestDatabaseUrl(): string {
  const target = testDatabaseTarget();
  if (target.kind !== 'pg') throw new Error('This test runs on PostgreSQL only (TEST_DB=pg)');
  return target.url;
}
