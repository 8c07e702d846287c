import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SHIPPED_PROVIDERS_DIR } from '../src/modules/providers/catalog.ts';
import { CURATED_DIR, type CuratedProvider, providerFileText } from './generator.ts';

/**
 * `npm run providers:generate`: writes `providers/<id>.json` for every `catalog/curated/<id>.json`.
 * `-- --check` writes nothing and exits 1 naming each file that differs from what it would write.
 */

const check = process.argv.includes('--check');
let stale = 0;
for (const f of readdirSync(CURATED_DIR)
  .filter((x) => x.endsWith('.json'))
  .sort()) {
  const curated = JSON.parse(readFileSync(join(CURATED_DIR, f), 'utf8')) as CuratedProvider;
  const target = join(SHIPPED_PROVIDERS_DIR, `${curated.provider.id}.json`);
  const text = providerFileText(curated);
  let current = '';
  try {
    current = readFileSync(target, 'utf8');
  } catch {
    // not generated yet
  }
  if (current === text) continue;
  if (check) {
    stale++;
    console.error(`${target} differs from what catalog/curated/${f} generates`);
  } else {
    writeFileSync(target, text);
    console.log(`wrote ${target} (${curated.tools.length} tools)`);
  }
}
if (stale) process.exit(1);
