import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { offeredTools, openingMessages } from '../src/agent/runtime.ts';
import { type AgentTool, searchTools } from '../src/agent/tool-group.ts';
import { loadConfig } from '../src/config.ts';
import { PACKAGE_ROOT } from '../src/lib/paths.ts';
import { lexicalRanking } from '../src/lib/tool-search.ts';
import { countTokens } from '../src/llm-upstreams/tokens.ts';
import { agentToolName } from '../src/modules/connections/provider-tools.ts';
import { providerCatalog } from '../src/modules/providers/catalog.ts';
import { toolSearchWords } from '../src/modules/providers/tool-search.ts';

/**
 * How often the agent's `find_tools` search puts the right tool in its top 5 with every provider of the
 * catalog connected, on the labelled requests of test/fixtures/tool-search-set.json (the `tune` part was used
 * to improve the search, the `heldOut` part never), and the prompt tokens of the first model call.
 */

type Labelled = Array<[string, string]>;
export const TOOL_SEARCH_SET = JSON.parse(
  readFileSync(join(PACKAGE_ROOT, 'test', 'fixtures', 'tool-search-set.json'), 'utf8'),
) as { tune: Labelled; heldOut: Labelled };

/** Every tool of the catalog as the agent sees it with one connection per provider. */
export function catalogAgentTools(): AgentTool[] {
  const catalog = providerCatalog(loadConfig({}));
  return catalog.providers.flatMap(({ definition: def }) =>
    def.tools.map((t) => ({
      name: agentToolName(def.id, t.name),
      description: t.description,
      parameters: t.parameters as unknown as Record<string, unknown>,
      mode: t.mode,
      source: def.id,
      ...toolSearchWords(def, t),
      run: async () => null,
    })),
  );
}

export function topFiveRate(tools: readonly AgentTool[], set: Labelled): { hits: number; misses: string[] } {
  const misses: string[] = [];
  let hits = 0;
  for (const [request, expected] of set) {
    const found = searchTools(tools, request, 5).map((t) => t.name);
    if (found.includes(expected)) hits++;
    else misses.push(`${request} -> ${expected} (got ${found.join(', ') || 'nothing'})`);
  }
  return { hits, misses };
}

/**
 * Time per search over the whole catalog, warm (its index built, the vectors read), beside the lexical ranking
 * alone (`lexicalRanking`, what the ranker re-orders): the ranker's cost is the difference. The median of five
 * passes over the requests.
 */
function timeSearches(tools: readonly AgentTool[], requests: readonly string[]): void {
  const pass = (search: (q: string) => unknown) => {
    const times: number[] = [];
    for (let round = 0; round < 6; round++) {
      const start = performance.now();
      for (const q of requests) search(q);
      if (round > 0) times.push((performance.now() - start) / requests.length);
    }
    return times.sort((a, b) => a - b)[2] ?? 0;
  };
  const lexical = pass((q) => lexicalRanking(tools, q, 5));
  const whole = pass((q) => searchTools(tools, q, 5));
  console.log(
    `  time a search: ${whole.toFixed(2)} ms (lexical ranking alone ${lexical.toFixed(2)} ms, the ranker +${(whole - lexical).toFixed(2)} ms)`,
  );
}

export async function benchToolSearch(): Promise<void> {
  const tools = catalogAgentTools();
  const providers = new Set(tools.map((t) => t.source)).size;
  const tune = topFiveRate(tools, TOOL_SEARCH_SET.tune);
  const held = topFiveRate(tools, TOOL_SEARCH_SET.heldOut);
  const pct = (n: number, d: number) => `${((100 * n) / d).toFixed(1)}%`;
  console.log(`Tool search, top 5, ${providers} providers connected (${tools.length} tools)`);
  console.log(`  tune     ${tune.hits}/${TOOL_SEARCH_SET.tune.length} ${pct(tune.hits, TOOL_SEARCH_SET.tune.length)}`);
  console.log(
    `  held-out ${held.hits}/${TOOL_SEARCH_SET.heldOut.length} ${pct(held.hits, TOOL_SEARCH_SET.heldOut.length)}`,
  );
  // Only the tune part's misses are shown: the held-out part must not steer changes to the search.
  if (process.argv.includes('--misses')) for (const m of tune.misses) console.log(`  miss: ${m}`);
  timeSearches(
    tools,
    TOOL_SEARCH_SET.tune.map(([request]) => request),
  );
  const prompt = 'Find the open GitHub issues labelled bug and post a summary to the #eng Slack channel.';
  const tokens = await countTokens(
    JSON.stringify({ messages: openingMessages({ prompt, tools }), tools: offeredTools(tools) }),
  );
  console.log(`  first model call: ${tokens} prompt tokens (catalogue of find/describe/call tools)`);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchToolSearch();
