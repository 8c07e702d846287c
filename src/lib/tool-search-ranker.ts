import { readFileSync } from 'node:fs';
import { sourceFile } from './paths.ts';
import type { RankedTool, SearchableTool } from './tool-search.ts';
import { type AskedMeaning, askedMeaning, MEANING_SIGNALS, meaningSignals } from './tool-search-vectors.ts';

/**
 * The tool search's second step: the lexical ranking's first tools re-ordered by a model learned on the tuning
 * sets (`npm run train:tool-search`, `scripts/train-tool-ranker.ts`): a weighted sum of what the lexical ranking
 * saw of each tool (its score and rank, how much of the request each field holds, the action and the provider
 * asked) and of the word vectors' signals (`tool-search-vectors.ts`). The weights are in `tool-ranker.json`.
 */

/** How many of the lexical ranking's first tools are re-ordered; the rest keep their order after them. */
export const RERANKED = 30;
/**
 * Also re-ordered: this many tools from beyond the first `RERANKED` whose words match the request best, bonuses
 * aside (a provider named or popular can push a better-worded tool out of the thirty). Chosen by leaving one tuning
 * set out: 1,944 of 2,051 in the top 3 with none, 1,946 with 5, 1,949 with 10, no better with 20.
 */
export const BEST_MATCHED = 10;

/** What a tool has of what the request asks (the lexical ranking's bonuses read it too). */
export interface Asked {
  /** Its mode is the one the request's action asks (read or write). */
  modeAsked: boolean;
  /** Its name starts with a verb the request's action means. */
  verbAsked: boolean;
  /** A list tool of a plural noun the request holds, the request not asking to write. */
  pluralList: boolean;
  /** The request says "my" and the tool's name does. */
  mine: boolean;
  popular: boolean;
  /** How many words of its provider's name the request holds (0: not named). */
  named: number;
}

/** What the lexical ranking saw of a tool, for the ranker. */
export interface Signals extends Asked {
  /** Its place in the lexical ranking (0 first). */
  rank: number;
  /** Its words' match (BM25F), without the bonuses. */
  match: number;
  /** The rarity-weighted share of the request's words each field holds (name, provider, lead, desc, examples,
   * category, about), then any field. */
  cover: number[];
  /** Its provider's match, over the best among the candidates. */
  source: number;
  intent: 'read' | 'write' | undefined;
  mode: 'read' | 'write' | undefined;
  verb: string | undefined;
}

export interface Candidate<T> {
  tool: T;
  /** The lexical ranking's score, bonuses included. */
  lexical: number;
  signals: Signals;
}

const VERBS = ['list', 'get', 'search', 'create', 'update', 'delete', 'send', 'add'] as const;
const INTENTS = ['read', 'write', 'none'] as const;

export const FEATURES = [
  'lexical',
  'rank',
  'match',
  'cover_name',
  'cover_provider',
  'cover_lead',
  'cover_desc',
  'cover_examples',
  'cover_category',
  'cover_about',
  'cover_any',
  'source',
  'mode_match',
  'mode_mismatch',
  'verb_asked',
  'plural_list',
  'mine',
  'popular',
  'named',
  'named_words',
  ...MEANING_SIGNALS,
  ...INTENTS.flatMap((i) => VERBS.map((v) => `${i}_${v}`)),
];

/** One candidate's features, in `FEATURES` order; `top` is the first candidate's, for the relative ones. */
function features(
  c: Candidate<SearchableTool>,
  top: { lexical: number; match: number },
  asked: AskedMeaning,
): number[] {
  const s = c.signals;
  const intent = s.intent ?? 'none';
  return [
    top.lexical > 0 ? c.lexical / top.lexical : 0,
    1 / (1 + s.rank),
    top.match > 0 ? s.match / top.match : 0,
    ...s.cover,
    s.source,
    s.modeAsked ? 1 : 0,
    s.intent && s.mode && s.mode !== s.intent ? 1 : 0,
    s.verbAsked ? 1 : 0,
    s.pluralList ? 1 : 0,
    s.mine ? 1 : 0,
    s.popular ? 1 : 0,
    s.named > 0 ? 1 : 0,
    s.named,
    ...meaningSignals(c.tool, asked),
    ...INTENTS.flatMap((i) => VERBS.map((v) => (i === intent && s.verb === v ? 1 : 0))),
  ];
}

/** A trained model: features standardised by `mean` and `scale`, then a weighted sum. */
export interface RankerModel {
  features: string[];
  mean: number[];
  scale: number[];
  weights: number[];
}

let model: RankerModel | undefined;

function loadModel(): RankerModel {
  if (model) return model;
  const read = JSON.parse(readFileSync(sourceFile('lib', 'tool-ranker.json'), 'utf8')) as RankerModel;
  if (read.features.join() !== FEATURES.join()) {
    throw new Error('tool-ranker.json was trained on other features: run npm run train:tool-search');
  }
  model = read;
  return model;
}

export function modelScore(m: RankerModel, x: readonly number[]): number {
  let s = 0;
  for (let k = 0; k < x.length; k++) s += (m.weights[k] ?? 0) * (((x[k] ?? 0) - (m.mean[k] ?? 0)) / (m.scale[k] || 1));
  return s;
}

/** Every candidate's features for a request, in the candidates' order (the trainer's input too). */
export function candidateFeatures(candidates: ReadonlyArray<Candidate<SearchableTool>>, request: string): number[][] {
  const first = candidates[0];
  if (!first) return [];
  const top = { lexical: first.lexical, match: Math.max(...candidates.map((c) => c.signals.match)) };
  const asked = askedMeaning(request);
  return candidates.map((c) => features(c, top, asked));
}

/**
 * Re-orders the candidates (the lexical ranking's first, best first) by the model. The scores returned keep the
 * lexical scale and order the list: the first candidate's lexical score plus a positive amount that grows with the
 * model's score, so every re-ordered tool stays above those the lexical ranking left after them.
 */
export function rerank<T extends SearchableTool>(candidates: Candidate<T>[], request: string): RankedTool<T>[] {
  if (candidates.length < 2) return candidates.map((c) => ({ tool: c.tool, score: c.lexical }));
  const m = loadModel();
  const top = candidates[0]?.lexical ?? 0;
  const xs = candidateFeatures(candidates, request);
  const scored = candidates.map((c, i) => ({ tool: c.tool, model: modelScore(m, xs[i] ?? []) }));
  // A stable sort: equal scores keep the lexical order.
  scored.sort((a, b) => b.model - a.model);
  return scored.map(({ tool, model: s }) => ({ tool, score: top * (1 + 1 / (1 + Math.exp(-s))) }));
}
