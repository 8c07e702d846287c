/**
 * The tool search's second step: the lexical ranking's first ten re-ordered by how near a request is in meaning to
 * each tool, by word vectors (`word-vectors.ts`). BM25 matches words as written; the vectors tell "my calendar
 * tomorrow" nearer a tool about events than one that shares only "my". Chosen on the tuning sets, then scored on
 * five held-out sets never tuned on: top-1 583 → 611 of 793, top-3 712 → 719 (docs/tool-search.md).
 */

import type { RankedTool, SearchableTool } from './tool-search.ts';
import { STOPWORDS } from './tool-search-lexicon.ts';
import { leadSentence, ownName, words } from './tool-text.ts';
import { addWordVectors, DIMENSIONS } from './word-vectors.ts';

/** How many of the lexical ranking's first tools are re-ordered; the rest keep their order after them. */
export const RERANKED = 10;
/** How much the cosine counts beside the lexical score (the first tool's being 1). */
const COSINE_WEIGHT = 1;

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

/**
 * Per tool object, so a narrowed list (the connected providers' tools) reuses the whole catalog's: each is computed
 * the first time the tool is among a ranking's first ten (0.035 ms), rather than all 3,526 at once (120 ms).
 */
const toolVectors = new WeakMap<SearchableTool, Float32Array | null>();

function toolVector(t: SearchableTool): Float32Array | null {
  let v = toolVectors.get(t);
  if (v === undefined) {
    v = unitVector(toolVectorFields(t));
    toolVectors.set(t, v);
  }
  return v;
}

const cosine = (a: Float32Array, b: Float32Array) => {
  let s = 0;
  for (let d = 0; d < DIMENSIONS; d++) s += (a[d] ?? 0) * (b[d] ?? 0);
  return s;
};

/**
 * Re-orders the first `RERANKED` of a lexical ranking (best first) by their score over the first one's plus the
 * cosine of the request's vector (its words, quoted text left out, each counting once) and the tool's. The scores
 * returned keep the lexical scale and order the whole list: a re-ranked tool's is its lexical score plus the first
 * one's times (1 + cosine), so it stays above every tool after the tenth. A request with no known word, or a
 * ranking of one tool, is returned as it came.
 */
export function rerankByMeaning<T extends SearchableTool>(ranked: RankedTool<T>[], request: string): RankedTool<T>[] {
  const top = ranked[0]?.score ?? 0;
  if (ranked.length < 2 || top <= 0) return ranked;
  const asked = unitVector([[vectorWords(request), 1]]);
  if (!asked) return ranked;
  const head = ranked.slice(0, RERANKED).map(({ tool, score }) => {
    const v = toolVector(tool);
    return { tool, score: score + top * (1 + COSINE_WEIGHT * (v ? cosine(asked, v) : 0)) };
  });
  // A stable sort: equal scores keep the lexical order.
  return [...head.sort((a, b) => b.score - a.score), ...ranked.slice(RERANKED)];
}
