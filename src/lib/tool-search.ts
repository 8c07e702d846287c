/**
 * Tool search: the one ranking behind the agent's `find_tools` and `GET /providers/tools/search`. A request in
 * a user's words ("what's on my calendar tomorrow") against tools named in an API's words (`list_events`).
 *
 * Field-weighted BM25 (BM25F) over a tool's own name, its provider's id and label, its description (the first
 * sentence counts more) and its provider's category; user vocabulary mapped to the catalog's by synonyms and a
 * crude stem; a provider the request names ranks its tools first; the request's action (read or write, and
 * which verb) prefers tools of that mode and verb. No fixed catalog size: rarity and lengths come from the
 * tools searched, and the index of a tool list is built once per list (`WeakMap`). Then the first thirty, with the
 * ten best word matches after them, are re-ordered by a ranker learned on the tuning sets (`tool-search-ranker.ts`),
 * which also reads word vectors.
 */

import {
  DETERMINERS,
  GENERIC_VERBS,
  NOUN_VERBS,
  POLITE,
  QUALIFIERS,
  READ_VERBS,
  REQUEST_KINDS,
  REQUEST_WORDS,
  REWRITES,
  STOPWORDS,
  SUITE_WORDS,
  SYNONYMS,
  VERB_MEANS,
  WRITE_VERBS,
} from './tool-search-lexicon.ts';
import { type Asked, BEST_MATCHED, type Candidate, RERANKED, rerank } from './tool-search-ranker.ts';
import { leadSentence, ownName, words } from './tool-text.ts';

/** What the search reads of a tool. */
export interface SearchableTool {
  name: string;
  description: string;
  /** Requests in users' words the tool answers, as one text: matched like its description's first sentence. */
  examples?: string | undefined;
  /** The provider id (`google-calendar`) or another source (`built-in`). */
  source: string;
  /** More words the tool is found by (a provider's label), never shown to a model. */
  keywords?: string | undefined;
  /** The provider's category (`video-meetings`): matched as loosely as a description. */
  category?: string | undefined;
  /** What the provider is for (its description): matched more loosely still, for a request's domain words. */
  about?: string | undefined;
  mode?: 'read' | 'write' | undefined;
  /** A provider most people use (`popular` in its file): preferred when a request names no provider. */
  popular?: boolean | undefined;
}

export interface RankedTool<T> {
  tool: T;
  score: number;
}

/** The longest request read, in characters: the work per search is bounded whatever is sent. */
export const MAX_QUERY_CHARS = 500;
/** Query words (after stop words) that count: the rest of a long request is ignored. */
const MAX_QUERY_WORDS = 24;

/** A crude stem: plural and verb endings off, so "meetings" finds "meeting" and "labelled" "label". */
function stem(w: string): string {
  if (w.length > 4 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.length > 5 && w.endsWith('ing')) return w.slice(0, -3);
  if (w.length > 4 && w.endsWith('ed')) return w.slice(0, -2);
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss')) return w.slice(0, -1);
  return w;
}

const terms = (s: string) => words(s).map(stem);

/** Field weights (BM25F): a word in the tool's name says most, in the category least. */
const FIELDS = [
  { key: 'name', weight: 3, b: 0.3 },
  { key: 'provider', weight: 2, b: 0 },
  { key: 'lead', weight: 1.2, b: 0.5 },
  { key: 'desc', weight: 0.6, b: 0.75 },
  { key: 'examples', weight: 1, b: 0.5 },
  { key: 'category', weight: 0.5, b: 0 },
  { key: 'about', weight: 0.6, b: 0.5 },
] as const;
type FieldKey = (typeof FIELDS)[number]['key'];
const K1 = 1.2;
/** A query word of this many letters or more also finds words that start like it ("contributed", "contributors"). */
const PREFIX = 6;
/** The bonus of a popular provider's tool (about a tenth of a typical match's score). */
const POPULAR_WEIGHT = 1;
/**
 * The bonus of a tool whose provider the request names (plus 5 a word of the name): about a typical match's score,
 * so a named app's tools come first unless another's match is far better. People name the product they think of
 * ("decline the sync in outlook", "a teams meeting", "a hold on her gmail") where the tool may be a sibling
 * provider's (Outlook Calendar, Google Vault); an absolute bonus kept those out (100 until 29 November: the second
 * tuning set 89.0% top-3 against 90.5% at 10).
 */
const NAMED_WEIGHT = 10;
/** How much the match of a tool's provider counts beside the tool's own. */
const SOURCE_WEIGHT = 0.4;

