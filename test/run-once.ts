import { DATABASE_FREE_GLOBS, isDatabaseFree } from './database-free.ts';

/**
 * The test files CI runs on one database only. `.ci/run` runs both databases' suites side by side with
 * `TEST_RUN_ONCE=1`, and each run then leaves out the files assigned to the other; `npm test` and `npm run
 * test:pg` without it run every file.
 * - In the PostgreSQL run: the files that open no database (test/database-free.ts).
 * - In the PGlite run: the pages driven in chromium, and the started service's handling of trickled request
 *   bodies and of its own child processes and logs. They reach the database only through the services, whose own
 *   tests run on both databases; test/run-once.unit.test.ts fails when one of them runs or skips a test by
 *   database (behaviour of one database would then go untested on the other).
 */
const PGLITE_ONLY_FILES = ['test/slow-body.test.ts', 'test/process-hygiene.test.ts'];
const BROWSER_FOLDER = 'test/e2e/';
const BROWSER_SUFFIX = '-browser.test.ts';

export type TestDatabaseKind = 'pg' | 'pglite';

/** The database whose run alone has this test file (its path from the repository's root) in CI, if one. */
export function runOnceOn(file: string): TestDatabaseKind | undefined {
  if (isDatabaseFree(file)) return 'pg';
  if (PGLITE_ONLY_FILES.includes(file) || (file.startsWith(BROWSER_FOLDER) && file.endsWith(BROWSER_SUFFIX))) {
    return 'pglite';
  }
  return undefined;
}

const GLOBS: Record<TestDatabaseKind, string[]> = {
  pg: DATABASE_FREE_GLOBS,
  pglite: [...PGLITE_ONLY_FILES, `${BROWSER_FOLDER}**/*${BROWSER_SUFFIX}`],
};

/** What a run leaves out (vitest globs): with TEST_RUN_ONCE=1 the files that run once in the other database's run. */
export function leftOutOfRun(env: NodeJS.ProcessEnv): string[] {
  if (env.TEST_RUN_ONCE !== '1') return [];
  return env.TEST_DB === 'pg' ? GLOBS.pglite : GLOBS.pg;
}
