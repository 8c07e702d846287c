import { loadavg } from 'node:os';
import { Pool } from 'undici';
import { BENCH_ENCRYPTION_KEYS, cpuMs, signupWithPat, sleep, startBenchServer, startChild, stopChild } from './lib.ts';

/**
 * LLM gateway against its upstream called directly, in one run: on each database (the embedded PGlite, and
 * PostgreSQL when BENCH_DATABASE_URL is set), with an upstream that answers at once and one that answers after
 * 200 ms, at 1, 50 and 200 concurrent requests, JSON and streamed (time to first byte): throughput, p50 and
 * p99, and what the gateway adds to them. `relay` (bench/bare-proxy.ts) is a bare `node:http` server relaying to the same upstream with no
 * auth or billing: the floor of any gateway here. Budgets (issue 17, with the 200 ms upstream at 200
 * concurrent): PostgreSQL adds at most 2 ms at p50 and 15 ms at p99 and keeps 97% of direct throughput;
 * PGlite keeps 90% and adds at most 5 ms at p50; with the instant upstream PostgreSQL serves 3,000 a second.
 * Every row carries the machine's load average (1 minute) when it was measured: on a shared machine, read the
 * figures beside it.
 *
 * BENCH_DURATION_MS (default 3000) per measurement; BENCH_LEVELS (default 1,50,200); BENCH_DATABASES
 * (`pglite,pg`); BENCH_ROUNDS (default 1: direct, bare and gateway measured in turn that many times, medians
 * reported); BENCH_UPSTREAMS (`instant,slow`); BENCH_MODES (`json,stream`); BENCH_PROMPT_KB (default 0: the
 * prompt is `Say ok.`; N: a prompt of N KB); BENCH_JITTER_MS (default 0: the slow upstream answers after exactly
 * 200 ms, as issue 17 measures it; N: after 200 ms plus or minus up to N ms, uniformly, as real models vary);
 * BENCH_PROFILE=<dir> writes the gateway's CPU profile there (node --cpu-prof).
 *
 * Why the jitter matters: Node starts every timer set in one turn of the event loop from the same millisecond,
 * so with exactly 200 ms the upstream answers in clumps, the clients' next requests arrive in the same clumps,
 * and clumps that come within a millisecond of each other merge and never part: the last request of a clump
 * waits for all the others' CPU time, which charges any relay well beyond its CPU per request (the tail of the
 * 0-jitter rows). A small spread, as any real upstream has, dissolves them.
 */
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 3000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));
const LEVELS = (process.env.BENCH_LEVELS ?? '1,50,200').split(',').map(Number);
const UPSTREAMS = (process.env.BENCH_UPSTREAMS ?? 'instant,slow').split(',');
const MODES = (process.env.BENCH_MODES ?? 'json,stream').split(',');
/** The user message: `Say ok.`, or with BENCH_PROMPT_KB a prompt of that many KB (a long chat, a pasted file). */
const PROMPT_KB = Number(process.env.BENCH_PROMPT_KB ?? 0);
const JITTER_MS = Number(process.env.BENCH_JITTER_MS ?? 0);
const PROMPT = PROMPT_KB
  ? 'Summarize the notes below in one line.\n'.padEnd(
      PROMPT_KB * 1024,
      'The meeting moved the launch to Thursday; Dana owns the release notes and Lee the rollback plan. ',
    )
  : 'Say ok.';
/**
 * The gateway's settings in these benchmarks: the bench upstream's two models, limits and credits out of the way,
 * and its one log line a request written (BENCH_LOG_LEVEL, default `info`; `warn` leaves it out).
 */
export function gatewayEnv(upstreamUrl: string): Record<string, string> {
  return {
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    LLM_BASE_URL: upstreamUrl,
    LLM_MODELS: 'bench-instant=1000/1000,bench-slow=1000/1000',
    RATE_LIMIT_LLM: '1000000000',
    INITIAL_CREDITS: '1000000000',
  };
}

/** The chat request the benchmarks send: one user message (`Say ok.`, or BENCH_PROMPT_KB of text). */
export function chatBody(model: string, stream: boolean): string {
  return JSON.stringify({ model, messages: [{ role: 'user', content: PROMPT }], stream });
}

const MODELS = [
  { model: 'bench-instant', label: 'instant', key: 'instant' },
  { model: 'bench-slow', label: '200 ms', key: 'slow' },
].filter((m) => UPSTREAMS.includes(m.key));

