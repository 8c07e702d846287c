import { readdirSync, readFileSync } from 'node:fs';
import { join, matchesGlob, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isDatabaseFree } from './database-free.ts';
import { includedInRun, leftOutOfRun, PROCESS_FILES, runOnceOn } from './run-once.ts';

const ROOT = resolve(import.meta.dirname, '..');

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [relative(ROOT, path)] : [];
  });
}

/** A test file that starts a process of its own: a server, the CLI, a worker, a cluster. */
const STARTS_PROCESS =
  /\b(startTestServer|startServer|startScript|startCluster|spawn|execFile|fork)\(|promisify\(execFile\)/;

/** The files a run takes, as vitest selects them from its include and exclude globs. */
function runFiles(files: string[], env: NodeJS.ProcessEnv): string[] {
  const included = includedInRun(env);
  const excluded = leftOutOfRun(env);
  return files.filter((f) => included.some((g) => matchesGlob(f, g)) && !excluded.some((g) => matchesGlob(f, g)));
}

/** A test run or skipped by database, or an assertion made on one database only. */
const BY_DATABASE = [/\.(skipIf|runIf)\([^)]*testDatabase/, /\.driver\s*[!=]==/];

describe('test files CI runs on one database only', () => {
  const files = [...testFiles(join(ROOT, 'src')), ...testFiles(join(ROOT, 'test'))];

  it('are the page tests and two process tests on PGlite, the database-free files on PostgreSQL', () => {
    expect(runOnceOn('test/e2e/agents-browser.test.ts')).toBe('pglite');
    expect(runOnceOn('test/slow-body.test.ts')).toBe('pglite');
    expect(runOnceOn('test/catalog/generated.test.ts')).toBe('pg');
    expect(runOnceOn('src/code-runner/python.test.ts')).toBe('pg');
    expect(runOnceOn('src/lib/ids.unit.test.ts')).toBe('pg');
    expect(runOnceOn('test/e2e/oauth-flow.test.ts')).toBeUndefined();
    expect(files.filter((f) => runOnceOn(f) === undefined).length).toBeGreaterThan(files.length / 2);
  });

  it('leave out the other run’s files only with TEST_RUN_ONCE=1', () => {
    expect(leftOutOfRun({})).toEqual([]);
    expect(leftOutOfRun({ TEST_DB: 'pg' })).toEqual([]);
    expect(leftOutOfRun({ TEST_RUN_ONCE: '1' })).toContain('src/code-runner/**');
    expect(leftOutOfRun({ TEST_RUN_ONCE: '1', TEST_DB: 'pg' })).toContain('test/e2e/**/*-browser.test.ts');
  });

  it('CI’s runs take every file once on each database, or once in all when it is a run-once file', () => {
    const ci = (db: 'pg' | 'pglite', part: 'rest' | 'processes' | 'database-free') =>
      runFiles(files, { TEST_RUN_ONCE: '1', TEST_PART: part, ...(db === 'pg' ? { TEST_DB: 'pg' } : {}) });
    const runs = {
      pg: [...ci('pg', 'rest'), ...ci('pg', 'processes'), ...ci('pg', 'database-free')],
      pglite: [...ci('pglite', 'rest'), ...ci('pglite', 'processes')],
    };
    expect(ci('pglite', 'database-free')).toEqual([]);
    // vitest takes every file an include glob matches as a test file: each names test files only.
    for (const part of [{}, { TEST_PART: 'processes' }, { TEST_PART: 'database-free' }, { TEST_PART: 'rest' }]) {
      for (const glob of includedInRun(part)) expect(glob).toMatch(/\.test\.ts$/);
    }
    expect(ci('pg', 'database-free').sort()).toEqual(files.filter(isDatabaseFree).sort());
    for (const file of files) {
      const once = runOnceOn(file);
      const count = (db: 'pg' | 'pglite') => runs[db].filter((f) => f === file).length;
      expect([file, count('pglite'), count('pg')]).toEqual([file, once === 'pg' ? 0 : 1, once === 'pglite' ? 0 : 1]);
    }
    expect(runFiles(files, {})).toEqual(files);
    expect(runFiles(files, { TEST_DB: 'pg' })).toEqual(files);
  });

  it('list as process files exactly the files that start processes; the processes part adds the page tests', () => {
    const starting = files.filter((f) => STARTS_PROCESS.test(readFileSync(join(ROOT, f), 'utf8'))).sort();
    expect(starting).toEqual([...PROCESS_FILES].sort());
    const browser = files.filter((f) => f.startsWith('test/e2e/') && f.endsWith('-browser.test.ts'));
    expect(browser.length).toBeGreaterThan(10);
    expect(runFiles(files, { TEST_PART: 'processes' }).sort()).toEqual([...PROCESS_FILES, ...browser].sort());
    expect(runFiles(files, { TEST_PART: 'rest' }).filter((f) => browser.includes(f))).toEqual([]);
  });

  it('hold no test of one database’s behaviour', () => {
    const byDatabase = files.filter(
      (file) =>
        runOnceOn(file) === 'pglite' && BY_DATABASE.some((re) => re.test(readFileSync(join(ROOT, file), 'utf8'))),
    );
    expect(byDatabase).toEqual([]);
  });
});
