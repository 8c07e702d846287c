import { Browser } from '../test/e2e/oauth-helpers.ts';
import {
  acmeProvider,
  type FakeOAuthProvider,
  providersDirEnv,
  startFakeOAuthProvider,
} from '../test/fakes/oauth-provider.ts';
import {
  type Benchmark,
  type Figure,
  type LoadResult,
  load,
  median,
  signupWithSession,
  startBenchServer,
  startChild,
  stopChild,
} from './lib.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const WARMUP_SECONDS = 2;
const RATIO_BUDGET = 0.5;

const rpc = (method: string, params: object) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
const CALLS = {
  'tools/list': rpc('tools/list', {}),
  'list-connections': rpc('tools/call', { name: 'list-connections', arguments: {} }),
} as const;
type Call = keyof typeof CALLS;
type Pair = Record<'switchboard' | 'bare', LoadResult>;

/** What an MCP SDK client sends after initialize (the server is stateless: no session id). */
const MCP_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
};

/**
 * Connects a provider through the real flow over HTTP, as a browser runs it: initiate, our authorization URL (which
 * sets the cookie binding the flow to this browser and sends it on to the provider), the fake's approval, and our
 * callback with that cookie.
 */
async function connect(baseUrl: string, session: string, providerId: string): Promise<void> {
  const init = await fetch(`${baseUrl}/api/v1/connections/initiate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${session}` },
    body: JSON.stringify({ providerId, redirectUrl: `${baseUrl}/app/connections` }),
  });
  if (init.status !== 200) throw new Error(`initiate answered ${init.status}: ${await init.text()}`);
  const { authorizationUrl } = (await init.json()) as { authorizationUrl: string };
  // The tests' cookie-keeping browser: our authorization URL sets the binding cookie the callback asks for.
  const browser = new Browser(baseUrl);
  const opened = await browser.request(authorizationUrl);
  if (opened.status !== 302) throw new Error(`opening ${authorizationUrl} answered ${opened.status}`);
  const approved = await browser.request(opened.headers.get('location') ?? '');
  const callback = await browser.request(approved.headers.get('location') ?? '');
  const back = new URL(callback.headers.get('location') ?? '', baseUrl);
  if (!back.searchParams.get('connectionId')) throw new Error(`connecting ${providerId} failed: ${back}`);
}

interface Target {
  url: string;
  headers: Record<string, string>;
}

/**
 * Loads each server in turn, ROUNDS times, and answers the medians: alternating rounds make both meet the
 * same drift in the machine's other load (it is shared), and a slow round of one does not decide the ratio.
 */
async function measure(targets: Record<'switchboard' | 'bare', Target>): Promise<Record<Call, Pair>> {
  const out = {} as Record<Call, Pair>;
  for (const call of Object.keys(CALLS) as Call[]) {
    const runs: Record<'switchboard' | 'bare', LoadResult[]> = { switchboard: [], bare: [] };
    const opts = { connections: CONNECTIONS, method: 'POST' as const, body: CALLS[call] };
    for (const t of Object.values(targets)) await load(t.url, { ...opts, headers: t.headers, seconds: WARMUP_SECONDS });
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of ['bare', 'switchboard'] as const) {
        const t = targets[name];
        runs[name].push(await load(t.url, { ...opts, headers: t.headers, seconds: SECONDS }));
      }
    }
    const summary = (rs: LoadResult[]): LoadResult => ({
      rps: median(rs.map((r) => r.rps)),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      failures: rs.reduce((n, r) => n + r.failures, 0),
    });
    out[call] = { switchboard: summary(runs.switchboard), bare: summary(runs.bare) };
  }
  return out;
}

/**
 * ARCHITECTURE.md budget: `tools/list` and `list-connections` at least half the throughput of a bare MCP SDK
 * server (bench/bare-mcp.js: McpServer + stateless StreamableHTTPServerTransport on node:http, the same two
 * tools answering the same shapes from memory), in one run on this machine. Switchboard runs as `npm start`
 * does, on the embedded database (BENCH_DATABASE_URL: PostgreSQL), with its default token cache, called
 * with a PAT of `universal-mcp-read-write` whose account has two connections made through the real connect
 * flow (two fake OAuth providers in this process). The servers are loaded in turn, in alternating rounds
 * (SSE answers, as SDK clients ask). BENCH_PROFILE=DIR writes Switchboard's CPU profile there.
 */
