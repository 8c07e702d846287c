import type { ChatTool } from '../llm/types.ts';

/** A tool the agent may call: provider tools, built-in groups and custom tools all take this shape. */
export interface AgentTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  mode: 'read' | 'write';
  /** Where it comes from (a provider id, `built-in` ...): shown in progress messages. */
  source: string;
  /** More words the tool search matches (a provider's label), never shown to the model. */
  keywords?: string;
  /** The provider's category (`video-meetings`): matched as loosely as a description. */
  category?: string;
  /**
   * Runs the call. A tool that bills on its own (a sandbox run) tells `charged` what it cost, so the run's
   * total, `X-Credits-Consumed` and an agent's monthly cap count it like a model call.
   */
  run(args: Record<string, unknown>, signal: AbortSignal, charged?: (credits: number) => void): Promise<unknown>;
}

export function toChatTool(tool: Pick<AgentTool, 'name' | 'description' | 'parameters'>): ChatTool {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

/** Past this many tools the model gets a catalogue to search instead of every schema at once. */
export const DIRECT_TOOL_LIMIT = 16;

const words = (s: string) => s.toLowerCase().match(/[a-z0-9]+/g) ?? [];

/** Words that say nothing about which tool is meant. */
const STOPWORDS = new Set(
  "a an the my me i i'm im we our you your to of in on at for from with and or by is are be it its this that these those what whats which who when where how do does did can could would please about into all any some there their them s".split(
    ' ',
  ),
);

/**
 * How people ask against how tools are named: each word on the left also counts as the words on the right.
 * Verbs map to the tool-name verbs (list, search, create, update, delete, send), nouns to the API's nouns.
 */
const SYNONYMS: Record<string, string[]> = {
  find: ['search'],
  look: ['search', 'get'],
  lookup: ['search'],
  show: ['list', 'get'],
  read: ['get', 'list'],
  see: ['list', 'get'],
  whats: ['list'],
  add: ['create'],
  new: ['create'],
  make: ['create'],
  schedule: ['create', 'meeting', 'event'],
  open: ['create'],
  write: ['update', 'create'],
  overwrite: ['update'],
  set: ['update'],
  change: ['update'],
  edit: ['update'],
  rename: ['update', 'move'],
  reschedule: ['update'],
  mark: ['update'],
  done: ['update', 'complete'],
  complete: ['update'],
  completed: ['update'],
  close: ['update'],
  remove: ['delete'],
  cancel: ['delete'],
  post: ['send', 'create'],
  reply: ['send'],
  email: ['mail', 'message'],
  mail: ['email', 'message'],
  emails: ['mail', 'message'],
  inbox: ['message', 'mail'],
  thread: ['thread'],
  meeting: ['meeting', 'event'],
  appointment: ['event'],
  free: ['busy'],
  busy: ['free'],
  tab: ['sheet', 'spreadsheet'],
  cell: ['range'],
  row: ['append', 'row', 'record'],
  server: ['guild'],
  song: ['track'],
  music: ['track'],
  liked: ['saved'],
  like: ['saved'],
  listening: ['played'],
  listened: ['played'],
  lately: ['recently'],
  playing: ['currently', 'playing'],
  phone: ['contact'],
  person: ['contact'],
  people: ['contact', 'directory'],
  colleague: ['directory'],
  readme: ['file', 'contents'],
  attended: ['participant'],
  attendee: ['participant'],
  register: ['registrant'],
  ticket: ['issue'],
  bug: ['issue'],
  pr: ['pull', 'request'],
  repo: ['repository'],
  doc: ['document', 'page'],
  note: ['note', 'page'],
  todo: ['task'],
  subscribed: ['subscription'],
};

/** Words naming a whole suite of providers, not one of them. */
const SUITE_WORDS = new Set(['google', 'microsoft']);

/** A crude stem: plural and verb endings off, so "meetings" finds "meeting" and "labelled" "label". */
function stem(w: string): string {
  if (w.length > 4 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.length > 5 && w.endsWith('ing')) return w.slice(0, -3);
  if (w.length > 4 && w.endsWith('ed')) return w.slice(0, -2);
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss')) return w.slice(0, -1);
  return w;
}

const terms = (s: string) => words(s).map(stem);

/** A tool's name without the provider prefix every agent tool name starts with (`github_create_issue`). */
const ownName = (t: AgentTool) => {
  const prefix = `${t.source.replace(/[^a-z0-9_]/g, '_')}_`;
  return t.name.startsWith(prefix) ? t.name.slice(prefix.length) : t.name;
};

interface Indexed {
  tool: AgentTool;
  name: Set<string>;
  provider: Set<string>;
  desc: Set<string>;
}

/**
 * Ranks tools for a query: each query word (stemmed, with its synonyms) weighs by how rare it is among the
 * tools (inverse document frequency), three times in a tool's name, twice in its provider's id or label, once in
 * its description or its provider's category. A query naming a provider keeps its tools ahead of the others.
 */
export function searchTools(tools: readonly AgentTool[], query: string, limit = 8): AgentTool[] {
  const indexed: Indexed[] = tools.map((t) => ({
    tool: t,
    // The tool's own name: its provider's id, which prefixes every name, counts as a provider word.
    name: new Set(terms(ownName(t))),
    provider: new Set(terms(`${t.source} ${t.keywords ?? ''}`)),
    desc: new Set(terms(`${t.description} ${t.category ?? ''}`)),
  }));
  const df = new Map<string, number>();
  for (const x of indexed) {
    for (const w of new Set([...x.name, ...x.provider, ...x.desc])) df.set(w, (df.get(w) ?? 0) + 1);
  }
  const idf = (w: string) => Math.log(1 + indexed.length / (1 + (df.get(w) ?? 0)));
  // "to do" is one word to people and a provider (Microsoft To Do) to us.
  const raw = words(query.replace(/\bto[\s-]?dos?\b/gi, 'todo')).filter((w) => !STOPWORDS.has(w));
  // Each query word with its synonyms (the word as written first): the best-matching form counts once.
  const groups = raw.map((w) => [...new Set([stem(w), ...(SYNONYMS[w] ?? SYNONYMS[stem(w)] ?? []).map(stem)])]);
  // A request names a provider when it holds every word of the provider's id or of its label, the suite's
  // name aside: "slack", "outlook", "teams" (Microsoft Teams), "cloud run" (Google Cloud Run), but not "run"
  // alone or "meeting" alone (GoTo Meeting), words many other tools use.
  const asked = new Set(groups.map((g) => g[0] as string));
  const namedBy = new Map<string, boolean>();
  const isNamed = (t: AgentTool): boolean => {
    let named = namedBy.get(t.source);
    if (named === undefined) {
      named = [t.source, t.keywords ?? ''].some((text) => {
        const own = terms(text).filter((w) => !SUITE_WORDS.has(w) && !STOPWORDS.has(w));
        return own.length > 0 && own.every((w) => asked.has(w));
      });
      namedBy.set(t.source, named);
    }
    return named;
  };
  return indexed
    .map((x) => {
      let score = 0;
      for (const group of groups) {
        let best = 0;
        for (const [i, w] of group.entries()) {
          const weight = (x.name.has(w) ? 3 : x.provider.has(w) ? 2 : x.desc.has(w) ? 1 : 0) * idf(w);
          // The word as written counts fully, a synonym a little less.
          best = Math.max(best, i === 0 ? weight : weight * 0.8);
        }
        score += best;
      }
      // A tool whose name starts with the request's first word (or its synonyms) does what was asked: "show my
      // lists" prefers list_* and get_* to create_* among tools that match as well otherwise.
      const verb = groups[0] ?? [];
      const first = terms(ownName(x.tool))[0];
      const acts = score > 0 && first !== undefined && verb.includes(first) ? 0.5 : 0;
      return { t: x.tool, score: score + acts + (isNamed(x.tool) ? 100 : 0), plain: score };
    })
    .filter((x) => x.plain > 0)
    .sort((a, b) => b.score - a.score || a.t.name.localeCompare(b.t.name))
    .slice(0, limit)
    .map((x) => x.t);
}

/** The three catalogue tools: find, describe (which also loads the tool), and call. */
export const CATALOG_TOOLS: ChatTool[] = [
  toChatTool({
    name: 'find_tools',
    description:
      "Search the tools of the user's connected services by keywords (service name, action, object). Returns names and one-line descriptions.",
    parameters: {
      type: 'object',
      properties: { query: { type: 'string', description: 'keywords, e.g. "github create issue"' } },
      required: ['query'],
    },
  }),
  toChatTool({
    name: 'describe_tool',
    description: 'Get the full parameter schema of a tool found with find_tools. The tool can then be called directly.',
    parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  }),
  toChatTool({
    name: 'call_tool',
    description: 'Run a tool by name with its arguments (an object matching its schema).',
    parameters: {
      type: 'object',
      properties: { name: { type: 'string' }, arguments: { type: 'object' } },
      required: ['name', 'arguments'],
    },
  }),
];
