/**
 * The test files that never open a database: the sandbox engine's, the provider catalog's checks, and pure logic
 * (`*.unit.test.ts`). CI runs them once, in one database's run (test/run-once.ts): a second run on the other
 * database would test nothing new. `test/database-free.unit.test.ts` fails when one of them opens a database.
 */
const FOLDERS = ['src/code-runner/', 'test/catalog/'];
const SUFFIX = '.unit.test.ts';

/** The same files as vitest globs (to leave them out of a run). */
export const DATABASE_FREE_GLOBS = [...FOLDERS.map((folder) => `${folder}**`), `**/*${SUFFIX}`];

/** Their test files as vitest globs (to run them: an include glob takes every file it matches as a test). */
export const DATABASE_FREE_TEST_GLOBS = [...FOLDERS.map((folder) => `${folder}**/*.test.ts`), `**/*${SUFFIX}`];

/** Whether a test file (its path from the repository's root) is one of them. */
export function isDatabaseFree(file: string): boolean {
  return FOLDERS.some((folder) => file.startsWith(folder)) || file.endsWith(SUFFIX);
}
