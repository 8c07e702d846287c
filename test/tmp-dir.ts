import { accessSync, constants } from 'node:fs';
import { tmpdir } from 'node:os';

/**
 * Where the tests' files go (the PGlite template and each test file's copy of it, data directories, browser
 * profiles): `TEST_TMPDIR` if set, else memory (`/dev/shm`) where the machine has it, else the system's
 * temporary directory. vitest.config.ts makes it the test workers' `TMPDIR`, so `os.tmpdir()` answers it in
 * tests. Copying the PGlite template (some 1,250 files) and removing the copy took 3 to 6 s a test file on
 * the CI machine's disk, a third of a second in memory.
 */
export function testTmpDir(): string {
  if (process.env.TEST_TMPDIR) return process.env.TEST_TMPDIR;
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}
