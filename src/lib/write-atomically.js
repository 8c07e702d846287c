// Plain JavaScript, with its types in write-atomically.d.ts: bin/bundle.js runs it under plain Node before any
// TypeScript is built, and the service (through the bundle or tsx) runs the same file.
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Writes `contents` to `path` aside (`<path>.<pid>.tmp`) and renames it into place, creating its folder: a
 * reader, in this process or another starting at the same time, sees the old file or the whole new one, never
 * half of it. A failed write leaves no temporary file behind; its error is thrown.
 */
export function writeAtomically(path, contents) {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, contents);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
