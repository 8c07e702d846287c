import { Pool } from 'undici';
import { type BenchResult, type Figure, signupWithSession, startBenchServer, startChild, stopChild } from './lib.ts';

/**
 * Agent chat against a direct gateway call with the same instant fake upstream, one request at a time (what a
 * person chatting waits for): a one-step reply through `POST /agents/:id/chat/completions` (conversation made,
 * messages and events stored, limits checked, the model called once, billed) beside `POST /chat/completions`.
 * Budget (issue 11): the agent's overhead under 5 ms at p50.
 */
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 300);

async function timeSequential(origin: string, path: string, headers: Record<string, string>, body: string) {
  const pool = new Pool(origin, { connections: 1 });
  const times: number[] = [];
  try {
    for (let i = 0; i < REQUESTS + 20; i++) {
      const t = performance.now();
      const res = await pool.request({
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${path} answered ${res.statusCode}`);
      if (i >= 20) times.push(performance.now() - t);
    }
  } finally {
    await pool.close();
  }
  times.sort((a, b) => a - b);
  const at = (p: number) => times[Math.min(times.length - 1, Math.floor(times.length * p))] ?? Number.NaN;
  return { p50: at(0.5), p99: at(0.99) };
}

export async function agentChatBenchmark(): Promise<BenchResult> {
  const upstream = await startChild('bench/fake-upstream.ts');
  const server = await startBenchServer({
    LLM_BASE_URL: upstream.line,
    LLM_MODELS: 'fake-model=1000000/2000000',
    RATE_LIMIT_LLM: '1000000000',
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
    const messages = [{ role: 'user', content: 'Say ok.' }];
    const direct = await timeSequential(
      server.url,
      '/api/v1/chat/completions',
      auth,
      JSON.stringify({ model: 'fake-model', messages }),
    );
    const viaAgent = await timeSequential(
      server.url,
      `/api/v1/agents/${agent.id}/chat/completions`,
      auth,
      JSON.stringify({ messages }),
    );
    const overhead = viaAgent.p50 - direct.p50;
    const figures: Figure[] = [
      { name: 'one-step reply p50', unit: 'ms', value: viaAgent.p50, baseline: direct.p50 },
      { name: 'one-step reply p99', unit: 'ms', value: viaAgent.p99, baseline: direct.p99 },
      { name: 'agent overhead p50', unit: 'ms', value: overhead, budget: { text: '< 5 ms', ok: overhead < 5 } },
    ];
    return {
      title: `Agent chat vs a direct gateway call, ${REQUESTS} sequential requests, instant upstream (${process.env.BENCH_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`,
      baseline: 'POST /chat/completions',
      figures,
    };
  } finally {
    await server.stop();
    await stopChild(upstream.child);
  }
}