export interface Result {
  /** Requests answered in the measurement (warm-up aside). */
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU time per request (µs) of the process answering the load (the relay or the gateway; the upstream). */
  cpu: number;
  /** ... of the load generator itself (this process). */
  clientCpu: number;
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/**
 * Closed-loop load: `concurrency` workers each send the next request when the last one completes. Latency is
 * to the whole answer for JSON, to the first byte of the body for streams. The measurement is of the requests
 * sent in its window, which follows the warm-up without a break: the workers run on from one into the other.
 */
export async function load(
  origin: string,
  path: string,
  headers: Record<string, string>,
  body: string,
  concurrency: number,
  stream: boolean,
  /** The process whose CPU per request is reported. */
  pid: number | undefined,
  /** Called after the warm-up, right before the measurement starts (the allocation benchmark samples from there). */
  measuring?: () => Promise<void>,
): Promise<Result> {
  const pool = new Pool(origin, { connections: concurrency, pipelining: 1 });
  const latencies: number[] = [];
  let errors = 0;
  // The window: requests sent from `from` until `to` are measured (`to` is set when the window closes).
  const measured: { from: number; to: number } = { from: Number.POSITIVE_INFINITY, to: Number.POSITIVE_INFINITY };
  const worker = async () => {
    while (performance.now() < measured.to) {
      const t0 = performance.now();
      let first = 0;
      let ok = false;
      try {
        const res = await pool.request({
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json', ...headers },
          body,
        });
        for await (const _ of res.body) if (!first) first = performance.now();
        ok = res.statusCode === 200;
      } catch {}
      if (t0 < measured.from || t0 >= measured.to) continue;
      if (!ok) errors++;
      latencies.push((stream && first ? first : performance.now()) - t0);
    }
  };
  const workers = Array.from({ length: concurrency }, worker);
  // A warm-up opens the connections (and the gateway's to its upstream, and its token cache) before measuring:
  // at 200 concurrent requests on a loaded machine half a second was not enough, and the first seconds of the
  // gateway's measurement opened connections the direct run had open already. The workers are not stopped and
  // started again between the two: started together they send `concurrency` requests in the same instant, a
  // clump steady traffic never has, which the measurement's first round trips paid for; at 200 concurrent on
  // PostgreSQL with the ±20 ms upstream that clump made most of the gateway's p99 over 3 s (docs/gateway-speed.md).
  await sleep(Math.min(2000, Math.max(1000, DURATION_MS / 4)));
  await measuring?.();
  measured.from = performance.now();
  const cpu0 = cpuMs(pid);
  const client0 = process.cpuUsage();
  await sleep(DURATION_MS);
  measured.to = performance.now();
  const elapsed = (measured.to - measured.from) / 1000;
  const cpu = cpuMs(pid) - cpu0;
  const client = process.cpuUsage(client0);
  await Promise.all(workers);
  await pool.close();
  const n = latencies.length || 1;
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    rps: latencies.length / elapsed,
    p50: pct(latencies, 50),
    p99: pct(latencies, 99),
    errors,
    cpu: (cpu * 1000) / n,
    clientCpu: (client.user + client.system) / n,
  };
}

const num = (n: number, d = 1) => n.toFixed(d).padStart(8);

/** Each figure's median over rounds (errors summed). */
function medianResult(results: Result[]): Result {
  const med = (f: (r: Result) => number) => {
    const xs = results.map(f).sort((a, b) => a - b);
    const mid = Math.floor(xs.length / 2);
    return xs.length % 2 ? (xs[mid] ?? 0) : ((xs[mid - 1] ?? 0) + (xs[mid] ?? 0)) / 2;
  };
  return {
    requests: med((r) => r.requests),
    rps: med((r) => r.rps),
    p50: med((r) => r.p50),
    p99: med((r) => r.p99),
    errors: results.reduce((a, r) => a + r.errors, 0),
    cpu: med((r) => r.cpu),
    clientCpu: med((r) => r.clientCpu),
  };
}

