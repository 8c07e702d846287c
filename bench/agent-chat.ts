import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { Pool } from 'undici';
import {
  BENCH_ENCRYPTION_KEYS,
  type BenchResult,
  type Figure,
  freshBenchDatabase,
  signupWithSession,
  startBenchServer,
  startChild,
  stopChild,
} from './lib.ts';

/**
 * Agent chat against a direct gateway call with the same instant fake upstream, one request at a time (what a
 * person chatting waits for): a one-step reply through `POST /agents/:id/chat/completions` (conversation made,
 * messages and events stored, limits checked, the model called once, billed) beside `POST /chat/completions`,
 * and the second turn of a conversation (its history read back), taking turns request by request so all three
 * see the same load. On PGlite, and on PostgreSQL when
 * BENCH_DATABASE_URL is set (BENCH_DATABASES=pglite,pg chooses). Budget (issue 11): the agent's overhead on a
 * one-step reply under 5 ms at p50. Each database's figures carry the machine's 1-minute load average. With
 * BENCH_BASE_DIR, another checkout's one-step reply and second turn are measured in the same turns (`measure`).
 */
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 300);

interface Variant {
  origin: string;
  headers: Record<string, string>;
  path: string;
  body: (i: number) => string;
}

/**
 * Sends the variants' requests one at a time, taking turns (direct, agent, ...), so each variant's figures are
 * measured under the same load of the shared machine; the first 20 rounds warm up.
 */
async function timeInTurns(variants: Variant[]) {
  const pools = new Map<string, Pool>();
  for (const v of variants) if (!pools.has(v.origin)) pools.set(v.origin, new Pool(v.origin, { connections: 1 }));
  const times: number[][] = variants.map(() => []);
  try {
    for (let i = 0; i < REQUESTS + 20; i++) {
      for (const [v, variant] of variants.entries()) {
        const t = performance.now();
        const res = await pools.get(variant.origin)?.request({
          method: 'POST',
          path: variant.path,
          headers: { 'content-type': 'application/json', ...variant.headers },
          body: variant.body(i),
        });
        if (!res) throw new Error('no pool');
        await res.body.text();
        if (res.statusCode !== 200) throw new Error(`${variant.path} answered ${res.statusCode}`);
        if (i >= 20) times[v]?.push(performance.now() - t);
      }
    }
  } finally {
    for (const pool of pools.values()) await pool.close();
  }
  return times.map((list) => {
    list.sort((a, b) => a - b);
    const at = (p: number) => list[Math.min(list.length - 1, Math.floor(list.length * p))] ?? Number.NaN;
    return { p10: at(0.1), p50: at(0.5), p99: at(0.99) };
  });
}

