import { DATABASE_FREE_GLOBS, DATABASE_FREE_TEST_GLOBS, isDatabaseFree } from './database-free.ts';

/**
 * How CI divides the test files (`.ci/run`). Without these settings `npm test` and `npm run test:pg` run every
 * file; each setting only narrows a run.
 *
 * `TEST_RUN_ONCE=1`: the files that test nothing of one database's own run in one database's run only.
 * - In the PGlite run: the pages driven in chromium, and the started service's handling of trickled request
 *   bodies and of its own child processes and logs. They reach the database only through the services, whose own
 *   tests run on both databases; test/run-once.unit.test.ts fails when one of them runs or skips a test by
 *   database.
 * - In the PostgreSQL run: the database-free files (test/database-free.ts: the code runner's, the provider
 *   catalog's checks, `*.unit.test.ts`).
 *
 * `TEST_PART` divides a run in three: `processes` runs only the files that start processes of their own (the CLI,
 * servers, crashes, the cluster) and the pages driven in chromium, `database-free` only the database-free files,
 * `rest` all the others. The processes spend much of their time waiting for what they started, so CI runs them
 * beside the two databases' runs, where they fill idle time; the database-free files follow them, so that the
 * PostgreSQL run ends no later than the PGlite run.
 */
const PGLITE_ONLY_FILES = ['test/slow-body.test.ts', 'test/process-hygiene.test.ts'];
const BROWSER_FOLDER = 'test/e2e/';
const BROWSER_SUFFIX = '-browser.test.ts';

/**
 * The files that start processes (a server, the CLI, a worker to crash, three instances and a balancer):
 * test/run-once.unit.test.ts fails when a file starts one and is not listed here.
 */
export const PROCESS_FILES = [
  'src/db/pglite-remote.test.ts',
  'src/jobs/crash.test.ts',
  'src/modules/agents/crash.test.ts',
  'src/modules/agents/log-crash.test.ts',
  'src/modules/credits/crash.test.ts',
  'src/modules/scheduled-tasks/crash.test.ts',
  'test/cli-jobs.test.ts',
  'test/cli.test.ts',
  'test/cluster.test.ts',
  'test/e2e/oauth-cli.test.ts',
  'test/e2e/typed-client.test.ts',
  'test/process-hygiene.test.ts',
  'test/shutdown.test.ts',
  'test/slow-body.test.ts',
];

export type TestDatabaseKind = 'pg' | 'pglite';

/** The database whose run alone has this test file (its path from the repository's root) in CI, if one. */
export function runOnceOn(file: string): TestDatabaseKind | undefined {
  if (isDatabaseFree(file)) return 'pg';
  if (PGLITE_ONLY_FILES.includes(file) || (file.startsWith(BROWSER_FOLDER) && file.endsWith(BROWSER_SUFFIX))) {
    return 'pglite';
  }
  return undefined;
}

const ONCE_GLOBS: Record<TestDatabaseKind, string[]> = {
  pg: DATABASE_FREE_GLOBS,
  pglite: [...PGLITE_ONLY_FILES, `${BROWSER_FOLDER}**/*${BROWSER_SUFFIX}`],
};

/** The processes part: the files that start processes, and the pages driven in chromium (a browser each). */
const PROCESS_PART = [...PROCESS_FILES, `${BROWSER_FOLDER}**/*${BROWSER_SUFFIX}`];

/** What a run leaves out (vitest globs): the other database's run-once files, and the other parts' files. */
export function leftOutOfRun(env: NodeJS.ProcessEnv): string[] {
  const once = env.TEST_RUN_ONCE === '1' ? (env.TEST_DB === 'pg' ? ONCE_GLOBS.pglite : ONCE_GLOBS.pg) : [];
  return env.TEST_PART === 'rest' ? [...once, ...PROCESS_PART, ...DATABASE_FREE_GLOBS] : once;
}

/** What a run includes (vitest globs): with `TEST_PART=processes` or `database-free` that part only. */
export function includedInRun(env: NodeJS.ProcessEnv): string[] {
  if (env.TEST_PART === 'processes') return PROCESS_PART;
  if (env.TEST_PART === 'database-free') return DATABASE_FREE_TEST_GLOBS;
  return ['src/**/*.test.ts', 'test/**/*.test.ts'];
}
