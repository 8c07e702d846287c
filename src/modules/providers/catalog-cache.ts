import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { sha256Hex } from '../../lib/ids.ts';
import { PACKAGE_ROOT } from '../../lib/paths.ts';
import { writeAtomically } from '../../lib/write-atomically.js';
import type { ProviderDefinition } from './definition.ts';

/**
 * Validating the catalog is most of the start-up work of the server, each CLI command and each test harness
 * (docs/benchmarks.md, "Start-up with the catalog"), and its answer depends only on a file's name and text and on
 * the validating code. So valid definitions are kept in `dist/provider-catalog.json` (beside the bundle, as
 * trusted as it), each under the SHA-256 of its file's name and text, the whole under a fingerprint of that code:
 * a changed file is validated again, and a changed validator (Node or zod too) or an unreadable cache discards it.
 * Only valid files are kept, so a bad one is reported at every start.
 */

export const DEFAULT_CATALOG_CACHE = join(PACKAGE_ROOT, 'dist', 'provider-catalog.json');

/** The folder of the code that validates a provider file: this module's own, every source in it counts. */
const VALIDATOR_DIR = join(PACKAGE_ROOT, 'src', 'modules', 'providers');

/**
 * The validator's identity: Node's and zod's versions (URLs and regular expressions are checked by the engine)
 * and the text of every non-test source in `src/modules/providers` (schema, rules and the JSON paths they use
 * live there; an import from outside it is a `catalog-cache` test failure). Undefined when the sources are not
 * there to read: then nothing is cached. Read once a process: the code that runs is the code it loaded, and a
 * process that loads the catalog again (a test harness each) does not read the sources again.
 */
let fingerprint: { value: string | undefined } | undefined;
function validatorFingerprint(): string | undefined {
  fingerprint ??= { value: readFingerprint() };
  return fingerprint.value;
}

function readFingerprint(): string | undefined {
  try {
    const zod = (createRequire(import.meta.url)('zod/package.json') as { version: string }).version;
    const sources = readdirSync(VALIDATOR_DIR)
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .sort()
      .map((f) => `${f}\0${readFileSync(join(VALIDATOR_DIR, f), 'utf8')}`);
    return sha256Hex([`node ${process.versions.node}`, `zod ${zod}`, ...sources].join('\0'));
  } catch {
    return undefined;
  }
}

interface CacheFile {
  validator: string;
  entries: Record<string, ProviderDefinition>;
}

export interface CatalogCache {
  /** The definition validation answered for this file name and text, when it is kept. */
  get(file: string, text: string): ProviderDefinition | undefined;
  /** Keeps a definition validation has just answered. */
  set(file: string, text: string, definition: ProviderDefinition): void;
  /** Writes the entries this load used when they differ from the file's; never throws. */
  save(): void;
}

const entryKey = (file: string, text: string) => sha256Hex(`${basename(file)}\0${text}`);

/** Opens the cache at `path`; `null` (or no validator sources) gives one that keeps nothing. */
export function openCatalogCache(path: string | null): CatalogCache {
  const validator = path === null ? undefined : validatorFingerprint();
  if (path === null || validator === undefined) return { get: () => undefined, set: () => {}, save: () => {} };
  let stored: Record<string, ProviderDefinition> = {};
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<CacheFile>;
    if (parsed.validator === validator && parsed.entries && typeof parsed.entries === 'object') {
      stored = parsed.entries;
    }
  } catch {
    // none yet, unreadable or not JSON: every file is validated and the cache written anew
  }
  const used: Record<string, ProviderDefinition> = {};
  let changed = false;
  return {
    get(file, text) {
      const key = entryKey(file, text);
      const definition = Object.hasOwn(stored, key) ? stored[key] : undefined;
      if (definition) used[key] = definition;
      return definition;
    },
    set(file, text, definition) {
      used[entryKey(file, text)] = definition;
      changed = true;
    },
    save() {
      if (!changed && Object.keys(used).length === Object.keys(stored).length) return;
      try {
        writeAtomically(path, JSON.stringify({ validator, entries: used } satisfies CacheFile));
      } catch {
        // a read-only install validates at every start, as without the cache
      }
    },
  };
}