interface Doc {
  /** Its source's number in `Index.sources`. */
  source: number;
  verb: string | undefined;
  nameWords: string[];
  mode: 'read' | 'write' | undefined;
  /** Its words per field, in `FIELDS` order: which of a request's words each field holds (the ranker's signals). */
  fields: Array<Set<string>>;
}

interface Index {
  docs: Doc[];
  /** Per word: the tools holding it and the word's field-weighted, length-normalised frequency there (BM25F). */
  postings: Map<string, Array<[doc: number, tf: number]>>;
  /** Per first `PREFIX` letters: the words that start so. */
  prefixes: Map<string, string[]>;
  /** Each source (provider) once, with its words' frequencies: the request ranks providers too. */
  sources: Array<{ tf: Map<string, number>; len: number }>;
  /** Per word: how many sources hold it. */
  sourceDf: Map<string, number>;
  /** Per source: the word lists that name it (its id, its label, each part of a label like "X (Twitter)"). */
  names: Map<string, string[][]>;
}

const indexes = new WeakMap<readonly SearchableTool[], Index>();

function indexOf(tools: readonly SearchableTool[]): Index {
  const cached = indexes.get(tools);
  if (cached) return cached;
  const total = Object.fromEntries(FIELDS.map((f) => [f.key, 0])) as Record<FieldKey, number>;
  const names = new Map<string, string[][]>();
  const sourceIds = new Map<string, number>();
  const sources: Index['sources'] = [];
  const sourceDf = new Map<string, number>();
  const perTool = tools.map((t) => {
    let source = sourceIds.get(t.source);
    if (source === undefined) {
      source = sources.length;
      sourceIds.set(t.source, source);
      const ws = terms(
        `${t.source} ${t.keywords ?? ''} ${(t.category ?? '').replace(/[-_]/g, ' ')} ${(t.about ?? '').slice(0, 500)}`,
      );
      const tf = new Map<string, number>();
      for (const w of ws) tf.set(w, (tf.get(w) ?? 0) + 1);
      for (const w of tf.keys()) sourceDf.set(w, (sourceDf.get(w) ?? 0) + 1);
      sources.push({ tf, len: ws.length });
    }
    const own = terms(ownName(t));
    const lead = leadSentence(t.description).slice(0, 300);
    const fields: Record<FieldKey, string[]> = {
      name: own,
      provider: terms(`${t.source} ${t.keywords ?? ''}`),
      lead: terms(lead),
      desc: terms(t.description.slice(0, 2000)),
      examples: terms((t.examples ?? '').slice(0, 2000)),
      category: terms((t.category ?? '').replace(/[-_]/g, ' ')),
      about: terms((t.about ?? '').slice(0, 500)),
    };
    for (const f of FIELDS) total[f.key] += fields[f.key].length;
    if (!names.has(t.source)) {
      const label = t.keywords ?? '';
      const parts = [t.source, label, ...label.split(/[()]/)].map((p) =>
        words(p).filter((w) => !SUITE_WORDS.has(w) && !STOPWORDS.has(w)),
      );
      names.set(
        t.source,
        parts.filter((p) => p.length > 0),
      );
    }
    const sets = FIELDS.map((f) => new Set(fields[f.key]));
    return { fields, doc: { source, verb: own[0], nameWords: own, mode: t.mode, fields: sets } };
  });
  const n = Math.max(1, tools.length);
  const postings = new Map<string, Array<[number, number]>>();
  perTool.forEach(({ fields }, i) => {
    const tf = new Map<string, number>();
    for (const f of FIELDS) {
      const norm = 1 - f.b + (f.b * fields[f.key].length) / Math.max(1, total[f.key] / n);
      for (const w of fields[f.key]) tf.set(w, (tf.get(w) ?? 0) + f.weight / norm);
    }
    for (const [w, v] of tf) {
      const list = postings.get(w);
      if (list) list.push([i, v]);
      else postings.set(w, [[i, v]]);
    }
  });
  const prefixes = new Map<string, string[]>();
  for (const w of postings.keys()) {
    if (w.length < PREFIX) continue;
    const key = w.slice(0, PREFIX);
    const list = prefixes.get(key);
    if (list) list.push(w);
    else prefixes.set(key, [w]);
  }
  const index = { docs: perTool.map((x) => x.doc), postings, prefixes, sources, sourceDf, names };
  indexes.set(tools, index);
  return index;
}

