import { type ChildProcess, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  type BenchResult,
  cpuMs,
  type Figure,
  median,
  profileArgs,
  signupWithPat,
  sleep,
  startBenchServer,
  startChild,
  stopChild,
} from './lib.ts';
import { chatBody, gatewayEnv, load, type Result } from './llm-gateway.ts';

/**
 * Where the LLM gateway's tail comes from, beside the bare relay (bench/bare-proxy.ts) under the same load: the
 * 200 ms upstream (200 ± BENCH_JITTER_MS, default 20), BENCH_CONCURRENCY (default 200) concurrent requests,
 * BENCH_MODE `json` (default) or `stream`, BENCH_ROUNDS (default 3) rounds of direct, relay and gateway in turn,
 * medians reported; the database BENCH_DATABASE_URL selects (PGlite without). Both processes run
 * bench/probe.mjs, which reports what a request waits for inside them: undici's wait before sending an upstream
 * request (its idle kept-alive connection is checked in the event loop's check phase, after the turn's other
 * work), how late the event loop runs, garbage collection pauses, and what young-generation collections copy
 * (survivors) and promote to the old generation, per request. With PostgreSQL, the CPU its processes
 * spend per gateway request is reported too: it runs on the same cores. BENCH_PROFILE=<dir> writes the gateway's
 * CPU profile there and the relay's into its folder `relay`, to set side by side with bench/cpu-profile.mjs.
 */
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 200);
const JITTER_MS = process.env.BENCH_JITTER_MS ?? '20';
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const STREAM = process.env.BENCH_MODE === 'stream';
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 3000);
const PROBE = resolve('bench/probe.mjs');

interface Probe {
  sendWait: { p50: number; p99: number; n: number };
  sendQueue: { p50: number; p99: number };
  loopDelay: { p99: number; max: number };
  gc: { count: number; total: number; longest: number };
  young: { scavenges: number; survived: number; promoted: number };
}

/** CPU time of every PostgreSQL process on this machine so far (ms); 0 without PostgreSQL. */
function postgresCpuMs(): number {
  if (!process.env.BENCH_DATABASE_URL) return 0;
  let pids: string[];
  try {
    pids = execFileSync('pgrep', ['-f', 'postgres'], { encoding: 'utf8' }).trim().split('\n');
  } catch {
    return 0;
  }
  return pids.reduce((sum, pid) => {
    try {
      return sum + cpuMs(Number(pid));
    } catch {
      return sum; // gone meanwhile
    }
  }, 0);
}

/** Asks a probed process for its figures since the last ask (SIGUSR2) and reads the line it appends. */
async function askProbe(child: ChildProcess, file: string): Promise<Probe> {
  const lines = () => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
  const before = lines().length;
  child.kill('SIGUSR2');
  for (let i = 0; i < 200 && lines().length === before; i++) await sleep(10);
  const last = lines().at(-1);
  if (lines().length === before || !last) throw new Error(`the probe in process ${child.pid} did not answer`);
  return JSON.parse(last) as Probe;
}

interface Side {
  result: Result;
  probe: Probe;
  dbCpu: number;
}

/** One probed load: the probe and the database's CPU counted from the end of the warm-up. */
async function probedLoad(
  origin: string,
  path: string,
  headers: Record<string, string>,
  child: ChildProcess,
  file: string,
): Promise<Side> {
  let db0 = 0;
  const result = await load(
    origin,
    path,
    headers,
    chatBody('bench-slow', STREAM),
    CONCURRENCY,
    STREAM,
    child.pid,
    async () => {
      await askProbe(child, file); // starts the count
      db0 = postgresCpuMs();
    },
  );
  const dbCpu = ((postgresCpuMs() - db0) * 1000) / Math.max(1, result.requests);
  return { result, probe: await askProbe(child, file), dbCpu };
}

