import { availableParallelism, loadavg } from 'node:os';
import { agentChatBenchmark } from './agent-chat.ts';
import { benchAgentPromptTokens } from './agent-prompt-tokens.ts';
import { apiBenchmark } from './api.ts';
import { gatewayAbBenchmark } from './gateway-ab.ts';
import { gatewayAllocBenchmark } from './gateway-alloc.ts';
import { gatewayTailBenchmark } from './gateway-tail.ts';
import { injectionBenchmark } from './injection.ts';
import { knowledgeBenchmark } from './knowledge.ts';
import { type Benchmark, formatResult } from './lib.ts';
import { benchLlmGateway } from './llm-gateway.ts';
import { mcpBenchmark } from './mcp.ts';
import { sandboxBenchmark } from './sandbox.ts';
import { startupBenchmark } from './startup.ts';
import { benchToolSearch } from './tool-search.ts';

/**
 * `npm run bench [-- NAME ...] [--strict]`: runs the named benchmarks (default: all) one after another and
 * prints one table each. `--strict` exits 1 when a budget is missed. To add one, write bench/NAME.ts
 * exporting a Benchmark (see bench/lib.ts) and list it here.
 */
const BENCHMARKS: Benchmark[] = [
  apiBenchmark,
  startupBenchmark,
  mcpBenchmark,
  {
    name: 'agent-chat',
    summary: 'Agent chat overhead over a direct gateway call with the same instant upstream (p50, p99)',
    run: agentChatBenchmark,
  },
  {
    name: 'knowledge',
    summary: 'Knowledge search on 10,000 pages of a public corpus: p50/p95 and nDCG@10/recall@10 (held-out)',
    run: knowledgeBenchmark,
  },
  {
    name: 'llm-gateway',
    summary:
      'LLM gateway beside its upstream called directly: PGlite and PostgreSQL, instant and 200 ms upstream, 1/50/200 concurrent, JSON and stream (prints its own tables)',
    async run() {
      await benchLlmGateway();
      return { title: '', baseline: '', figures: [] };
    },
  },
  {
    name: 'gateway-alloc',
    summary: 'Memory the LLM gateway allocates per request beside the bare relay (sampling heap profiler)',
    run: gatewayAllocBenchmark,
  },
  {
    name: 'gateway-tail',
    summary:
      "Where the LLM gateway's p99 comes from beside the bare relay (200 ms upstream, 200 concurrent): undici's send wait, event-loop delay, GC pauses",
    run: gatewayTailBenchmark,
  },
  {
    name: 'gateway-ab',
    summary:
      "This checkout's LLM gateway against another checkout's (BENCH_BASE_DIR), interleaved rounds: CPU per request",
    run: gatewayAbBenchmark,
  },
  {
    name: 'tool-search',
    summary:
      'Top-5 rate of the agent tool search on labelled requests with every provider connected (prints its own table)',
    async run() {
      await benchToolSearch();
      return { title: '', baseline: '', figures: [] };
    },
  },
  {
    name: 'injection',
    summary: 'Prompt-injection detector on a 50 KB tool output, beside one plain regex scan',
    run: injectionBenchmark,
  },
  {
    name: 'agent-prompt-tokens',
    summary: 'Prompt tokens of the first use-agent model call at 1, 10 and 50 connections (prints its own table)',
    async run() {
      await benchAgentPromptTokens();
      return { title: '', baseline: '', figures: [] };
    },
  },
  {
    name: 'sandbox',
    summary: 'Code sandbox run overhead, cold and warm, per language, beside a bare node -e of the same code',
    run: sandboxBenchmark,
  },
];

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('--list')) {
  console.log('Usage: npm run bench [-- NAME ...] [--strict]\n');
  for (const b of BENCHMARKS) console.log(`  ${b.name.padEnd(12)} ${b.summary}`);
  process.exit(0);
}
const names = args.filter((a) => !a.startsWith('-'));
const unknown = names.filter((n) => !BENCHMARKS.some((b) => b.name === n));
if (unknown.length) {
  console.error(`Unknown benchmark: ${unknown.join(', ')}; known: ${BENCHMARKS.map((b) => b.name).join(', ')}`);
  process.exit(2);
}
const chosen = names.length ? BENCHMARKS.filter((b) => names.includes(b.name)) : BENCHMARKS;

console.log(
  `# Switchboard benchmarks: node ${process.version}, ${availableParallelism()} cores, load average ${loadavg()[0]?.toFixed(1)} at start`,
);
const started = performance.now();
let over = 0;
for (const b of chosen) {
  console.log('');
  const result = await b.run();
  if (result.figures.length) console.log(formatResult(result));
  over += result.figures.filter((f) => f.budget && !f.budget.ok).length;
}
console.log(`\n${chosen.length} benchmark(s) in ${Math.round((performance.now() - started) / 1000)} s`);
if (over && args.includes('--strict')) process.exit(1);