/** The request's main action: its first read or write verb, as the tool-name verbs it means. */
function actionOf(all: string[]): { intent: 'read' | 'write'; verbs: Set<string> } | undefined {
  for (const [i, w] of all.entries()) {
    // After "the", "a", "my" ... a word is a noun: "open the latest email" does not send one.
    if (DETERMINERS.has(all[i - 1] ?? '')) continue;
    // "Merge requests", "change requests", "pull requests" are things, not asks to merge, change or request.
    if (REQUEST_KINDS.has(w) && REQUEST_WORDS.has(all[i + 1] ?? '')) continue;
    if (REQUEST_WORDS.has(w) && REQUEST_KINDS.has(all[i - 1] ?? '')) continue;
    // A noun used as a verb ("email the team") is one only before any other word that says something.
    if (NOUN_VERBS.has(w) && all.slice(0, i).some((x) => !STOPWORDS.has(x) && !POLITE.has(x))) continue;
    const intent = WRITE_VERBS.has(w) ? 'write' : READ_VERBS.has(w) ? 'read' : undefined;
    if (!intent) continue;
    const means = QUESTION_WORDS.has(w) ? ['list', 'get', 'search'] : (VERB_MEANS[w] ?? SYNONYMS[w] ?? []);
    return { intent, verbs: new Set([stem(w), ...means.map(stem)]) };
  }
  return undefined;
}

/** Interrogatives: a question reads (lists, gets or searches). */
const QUESTION_WORDS = new Set('what whats which who when where how any did have'.split(' '));

