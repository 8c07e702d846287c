import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's root directory (the one holding package.json), found by walking up from this module. The
 * same answer whether the code runs from `src/` through tsx or from the `dist/` bundle `npm start` builds,
 * so data shipped beside the code (migrations, provider files) is found either way.
 */
function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`No package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  return dir;
}

export const PACKAGE_ROOT = findPackageRoot();

/**
 * The absolute path of `src/<parts>`, a script shipped beside the code that Node loads by path (a worker
 * thread's, a child process's) rather than through the bundle: the same file from `src/` and from `dist/`.
 * Throws naming the path when it is missing, rather than letting a worker fail to start on a vaguer error.
 */
export function sourceFile(...parts: string[]): string {
  const path = join(PACKAGE_ROOT, 'src', ...parts);
  if (!existsSync(path)) throw new Error(`${path} is missing: it ships beside the code in src/`);
  return path;
}
