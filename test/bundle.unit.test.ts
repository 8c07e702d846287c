import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundle } from '../bin/bundle.js';

/** `npm start` and `npx switchboard` build their bundle again only when a file it was built from changed. */
describe('bin/bundle.js', () => {
  const root = mkdtempSync(join(tmpdir(), 'sb-bundle-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'src'));
  writeFileSync(join(root, 'tsconfig.json'), '{}');
  writeFileSync(join(root, 'src', 'entry.ts'), "import { part } from './part.ts';\nconsole.log(part);\n");
  const writePart = (text: string) => writeFileSync(join(root, 'src', 'part.ts'), `export const part = '${text}';\n`);
  const built = () => {
    const file = bundle('entry', root);
    return { text: readFileSync(file, 'utf8'), mtime: statSync(file).mtimeMs };
  };

  it('builds once, reuses the bundle while its inputs are unchanged, and builds again when one changes', () => {
    writePart('first');
    // Sources saved well before the build: one saved after the build started gets no stamp and is built again.
    const earlier = new Date(Date.now() - 10_000);
    for (const file of ['tsconfig.json', 'src/entry.ts', 'src/part.ts']) utimesSync(join(root, file), earlier, earlier);
    const first = built();
    expect(first.text).toContain('"first"');
    const again = built();
    expect(again.mtime).toBe(first.mtime); // not written again

    writePart('second');
    const saved = new Date(Date.now() - 5000); // after the first build's sources, before this build
    utimesSync(join(root, 'src', 'part.ts'), saved, saved);
    const changed = built();
    expect(changed.text).toContain('"second"');
    expect(changed.text).not.toContain('"first"');

    // A source put back with an older time (a copy that keeps times) is a change too.
    writePart('third');
    const older = new Date(Date.now() - 60_000);
    utimesSync(join(root, 'src', 'part.ts'), older, older);
    expect(built().text).toContain('"third"');
  });

  it('builds again when its stamps are missing', () => {
    const before = built();
    unlinkSync(join(root, 'dist', 'entry.inputs.json'));
    const rebuilt = built();
    expect(rebuilt.mtime).not.toBe(before.mtime);
    const stamps = JSON.parse(readFileSync(join(root, 'dist', 'entry.inputs.json'), 'utf8'));
    expect(Object.keys(stamps.files).sort()).toEqual(['src/entry.ts', 'src/part.ts', 'tsconfig.json']);
  });
});