/** Quoted text is what to write or send ("tweet 'we just launched!'"), not which tool: left out, unless it is all. */
function withoutQuotes(q: string): string {
  const rest = q.replace(/(^|\s)(["'\u201c\u2018])[^"'\u201c\u201d\u2018\u2019]*["'\u201d\u2019](?=\s|[.,!?]|$)/g, ' ');
  return rest.trim() ? rest : q;
}

/**
 * What follows a colon after a whole instruction is what to write ("file a bug in the api repo: the webhook fires
 * twice"), not which tool: left out. A colon after a word or two names the app or the topic ("jira: my issues").
 */
function withoutColonText(q: string): string {
  const at = q.search(/:\s/);
  if (at < 0) return q;
  const head = q.slice(0, at);
  return (head.match(/[a-z0-9]+/gi) ?? []).length >= 3 ? head : q;
}

/** A weekday after these names an app (monday.com): "in monday", "to monday"; after any other word it is a day. */
const AS_APP = new Set(['in', 'into', 'to', 'via', 'using', 'with']);
const WEEKDAYS = new Set(['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday']);

/**
 * Ranks tools for a request, best first, at most `limit`; tools that share no word with it are left out.
 * Ties keep a stable order (by name).
 */
export function rankTools<T extends SearchableTool>(tools: readonly T[], query: string, limit = 8): RankedTool<T>[] {
  if (limit <= 0) return [];
  const { candidates, rest, request } = lexicalRanking(tools, query, limit);
  return [...rerank(candidates, request), ...rest].slice(0, limit);
}

/**
 * The first step of `rankTools`: the lexical ranking, its first `RERANKED` tools and the `BEST_MATCHED` best word
 * matches after them as candidates for the ranker (with what the ranking saw of each), then the rest up to `limit`,
 * and the request as read (quoted text left out).
 */
export function lexicalRanking<T extends SearchableTool>(
  tools: readonly T[],
  query: string,
  limit: number,
): { candidates: Candidate<T>[]; rest: RankedTool<T>[]; request: string } {
  const none = { candidates: [], rest: [], request: query };
  if (tools.length === 0) return none;
  const index = indexOf(tools);
  const request = withoutQuotes(query.slice(0, MAX_QUERY_CHARS));
  const text = REWRITES.reduce((t, [pattern, by]) => t.replace(pattern, by), withoutColonText(request));
  const all = words(text).slice(0, MAX_QUERY_WORDS * 2);
  const raw = all.filter((w) => !STOPWORDS.has(w)).slice(0, MAX_QUERY_WORDS);
  if (raw.length === 0) return none;
  // Each query word with its synonyms (the word as written first): the best-matching form counts once.
  const groups = raw.map((w) => [...new Set([stem(w), ...(SYNONYMS[w] ?? SYNONYMS[stem(w)] ?? []).map(stem)])]);
  const action = actionOf(all);
  // A plural noun asks for many: "show my tasks" is list_tasks rather than get_task.
  const plurals = new Set(
    raw.filter((w) => w.length > 3 && w.endsWith('s') && !w.endsWith('ss') && !READ_VERBS.has(w)).map(stem),
  );
  // Generic verbs ("find", "show", "make") say what kind of tool, not which: they steer by the tool's verb and
  // are not matched as words (a rare "find" in find_users would otherwise outweigh the request's nouns).
  let content = groups
    .map((group, i) => ({ group, weight: QUALIFIERS.has(raw[i] ?? '') ? 0.5 : 1 }))
    .filter((_, i) => !GENERIC_VERBS.has(raw[i] ?? ''));
  // A request of generic verbs alone ("list") matches them as words.
  if (content.length === 0) content = groups.map((group) => ({ group, weight: 1 }));

  const n = index.docs.length;
  const scores = new Float64Array(n);
  const best = new Float64Array(n);
  // Each content word's forms as matched (with their factors) and its rarity: the ranker's coverage signals.
  const matched: MatchedWord[] = [];
  for (const { group, weight } of content) {
    best.fill(0);
    const forms: Array<[string, number]> = group.map((w, j) => [w, j === 0 ? 1 : 0.85]);
    for (const [w, f] of [...forms]) {
      if (w.length < PREFIX) continue;
      for (const other of index.prefixes.get(w.slice(0, PREFIX)) ?? []) if (other !== w) forms.push([other, f * 0.7]);
    }
    let rarity = 0;
    for (const [w, f] of forms) {
      const list = index.postings.get(w);
      if (!list) continue;
      const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5));
      rarity = Math.max(rarity, idf * f);
      for (const [doc, tf] of list) {
        const s = ((idf * tf * (K1 + 1)) / (K1 + tf)) * f;
        if (s > (best[doc] ?? 0)) best[doc] = s;
      }
    }
    for (let i = 0; i < n; i++) scores[i] = (scores[i] ?? 0) + (best[i] ?? 0) * weight;
    if (rarity > 0) matched.push({ forms, weight: weight * rarity });
  }

  // A request names a provider when it holds its id or its label: a one-word name as written ("slack",
  // "outlook", "teams" but not "team"), a longer one word for word ("cloud run", "outlook contacts"), the
  // suite's name aside. The longest name named wins ("outlook contacts" over "outlook").
  // A name that opens the request before a determiner is its verb ("resend the invoice", not Resend).
  const opensAsVerb = (w: string) => all[0] === w && DETERMINERS.has(all[1] ?? '');
  // A weekday is a day ("monday morning", "she starts monday") unless it is written as an app's name would be
  // ("monday.com", "in monday", "to monday").
  const isDay = (w: string) => {
    if (!WEEKDAYS.has(w)) return false;
    const at = all.indexOf(w);
    return all[at + 1] !== 'com' && !AS_APP.has(all[at - 1] ?? '');
  };
  const asked = new Set(raw.filter((w) => !isDay(w) && !opensAsVerb(w)));
  const askedStems = new Set(raw.map(stem));
  const byKey = new Map<string, number>();
  const named = (source: string): number => {
    let found = byKey.get(source);
    if (found === undefined) {
      found = 0;
      for (const part of index.names.get(source) ?? []) {
        const hit = part.length === 1 ? asked.has(part[0] as string) : part.every((w) => askedStems.has(stem(w)));
        if (hit) found = Math.max(found, part.length);
      }
      byKey.set(source, found);
    }
    return found;
  };

  // How well each source (provider) matches, over all sources: "emails" is a mail provider's word even where a
  // tool's own text says "messages".
  const sourceScores = new Float64Array(index.sources.length);
  const avgSourceLen = Math.max(1, index.sources.reduce((a, x) => a + x.len, 0) / Math.max(1, index.sources.length));
  for (const { group, weight } of content) {
    index.sources.forEach((src, k) => {
      let top = 0;
      for (const [j, w] of group.entries()) {
        const c = src.tf.get(w);
        if (!c) continue;
        const d = index.sourceDf.get(w) ?? 0;
        const idf = Math.log(1 + (index.sources.length - d + 0.5) / (d + 0.5));
        const tf = c / (0.5 + (0.5 * src.len) / avgSourceLen);
        top = Math.max(top, ((idf * tf * (K1 + 1)) / (K1 + tf)) * (j === 0 ? 1 : 0.85));
      }
      sourceScores[k] = (sourceScores[k] ?? 0) + top * weight;
    });
  }

  const aboutMe = all.some((w) => w === 'my' || w === 'me' || w === 'i' || w === 'mine');
  // What a tool has of what the request asks: the bonuses below and the ranker's signals both read it.
  const askedOf = (doc: Doc, tool: T): Asked => ({
    // The action asked: a tool of that mode, and one whose name starts with the verb asked, does what was asked.
    modeAsked: Boolean(action && doc.mode === action.intent),
    verbAsked: Boolean(action && doc.verb && action.verbs.has(doc.verb)),
    pluralList: action?.intent !== 'write' && doc.verb === 'list' && doc.nameWords.some((w) => plurals.has(w)),
    // "my", "I", "me": the user's own things (list_my_teams, get_my_profile).
    mine: aboutMe && doc.nameWords.some((w) => w === 'my' || w === 'me'),
    popular: Boolean(tool.popular),
    named: named(tool.source),
  });
  const ranked: Array<RankedTool<T> & { doc: number; match: number; asked: Asked }> = [];
  tools.forEach((tool, i) => {
    const score = scores[i] ?? 0;
    if (score <= 0) return;
    const doc = index.docs[i] as Doc;
    const asked = askedOf(doc, tool);
    let bonus = SOURCE_WEIGHT * (sourceScores[doc.source] ?? 0);
    if (asked.modeAsked) bonus += 0.6;
    if (asked.verbAsked) bonus += 2.5;
    if (asked.pluralList) bonus += 0.8;
    if (asked.mine) bonus += 0.8;
    // With nothing else to tell them apart, the app most people use (Gmail over a transactional mail API).
    if (asked.popular) bonus += POPULAR_WEIGHT;
    if (asked.named > 0) bonus += NAMED_WEIGHT + 5 * asked.named;
    ranked.push({ tool, score: score + bonus, doc: i, match: score, asked });
  });
  ranked.sort((a, b) => b.score - a.score || a.tool.name.localeCompare(b.tool.name));
  // The ranker's candidates: the first thirty, then the best word matches after them, in the ranking's order.
  const after = ranked.slice(RERANKED);
  const wellMatched = bestMatchedAt(after, BEST_MATCHED);
  const head = [...ranked.slice(0, RERANKED), ...after.filter((_, at) => wellMatched.has(at))];
  const rest = after
    .filter((_, at) => !wellMatched.has(at))
    .slice(0, Math.max(0, limit - head.length))
    .map(({ tool, score }) => ({ tool, score }));
  const topSource = Math.max(0, ...head.map((r) => sourceScores[(index.docs[r.doc] as Doc).source] ?? 0));
  const candidates = head.map((r, rank): Candidate<T> => {
    const doc = index.docs[r.doc] as Doc;
    return {
      tool: r.tool,
      lexical: r.score,
      signals: {
        rank,
        match: r.match,
        cover: coverage(doc, matched),
        source: topSource > 0 ? (sourceScores[doc.source] ?? 0) / topSource : 0,
        intent: action?.intent,
        mode: doc.mode,
        verb: doc.verb,
        ...r.asked,
      },
    };
  });
  return { candidates, rest, request };
}

