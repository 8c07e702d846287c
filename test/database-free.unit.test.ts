import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isDatabaseFree } from './database-free.ts';

const ROOT = resolve(import.meta.dirname, '..');

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [relative(ROOT, path)] : [];
  });
}

/** What opening a database looks like in a test file: importing the harness or the client, or the run's database. */
const OPENS_DATABASE = [
  /^import [^;]*from '[^']*(\/harness|db\/client|\/test-database)(\.ts)?';/m,
  /\binject\(\s*'testDatabase'/,
];

describe('test files run on one database only', () => {
  const files = [...testFiles(join(ROOT, 'src')), ...testFiles(join(ROOT, 'test'))];

  it('are found, and the others open a database', () => {
    const free = files.filter(isDatabaseFree);
    expect(free).toContain('src/code-runner/python.test.ts');
    expect(free).toContain('test/database-free.unit.test.ts');
    expect(free.length).toBeLessThan(files.length);
  });

  it('never open one', () => {
    const opening = files.filter(
      (file) => isDatabaseFree(file) && OPENS_DATABASE.some((re) => re.test(readFileSync(join(ROOT, file), 'utf8'))),
    );
    expect(opening).toEqual([]);
  });
});