export const mcpBenchmark: Benchmark = {
  name: 'mcp',
  summary: `POST /mcp tools/list and list-connections beside a bare MCP SDK server (${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s)`,
  async run() {
    const fakes: FakeOAuthProvider[] = [
      await startFakeOAuthProvider(),
      await startFakeOAuthProvider({ clientId: 'globex-client-id', clientSecret: 'globex-client-secret' }),
    ];
    const [acme, globex] = fakes as [FakeOAuthProvider, FakeOAuthProvider];
    globex.user = { id: 'g-77', login: 'ada-g', name: 'Ada at Globex', email: 'ada@globex.test' };
    const providers = providersDirEnv([
      { fake: acme, definition: acmeProvider(acme.url) },
      { fake: globex, definition: acmeProvider(globex.url, { id: 'globex', label: 'Globex' }) },
    ]);
    const pg = process.env.BENCH_DATABASE_URL;
    const server = await startBenchServer({ RATE_LIMIT_MCP: '1000000000', ...providers });
    try {
      const { session, pat } = await signupWithSession(server.url, ['universal-mcp-read-write']);
      await connect(server.url, session, 'acme');
      await connect(server.url, session, 'globex');
      const headers = { ...MCP_HEADERS, authorization: `Bearer ${pat}` };
      const probe = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { ...headers, 'x-response-format': 'json' },
        body: CALLS['list-connections'],
      });
      const listed = (await probe.json()) as { result?: { _meta?: { active?: unknown[] } } };
      const active = listed.result?._meta?.active;
      if (probe.status !== 200 || active?.length !== 2) {
        throw new Error(`list-connections answered ${probe.status}: ${JSON.stringify(listed)}`);
      }

      // Both servers are up; each idles while the other is loaded.
      const bare = await startChild('bench/bare-mcp.js', [JSON.stringify(active)]);
      let results: Record<Call, Pair>;
      try {
        results = await measure({
          switchboard: { url: `${server.url}/mcp`, headers },
          bare: { url: `${bare.line}/mcp`, headers: MCP_HEADERS },
        });
      } finally {
        await stopChild(bare.child);
      }

      const figures: Figure[] = [];
      for (const call of Object.keys(CALLS) as Call[]) {
        const sb = results[call].switchboard;
        const base = results[call].bare;
        const ratio = sb.rps / base.rps;
        figures.push(
          {
            name: `${call} throughput`,
            unit: 'req/s',
            value: sb.rps,
            baseline: base.rps,
            budget: { text: `ratio >= ${RATIO_BUDGET}`, ok: ratio >= RATIO_BUDGET },
          },
          { name: `${call} latency p50`, unit: 'ms', value: sb.p50, baseline: base.p50 },
          { name: `${call} latency p99`, unit: 'ms', value: sb.p99, baseline: base.p99 },
        );
      }
      const failures = (Object.keys(CALLS) as Call[]).map(
        (c) => `${c}: switchboard ${results[c].switchboard.failures}, bare ${results[c].bare.failures}`,
      );
      return {
        title: `POST /mcp (PAT, SSE answers) on ${pg ? 'PostgreSQL' : 'PGlite'}, ${CONNECTIONS} connections, median of ${ROUNDS} alternating ${SECONDS} s rounds`,
        baseline: 'bare MCP SDK',
        figures,
        notes: [
          ...((Object.keys(CALLS) as Call[]).some((c) => results[c].switchboard.failures + results[c].bare.failures)
            ? [`failures (non-2xx, errors, timeouts): ${failures.join('; ')}`]
            : []),
          'bare MCP SDK: McpServer + stateless StreamableHTTPServerTransport on node:http, the same two tools from memory;',
          'Switchboard: a PAT, two connections of the account from the database; the servers are loaded in turn.',
        ],
      };
    } finally {
      await server.stop();
      for (const fake of fakes) await fake.close();
    }
  },
};