/** The places of the `n` tools whose words match best (`match`, the earlier place first on a tie), in one pass. */
function bestMatchedAt(ranked: ReadonlyArray<{ match: number }>, n: number): Set<number> {
  if (n <= 0) return new Set();
  // Places kept, best match first.
  const top: number[] = [];
  const matchAt = (k: number) => ranked[top[k] as number]?.match ?? 0;
  ranked.forEach((r, at) => {
    if (top.length === n) {
      if (r.match <= matchAt(n - 1)) return;
      top.pop();
    }
    let i = top.length;
    while (i > 0 && matchAt(i - 1) < r.match) i--;
    top.splice(i, 0, at);
  });
  return new Set(top);
}

interface MatchedWord {
  forms: Array<[string, number]>;
  /** The word's weight (a qualifier's half) times its rarest form's idf. */
  weight: number;
}

/**
 * How much of the request each of a tool's fields holds (in `FIELDS` order), then any of them: the rarity-weighted
 * share of the request's content words found there, each by its best form.
 */
function coverage(doc: Doc, matched: readonly MatchedWord[]): number[] {
  const out = new Array<number>(FIELDS.length + 1).fill(0);
  let total = 0;
  for (const { forms, weight } of matched) {
    total += weight;
    let any = 0;
    doc.fields.forEach((field, k) => {
      let m = 0;
      for (const [w, f] of forms) if (f > m && field.has(w)) m = f;
      out[k] = (out[k] ?? 0) + weight * m;
      any = Math.max(any, m);
    });
    out[FIELDS.length] = (out[FIELDS.length] ?? 0) + weight * any;
  }
  return total > 0 ? out.map((x) => x / total) : out;
}

/** `rankTools` without the scores. */
export function searchTools<T extends SearchableTool>(tools: readonly T[], query: string, limit = 8): T[] {
  return rankTools(tools, query, limit).map((r) => r.tool);
}
