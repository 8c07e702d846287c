import { loadavg } from 'node:os';
import { Pool } from 'undici';
import {
  BENCH_ENCRYPTION_KEYS,
  type BenchResult,
  type Figure,
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
 * one-step reply under 5 ms at p50. Each database's figures carry the machine's 1-minute load average.
 */
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 300);

interface Variant {
  path: string;
  body: (i: number) => string;
}

/**
 * Sends the variants' requests one at a time, taking turns (direct, agent, ...), so each variant's figures are
 * measured under the same load of the shared machine; the first 20 rounds warm up.
 */
async function timeInTurns(origin: string, headers: Record<string, string>, variants: Variant[]) {
  const pool = new Pool(origin, { connections: 1 });
  const times: number[][] = variants.map(() => []);
  try {
    for (let i = 0; i < REQUESTS + 20; i++) {
      for (const [v, variant] of variants.entries()) {
        const t = performance.now();
        const res = await pool.request({
          method: 'POST',
          path: variant.path,
          headers: { 'content-type': 'application/json', ...headers },
          body: variant.body(i),
        });
        await res.body.text();
        if (res.statusCode !== 200) throw new Error(`${variant.path} answered ${res.statusCode}`);
        if (i >= 20) times[v]?.push(performance.now() - t);
      }
    }
  } finally {
    await pool.close();
  }
  return times.map((list) => {
    list.sort((a, b) => a - b);
    const at = (p: number) => list[Math.min(list.length - 1, Math.floor(list.length * p))] ?? Number.NaN;
    return { p50: at(0.5), p99: at(0.99) };
  });
}

async function measure(upstream: string, label: string, env: Record<string, string>): Promise<Figure[]> {
  const server = await startBenchServer({
    LLM_BASE_URL: upstream,
    LLM_MODELS: 'fake-model=1000000/2000000',
    RATE_LIMIT_LLM: '1000000000',
    ...env,
  });
  try {
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
    const messages = [{ role: 'user', content: 'Say ok.' }];
    const load = () => loadavg()[0]?.toFixed(1) ?? '?';
    // Conversations for the second turns, each started by one one-step reply.
    const started: string[] = [];
    const pool = new Pool(server.url, { connections: 1 });
    for (let i = 0; i < REQUESTS + 20; i++) {
      const res = await pool.request({
        method: 'POST',
        path: chatPath,
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify({ messages }),
      });
      await res.body.text();
      started.push(String(res.headers['x-conversation-id']));
    }
    await pool.close();
    const loadBefore = load();
    const [direct, viaAgent, second] = await timeInTurns(server.url, auth, [
      { path: '/api/v1/chat/completions', body: () => JSON.stringify({ model: 'fake-model', messages }) },
      { path: chatPath, body: () => JSON.stringify({ messages }) },
      { path: chatPath, body: (i) => JSON.stringify({ messages, conversationId: started[i] }) },
    ]);
    if (!direct || !viaAgent || !second) throw new Error('missing figures');
    const overhead = viaAgent.p50 - direct.p50;
    console.log(`(${label}: 1-minute load average ${loadBefore} before, ${load()} after)`);
    return [
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
  } finally {
    await server.stop();
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
