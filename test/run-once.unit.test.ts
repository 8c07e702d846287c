import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { leftOutOfRun, runOnceOn } from './run-once.ts';

const ROOT = resolve(import.meta.dirname, '..');

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [relative(ROOT, path)] : [];
  });
}

/** A test run or skipped by database, or an assertion made on one database only. */
const BY_DATABASE = [/\.(skipIf|runIf)\([^)]*testDatabase/, /\.driver\s*[!=]==/];

describe('test files CI runs on one database only', () => {
  const files = [...testFiles(join(ROOT, 'src')), ...testFiles(join(ROOT, 'test'))];

  it('are the page tests and two process tests on PGlite, the database-free files on PostgreSQL', () => {
    expect(runOnceOn('test/e2e/agents-browser.test.ts')).toBe('pglite');
    expect(runOnceOn('test/slow-body.test.ts')).toBe('pglite');
    expect(runOnceOn('src/code-runner/python.test.ts')).toBe('pg');
    expect(runOnceOn('test/e2e/oauth-flow.test.ts')).toBeUndefined();
    expect(files.filter((f) => runOnceOn(f) === undefined).length).toBeGreaterThan(files.length / 2);
  });

  it('leave out the other run’s files only with TEST_RUN_ONCE=1', () => {
    expect(leftOutOfRun({})).toEqual([]);
    expect(leftOutOfRun({ TEST_DB: 'pg' })).toEqual([]);
    expect(leftOutOfRun({ TEST_RUN_ONCE: '1' })).toContain('src/code-runner/**');
    expect(leftOutOfRun({ TEST_RUN_ONCE: '1', TEST_DB: 'pg' })).toContain('test/e2e/**/*-browser.test.ts');
  });

  it('hold no test of one database’s behaviour', () => {
    const byDatabase = files.filter(
      (file) =>
        runOnceOn(file) === 'pglite' && BY_DATABASE.some((re) => re.test(readFileSync(join(ROOT, file), 'utf8'))),
    );
    expect(byDatabase).toEqual([]);
  });
});