/** A server with an agent, and conversations for the second turns, each started by one one-step reply. */
async function side(start: typeof startBenchServer, env: Record<string, string>) {
  const server = await start(env);
  const { session, pat } = await signupWithSession(server.url, ['llm-all', 'agents-use']);
  await fetch(`${server.url}/api/v1/credit-transactions`, { headers: { authorization: `Bearer ${session}` } });
  const agent = (await (
    await fetch(`${server.url}/api/v1/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Bench', enabledBuiltInTools: [] }),
    })
  ).json()) as { id: string };
  const auth = { authorization: `Bearer ${pat}` };
  const chatPath = `/api/v1/agents/${agent.id}/chat/completions`;
  const started: string[] = [];
  const pool = new Pool(server.url, { connections: 1 });
  for (let i = 0; i < REQUESTS + 20; i++) {
    const res = await pool.request({
      method: 'POST',
      path: chatPath,
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ messages: MESSAGES }),
    });
    await res.body.text();
    started.push(String(res.headers['x-conversation-id']));
  }
  await pool.close();
  const origin = new URL(server.url).origin;
  const variants: Variant[] = [
    { origin, headers: auth, path: chatPath, body: () => JSON.stringify({ messages: MESSAGES }) },
    {
      origin,
      headers: auth,
      path: chatPath,
      body: (i) => JSON.stringify({ messages: MESSAGES, conversationId: started[i] }),
    },
  ];
  return { server, auth, origin, variants };
}

const MESSAGES = [{ role: 'user', content: 'Say ok.' }];

/**
 * The figures of this checkout; with BENCH_BASE_DIR (another checkout, e.g. main's, with its own node_modules or a
 * link to one), that checkout's server runs beside it on a database of its own (PostgreSQL: a fresh one, as this one's)
 * and its one-step reply and second turn take turns with this one's, request by request: a change's cost,
 * measured under the same load of the shared machine.
 */
async function measure(upstream: string, label: string, env: Record<string, string>): Promise<Figure[]> {
  const gatewayEnv = {
    LLM_BASE_URL: upstream,
    LLM_MODELS: 'fake-model=1000000/2000000',
    RATE_LIMIT_LLM: '1000000000',
  };
  const baseDir = process.env.BENCH_BASE_DIR;
  const sides: Array<Awaited<ReturnType<typeof side>>> = [];
  let basePg: Awaited<ReturnType<typeof freshBenchDatabase>> | undefined;
  try {
    sides.push(await side(startBenchServer, { ...gatewayEnv, ...env }));
    if (baseDir) {
      const base = (await import(resolve(baseDir, 'bench/lib.ts'))) as { startBenchServer: typeof startBenchServer };
      // The other checkout's server gets a fresh database of its own too (its startBenchServer may be older than
      // freshBenchDatabase and use BENCH_DATABASE_URL's as it is).
      const pg = process.env.BENCH_DATABASE_URL;
      basePg = env.DATABASE_URL && pg ? await freshBenchDatabase(pg) : undefined;
      const baseEnv = basePg ? { ...env, DATABASE_URL: basePg.url } : env;
      if (basePg) process.env.BENCH_DATABASE_URL = basePg.url;
      try {
        sides.push(await side(base.startBenchServer, { ...gatewayEnv, ...baseEnv }));
      } finally {
        if (basePg) process.env.BENCH_DATABASE_URL = pg;
      }
    }
    const [mine, base] = sides;
    if (!mine) throw new Error('no server');
    const load = () => loadavg()[0]?.toFixed(1) ?? '?';
    const loadBefore = load();
    const [direct, viaAgent, second, baseAgent, baseSecond] = await timeInTurns([
      {
        origin: mine.origin,
        headers: mine.auth,
        path: '/api/v1/chat/completions',
        body: () => JSON.stringify({ model: 'fake-model', messages: MESSAGES }),
      },
      ...mine.variants,
      ...(base?.variants ?? []),
    ]);
    if (!direct || !viaAgent || !second) throw new Error('missing figures');
    const overhead = viaAgent.p50 - direct.p50;
    console.log(`(${label}: 1-minute load average ${loadBefore} before, ${load()} after)`);
    const figures: Figure[] = [
      { name: `${label}: one-step reply p50`, unit: 'ms', value: viaAgent.p50, baseline: direct.p50 },
      { name: `${label}: one-step reply p99`, unit: 'ms', value: viaAgent.p99, baseline: direct.p99 },
      {
        name: `${label}: agent overhead p50`,
        unit: 'ms',
        value: overhead,
        budget: { text: '< 5 ms', ok: overhead < 5 },
      },
      { name: `${label}: second turn p50`, unit: 'ms', value: second.p50, baseline: direct.p50 },
      { name: `${label}: second turn p99`, unit: 'ms', value: second.p99, baseline: direct.p99 },
    ];
    if (baseAgent && baseSecond) {
      // The baseline column is the base checkout's figure here.
      // p10 beside p50: on a loaded machine the fastest tenth of the requests is the closest to a quiet one's.
      figures.push(
        { name: `${label}: one-step reply p10 vs base`, unit: 'ms', value: viaAgent.p10, baseline: baseAgent.p10 },
        { name: `${label}: one-step reply p50 vs base`, unit: 'ms', value: viaAgent.p50, baseline: baseAgent.p50 },
        { name: `${label}: one-step reply p99 vs base`, unit: 'ms', value: viaAgent.p99, baseline: baseAgent.p99 },
        { name: `${label}: second turn p10 vs base`, unit: 'ms', value: second.p10, baseline: baseSecond.p10 },
        { name: `${label}: second turn p50 vs base`, unit: 'ms', value: second.p50, baseline: baseSecond.p50 },
        { name: `${label}: second turn p99 vs base`, unit: 'ms', value: second.p99, baseline: baseSecond.p99 },
      );
    }
    return figures;
  } finally {
    for (const s of sides) await s.server.stop();
    await basePg?.drop();
  }
}

export async function agentChatBenchmark(): Promise<BenchResult> {
  const upstream = await startChild('bench/fake-upstream.ts');
  const wanted = (process.env.BENCH_DATABASES ?? 'pglite,pg').split(',');
  const pg = process.env.BENCH_DATABASE_URL;
  const figures: Figure[] = [];
  try {
    if (wanted.includes('pglite')) {
      // startBenchServer adds PostgreSQL itself when BENCH_DATABASE_URL is set: the embedded run must not.
      delete process.env.BENCH_DATABASE_URL;
      try {
        figures.push(...(await measure(upstream.line, 'PGlite', {})));
      } finally {
        if (pg !== undefined) process.env.BENCH_DATABASE_URL = pg;
      }
    }
    if (wanted.includes('pg') && pg) {
      figures.push(
        ...(await measure(upstream.line, 'PostgreSQL', { DATABASE_URL: pg, ENCRYPTION_KEYS: BENCH_ENCRYPTION_KEYS })),
      );
    }
  } finally {
    await stopChild(upstream.child);
  }
  return {
    title: `Agent chat vs a direct gateway call, ${REQUESTS} sequential requests, instant upstream`,
    baseline: 'POST /chat/completions',
    figures,
    notes: pg ? [] : ['(PostgreSQL skipped: set BENCH_DATABASE_URL to measure it too)'],
  };
}
