import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeAtomically } from './write-atomically.js';

describe('writeAtomically', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-atomic-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('makes the folder and replaces the file whole, leaving nothing beside it', () => {
    const path = join(dir, 'new', 'deeper', 'file.json');
    writeAtomically(path, '{"a":1}');
    writeAtomically(path, Buffer.from('{"a":2}'));
    expect(readFileSync(path, 'utf8')).toBe('{"a":2}');
    expect(readdirSync(join(dir, 'new', 'deeper'))).toEqual(['file.json']);
  });

  it('throws when the file cannot be put in place, removes its temporary copy and leaves the target as it was', () => {
    // A non-empty folder where the file should go: the rename fails after the copy was written.
    const target = join(dir, 'taken');
    mkdirSync(target);
    writeFileSync(join(target, 'inside'), 'kept');
    expect(() => writeAtomically(target, 'new')).toThrow(/EISDIR|ENOTEMPTY|EEXIST/);
    expect(readdirSync(dir).sort()).toEqual(['new', 'taken']);
    expect(readFileSync(join(target, 'inside'), 'utf8')).toBe('kept');
  });
});