/** The gateway's credit writes so far (its /metrics). */
async function creditWrites(base: string): Promise<{ takes: number; batches: number; waits: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const of = (kind: string) => Number(new RegExp(`credit_writes\\{kind="${kind}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  const waits = Number(/credit_lease_waits (\d+)/.exec(text)?.[1] ?? 0);
  return { takes: of('lease_takes'), batches: of('batches'), waits };
}

export async function benchLlmGateway(): Promise<void> {
  const upstream = await startChild('bench/llm-upstream.js', ['0', String(JITTER_MS)]);
  const bare = await startChild('bench/bare-proxy.ts', [upstream.line]);
  const upstreamUrl = new URL(upstream.line);
  const wanted = (process.env.BENCH_DATABASES ?? 'pglite,pg').split(',');
  const databases: Array<{ name: string; env: Record<string, string> }> = [
    ...(wanted.includes('pglite') ? [{ name: 'PGlite', env: {} }] : []),
    ...(wanted.includes('pg') && process.env.BENCH_DATABASE_URL
      ? [
          {
            name: 'PostgreSQL',
            env: { DATABASE_URL: process.env.BENCH_DATABASE_URL, ENCRYPTION_KEYS: BENCH_ENCRYPTION_KEYS },
          },
        ]
      : []),
  ];
  if (!process.env.BENCH_DATABASE_URL) console.log('(PostgreSQL skipped: set BENCH_DATABASE_URL to measure it too)');
  try {
    for (const database of databases) {
      // startBenchServer adds PostgreSQL itself when BENCH_DATABASE_URL is set: the embedded run must not.
      const saved = process.env.BENCH_DATABASE_URL;
      if (database.name === 'PGlite') delete process.env.BENCH_DATABASE_URL;
      const server = await startBenchServer({ ...gatewayEnv(upstream.line), ...database.env }).finally(() => {
        if (saved !== undefined) process.env.BENCH_DATABASE_URL = saved;
      });
      try {
        const pat = await signupWithPat(server.url, ['llm-all']);
        const gwUrl = new URL(server.url);
        console.log(
          `\n## LLM gateway on ${database.name}: ${DURATION_MS / 1000} s a measurement (latencies in ms)${PROMPT_KB ? `, ${PROMPT_KB} KB prompts` : ''}${JITTER_MS ? `, the 200 ms upstream ±${JITTER_MS} ms` : ''}`,
        );
        console.log(
          'upstream mode   conc | direct rps  relay rps ratio    gw rps ratio | direct p50 relay+ gw+  gw-relay | direct p99 relay+ gw+  gw-relay |   writes/100 req   | cpu µs/req up relay gw client | load',
        );
        for (const { model, label } of MODELS) {
          for (const stream of [false, true].filter((s) => MODES.includes(s ? 'stream' : 'json'))) {
            const body = chatBody(model, stream);
            for (const c of LEVELS) {
              // Rounds interleave the three (direct, bare relay, gateway) so that a change in the shared machine's
              // load falls on all of them; each column is the median of its rounds.
              const rounds: Array<{ direct: Result; floor: Result; gw: Result }> = [];
              // The gateway's writes in its measured windows only: its warm-up after sitting idle through the
              // direct and relay runs (a lease given back, then a burst of requests waiting on one take) is not
              // the steady state the row reports.
              const writes = { takes: 0, batches: 0, waits: 0, requests: 0 };
              let before = { takes: 0, batches: 0, waits: 0 };
              for (let r = 0; r < ROUNDS; r++) {
                const direct = await load(
                  upstreamUrl.origin,
                  `${upstreamUrl.pathname}/chat/completions`,
                  {},
                  body,
                  c,
                  stream,
                  upstream.child.pid,
                );
                const floor = await load(bare.line, '/chat/completions', {}, body, c, stream, bare.child.pid);
                const gw = await load(
                  gwUrl.origin,
                  '/api/v1/chat/completions',
                  { authorization: `Bearer ${pat}` },
                  body,
                  c,
                  stream,
                  server.child.pid,
                  async () => {
                    before = await creditWrites(server.url);
                  },
                );
                const after = await creditWrites(server.url);
                for (const k of ['takes', 'batches', 'waits'] as const) writes[k] += after[k] - before[k];
                writes.requests += gw.requests;
                rounds.push({ direct, floor, gw });
              }
              const of = (who: 'direct' | 'floor' | 'gw') => medianResult(rounds.map((r) => r[who]));
              const [direct, floor, gw] = [of('direct'), of('floor'), of('gw')];
              const errors = direct.errors + floor.errors + gw.errors;
              const per100 = (k: 'takes' | 'batches' | 'waits') =>
                ((100 * writes[k]) / Math.max(1, writes.requests)).toFixed(1);
              const perRequest = `${per100('takes')} t ${per100('batches')} b ${per100('waits')} w`;
              console.log(
                `${label.padEnd(8)} ${(stream ? 'ttfb' : 'json').padEnd(4)} ${String(c).padStart(5)} |${num(direct.rps, 0)}   ${num(floor.rps, 0)} ${(floor.rps / direct.rps).toFixed(2)}   ${num(gw.rps, 0)}  ${(gw.rps / direct.rps).toFixed(2)} |${num(direct.p50)}${num(floor.p50 - direct.p50)}${num(gw.p50 - direct.p50)}${num(gw.p50 - floor.p50)} |${num(direct.p99)}${num(floor.p99 - direct.p99)}${num(gw.p99 - direct.p99)}${num(gw.p99 - floor.p99)} | ${perRequest.padStart(18)} | ${[direct.cpu, floor.cpu, gw.cpu, gw.clientCpu].map((x) => x.toFixed(0).padStart(5)).join(' ')} | ${loadavg()[0]?.toFixed(1)}${errors ? ` (${errors} errors)` : ''}`,
              );
            }
          }
        }
      } finally {
        await server.stop();
      }
    }
    console.log(
      '(ttfb rows: latencies are to the first byte of the stream; ratios are throughput over direct; +p50 and +p99 are',
    );
    console.log(
      ' what the bare relay and the gateway add to the direct call; each figure the median of BENCH_ROUNDS; writes:',
    );
    console.log(
      ' lease takes (t), group-commit batches (b) and requests that waited on a take (w) per 100 gateway requests,',
    );
    console.log(' in the measured windows (warm-ups aside);');
    console.log(
      ' cpu: CPU time per request of the upstream (direct run), the bare relay and the gateway (its process only, not',
    );
    console.log(
      ' the database), and of the load generator in the gateway run; load: the 1-minute load average of the machine',
    );
    console.log(' as the row was measured)');
  } finally {
    await stopChild(upstream.child);
    await stopChild(bare.child);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchLlmGateway();