export async function gatewayTailBenchmark(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-probe-'));
  const files = { bare: join(dir, 'bare.jsonl'), gateway: join(dir, 'gateway.jsonl') };
  const upstream = await startChild('bench/llm-upstream.js', ['0', JITTER_MS]);
  const bare = await startChild('bench/bare-proxy.ts', [upstream.line], ['--import', PROBE, ...profileArgs('relay')], {
    BENCH_PROBE_FILE: files.bare,
  });
  const server = await startBenchServer({ ...gatewayEnv(upstream.line), BENCH_PROBE_FILE: files.gateway }, [
    '--import',
    PROBE,
  ]);
  const upstreamUrl = new URL(upstream.line);
  const loads: number[] = [];
  try {
    const pat = await signupWithPat(server.url, ['llm-all']);
    const rounds: Array<{ direct: Result; bare: Side; gateway: Side }> = [];
    for (let round = 0; round < ROUNDS; round++) {
      const direct = await load(
        upstreamUrl.origin,
        `${upstreamUrl.pathname}/chat/completions`,
        {},
        chatBody('bench-slow', STREAM),
        CONCURRENCY,
        STREAM,
        upstream.child.pid,
      );
      const relay = await probedLoad(bare.line, '/chat/completions', {}, bare.child, files.bare);
      const gateway = await probedLoad(
        new URL(server.url).origin,
        '/api/v1/chat/completions',
        { authorization: `Bearer ${pat}` },
        server.child,
        files.gateway,
      );
      rounds.push({ direct, bare: relay, gateway });
      loads.push(loadavg()[0] ?? 0);
    }
    const of = (side: 'bare' | 'gateway', f: (s: Side, direct: Result) => number) =>
      median(rounds.map((r) => f(r[side], r.direct)));
    const figure = (name: string, unit: Figure['unit'], f: (s: Side, direct: Result) => number): Figure => ({
      name,
      unit,
      value: of('gateway', f),
      baseline: of('bare', f),
    });
    const seconds = DURATION_MS / 1000;
    return {
      title: [
        `LLM gateway's tail: 200 ± ${JITTER_MS} ms upstream`,
        `${CONCURRENCY} concurrent`,
        STREAM ? 'streams (first byte)' : 'JSON',
        process.env.BENCH_DATABASE_URL ? 'PostgreSQL' : 'PGlite',
        `${ROUNDS} rounds of ${seconds} s`,
      ].join(', '),
      baseline: 'bare relay',
      figures: [
        figure('added to direct p50', 'ms', (s, d) => s.result.p50 - d.p50),
        figure('added to direct p99', 'ms', (s, d) => s.result.p99 - d.p99),
        figure('upstream send wait p50', 'ms', (s) => s.probe.sendWait.p50),
        figure('upstream send wait p99', 'ms', (s) => s.probe.sendWait.p99),
        figure('event-loop delay p99', 'ms', (s) => s.probe.loopDelay.p99),
        figure('event-loop delay max', 'ms', (s) => s.probe.loopDelay.max),
        figure('GC pauses per second', 'ms', (s) => s.probe.gc.total / seconds),
        figure('longest GC pause', 'ms', (s) => s.probe.gc.longest),
        figure('scavenge survivors per request', 'KB', (s) => s.probe.young.survived / 1024 / s.result.requests),
        figure('promoted per request', 'KB', (s) => s.probe.young.promoted / 1024 / s.result.requests),
        figure('CPU per request', 'µs', (s) => s.result.cpu),
      ],
      notes: [
        `direct: p50 ${median(rounds.map((r) => r.direct.p50)).toFixed(1)} ms, p99 ${median(rounds.map((r) => r.direct.p99)).toFixed(1)} ms`,
        `the gateway's upstream requests created while one waited to be written: p50 ${of('gateway', (s) => s.probe.sendQueue.p50)}, p99 ${of('gateway', (s) => s.probe.sendQueue.p99)} (the relay's node:http agent writes each on the next tick)`,
        `throughput: direct ${median(rounds.map((r) => r.direct.rps)).toFixed(0)}, relay ${of('bare', (s) => s.result.rps).toFixed(0)}, gateway ${of('gateway', (s) => s.result.rps).toFixed(0)} rps`,
        ...(process.env.BENCH_DATABASE_URL
          ? [`PostgreSQL's CPU per gateway request: ${of('gateway', (s) => s.dbCpu).toFixed(0)} µs`]
          : []),
        `load average after each round: ${loads.map((l) => l.toFixed(1)).join(', ')}`,
      ],
    };
  } finally {
    await server.stop();
    await stopChild(bare.child);
    await stopChild(upstream.child);
    rmSync(dir, { recursive: true, force: true });
  }
}
