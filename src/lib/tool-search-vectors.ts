/**
 * The tool search's meaning signals, by word vectors (`word-vectors.ts`): how near a request is to a tool as a
 * whole, to its name, to its first sentence and examples, and word by word. BM25 matches words as written; the
 * vectors tell "my calendar tomorrow" nearer a tool about events than one that shares only "my". Read by the
 * ranker (`tool-search-ranker.ts`) for the lexical ranking's first tools.
 */

import type { SearchableTool } from './tool-search.ts';
import { STOPWORDS } from './tool-search-lexicon.ts';
import { leadSentence, ownName, words } from './tool-text.ts';
import { addWordVectors, DIMENSIONS } from './word-vectors.ts';

/** Words that say nothing of a tool: the search's stop words, and the `t` of "don't". */
const skipped = (w: string) => STOPWORDS.has(w) || w === 't';

/** A text's words for the vectors: as the lexical ranking reads them, camelCase split first. */
export function vectorWords(s: string): string[] {
  return words(s.replace(/([a-z])([A-Z])/g, '$1 $2'));
}

/**
 * A tool's words by field, with each field's weight: its own name says most, as in the lexical ranking. The
 * provider's description (`about`) is left out: shared by all its tools, it tells none of them apart.
 */
export function toolVectorFields(t: SearchableTool): Array<[words: string[], weight: number]> {
  const lead = leadSentence(t.description);
  return [
    [vectorWords(ownName(t)), 3],
    [vectorWords(`${t.source} ${t.keywords ?? ''}`), 1.5],
    [vectorWords(lead), 1.2],
    [vectorWords(t.description.slice(lead.length, 2000)), 0.6],
    [vectorWords(t.category ?? ''), 0.5],
    [vectorWords(t.examples ?? ''), 1],
  ];
}

/** The weighted sum of the fields' word vectors, stop words skipped, to unit length; null with no known word. */
function unitVector(fields: Array<[string[], number]>): Float32Array | null {
  const v = new Float32Array(DIMENSIONS);
  let any = false;
  for (const [words, weight] of fields) {
    const said = words.filter((w) => !skipped(w));
    if (addWordVectors(v, said, weight)) any = true;
  }
  const norm = Math.hypot(...v);
  if (!any || norm === 0) return null;
  for (let d = 0; d < DIMENSIONS; d++) v[d] = (v[d] ?? 0) / norm;
  return v;
}

const cosine = (a: Float32Array | null, b: Float32Array | null) => {
  if (!a || !b) return 0;
  let s = 0;
  for (let d = 0; d < DIMENSIONS; d++) s += (a[d] ?? 0) * (b[d] ?? 0);
  return s;
};

/**
 * Each known word's unit vector, once a process: at most the vectors' vocabulary (30,740 words, 12 MB if every one
 * were met). A word the vectors do not know is not kept, so what requests say cannot grow it.
 */
const wordVectors = new Map<string, Float32Array>();

/** How many word vectors are kept (for tests of the bound). */
export const keptWordVectors = () => wordVectors.size;

function wordVector(w: string): Float32Array | null {
  const known = wordVectors.get(w);
  if (known) return known;
  const v = unitVector([[[w], 1]]);
  if (v) wordVectors.set(w, v);
  return v;
}

interface ToolVectors {
  all: Float32Array | null;
  name: Float32Array | null;
  /** The first sentence and the examples: what the tool does in a sentence, and in users' words. */
  text: Float32Array | null;
  /** The distinct known words of its name and first sentence, for the word-by-word signals. */
  words: string[];
  nameWords: string[];
}

/**
 * Per tool object, so a narrowed list (the connected providers' tools) reuses the whole catalog's: computed the
 * first time the tool is among a ranking's first tools, rather than all of them at once.
 */
const toolVectors = new WeakMap<SearchableTool, ToolVectors>();

function vectorsOf(t: SearchableTool): ToolVectors {
  let v = toolVectors.get(t);
  if (v === undefined) {
    const name = vectorWords(ownName(t));
    const lead = vectorWords(leadSentence(t.description));
    const known = (ws: string[]) => [...new Set(ws.filter((w) => !skipped(w) && wordVector(w)))].slice(0, 40);
    v = {
      all: unitVector(toolVectorFields(t)),
      name: unitVector([[name, 1]]),
      text: unitVector([
        [lead, 1],
        [vectorWords(t.examples ?? ''), 1],
      ]),
      words: known([...name, ...lead]),
      nameWords: known(name),
    };
    toolVectors.set(t, v);
  }
  return v;
}

/**
 * A request as the vectors read it: its words' sum, and per tool word met the cosine with each of its known words
 * (computed once a request: the candidates share most of their words).
 */
export interface AskedMeaning {
  all: Float32Array | null;
  words: Float32Array[];
  near: Map<string, Float64Array>;
}

export function askedMeaning(request: string): AskedMeaning {
  const said = [...new Set(vectorWords(request).filter((w) => !skipped(w)))];
  const words = said.flatMap((w) => wordVector(w) ?? []).slice(0, 24);
  return { all: unitVector([[said, 1]]), words, near: new Map() };
}

/** The mean over the request's words of each one's best cosine with one of `words` (all known). */
function alignment(asked: AskedMeaning, words: readonly string[]): number {
  if (asked.words.length === 0 || words.length === 0) return 0;
  const best = new Float64Array(asked.words.length).fill(-1);
  for (const w of words) {
    let near = asked.near.get(w);
    if (!near) {
      const v = wordVector(w);
      near = Float64Array.from(asked.words, (a) => cosine(a, v));
      asked.near.set(w, near);
    }
    for (let i = 0; i < best.length; i++) if ((near[i] as number) > (best[i] as number)) best[i] = near[i] as number;
  }
  return best.reduce((a, b) => a + b, 0) / best.length;
}

/** The meaning signals of a tool for a request, in `MEANING_SIGNALS` order. */
export function meaningSignals(t: SearchableTool, asked: AskedMeaning): number[] {
  const v = vectorsOf(t);
  return [
    cosine(asked.all, v.all),
    cosine(asked.all, v.name),
    cosine(asked.all, v.text),
    alignment(asked, v.words),
    alignment(asked, v.nameWords),
  ];
}

export const MEANING_SIGNALS = ['cos_all', 'cos_name', 'cos_text', 'align', 'align_name'] as const;
