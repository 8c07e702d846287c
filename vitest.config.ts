import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import { includedInRun, leftOutOfRun } from './test/run-once.ts';
import { testTmpDir } from './test/tmp-dir.ts';

export default defineConfig({
  test: {
    // CI runs some files on one database only, and the files that start processes as a run of their own
    // (test/run-once.ts).
    include: includedInRun(process.env),
    exclude: [...configDefaults.exclude, ...leftOutOfRun(process.env)],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two workers at least (vitest's default is one on two cores): one file's waits for what it started (servers,
    // CLI commands, chromium, timers) overlap another's work (`npm test` 532 -> 386 s; a third worker gained nothing,
    // the cores were busy, CONTRIBUTING.md). Each worker has a database of its own on either database
    // (test/harness.ts, test/test-database.ts). `.ci/run` sets VITEST_MAX_WORKERS=1: its parts already run side
    // by side.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Temporary files (data directories, browser profiles) in memory where the machine has it: test/tmp-dir.ts.
    env: { TMPDIR: testTmpDir() },
    // Test files share their worker's module cache instead of each loading the app again: on the two-core CI
    // machine the suite spent a seventh of its time importing (146 of 1,037 s on PGlite), and warm code runs
    // the tests faster too (12 files: 57 -> 33 s). So a test file must leave no state behind in modules: every
    // app, database and cache belongs to the harness of that file (as they do), and a file that sets
    // process.env or a global puts it back.
    isolate: false,
  },
});
