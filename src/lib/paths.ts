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
