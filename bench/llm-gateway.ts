import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';

/**
 * LLM gateway against its upstream called directly, in one run: p50/p99 latency and throughput at 1, 50 and
 * 200 concurrent requests, and time to first byte for streams. Budget (ARCHITECTURE.md): under 1 ms added at
 * p50 and 5 ms at p99, throughput at least 80% of direct. Gateway and fake upstream run as separate
 * processes; the load comes from this one.
 */
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 4000);
const LEVELS = [1, 50, 200];

function startChild(args: string[], env: Record<string, string>): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve({ child, line: buf.slice(0, nl).trim() });
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}`)));
  });
}

async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('gateway did not become ready');
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  ttfbP50?: number;
  errors: number;
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/** Closed-loop load: `concurrency` workers each send the next request when the last one completes. */
async function load(
  origin: string,
  path: string,
  headers: Record<string, string>,
  body: string,
  concurrency: number,
  stream: boolean,
): Promise<Result> {
  const pool = new Pool(origin, { connections: concurrency, pipelining: 1 });
  const latencies: number[] = [];
  const ttfbs: number[] = [];
  let errors = 0;
  const deadline = performance.now() + DURATION_MS;
  const worker = async () => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      try {
        const res = await pool.request({
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json', ...headers },
          body,
        });
        if (stream) {
          let first = true;
          for await (const _ of res.body) {
            if (first) {
              ttfbs.push(performance.now() - t0);
              first = false;
            }
          }
        } else {
          await res.body.dump();
        }
        if (res.statusCode !== 200) errors++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - t0);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  ttfbs.sort((a, b) => a - b);
  return {
    rps: latencies.length / elapsed,
    p50: pct(latencies, 50),
    p99: pct(latencies, 99),
    ...(stream ? { ttfbP50: pct(ttfbs, 50) } : {}),
    errors,
  };
}

const fmt = (n: number, d = 2) => n.toFixed(d).padStart(9);

export async function benchLlmGateway(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-bench-'));
  const upstream = await startChild(['bench/fake-upstream.ts'], {});
  const bare = await startChild(['bench/bare-proxy.ts', upstream.line], {});
  const port = String(20000 + Math.floor(Math.random() * 20000));
  const gatewayEnv = {
    PORT: port,
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    LLM_BASE_URL: upstream.line,
    LLM_MODELS: 'bench-model=1000/1000',
    RATE_LIMIT_GLOBAL: '100000000',
    RATE_LIMIT_LLM: '100000000',
    RATE_LIMIT_AUTH: '100000000',
    INITIAL_CREDITS: '1000000000',
    ...(process.env.BENCH_DATABASE_URL
      ? {
          DATABASE_URL: process.env.BENCH_DATABASE_URL,
          ENCRYPTION_KEYS: 'bench:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
        }
      : {}),
  };
  const gateway = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : []),
      '--import',
      'tsx',
      'src/main.ts',
    ],
    {
      env: { ...process.env, ...gatewayEnv },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitReady(base);
    const signup = await fetch(`${base}/api/v1/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `bench-${Date.now()}@example.test`, password: 'bench-password', name: 'Bench' }),
    });
    const session = (await signup.json()) as { session_token: string };
    const patRes = await fetch(`${base}/api/v1/auth/pat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${session.session_token}` },
      body: JSON.stringify({ name: 'bench', scopes: ['llm-all'] }),
    });
    const pat = ((await patRes.json()) as { personal_access_token: string }).personal_access_token;
    const upstreamUrl = new URL(upstream.line);
    const messages = [{ role: 'user', content: 'Say ok.' }];

    console.log(
      `LLM gateway (${process.env.BENCH_DATABASE_URL ? 'PostgreSQL' : 'PGlite'}), ${DURATION_MS / 1000}s per level`,
    );
    console.log(
      'mode     conc |  direct rps   bare-proxy  gateway rps  ratio | direct p50  bare p50   gw p50   +p50 | direct p99  gw p99   +p99 | budget',
    );
    for (const stream of [false, true]) {
      const body = JSON.stringify({ model: 'bench-model', messages, stream });
      for (const c of LEVELS) {
        const direct = await load(upstreamUrl.origin, `${upstreamUrl.pathname}/chat/completions`, {}, body, c, stream);
        const floor = await load(bare.line, '/chat/completions', {}, body, c, stream);
        const gw = await load(base, '/api/v1/chat/completions', { authorization: `Bearer ${pat}` }, body, c, stream);
        const addP50 = stream ? (gw.ttfbP50 ?? 0) - (direct.ttfbP50 ?? 0) : gw.p50 - direct.p50;
        const addP99 = gw.p99 - direct.p99;
        const ratio = gw.rps / direct.rps;
        const ok = addP50 < 1 && addP99 < 5 && ratio >= 0.8;
        console.log(
          `${(stream ? 'stream' : 'json').padEnd(6)} ${String(c).padStart(5)} |${fmt(direct.rps, 0)}   ${fmt(floor.rps, 0)}  ${fmt(gw.rps, 0)}   ${ratio.toFixed(2)} |${fmt(stream ? (direct.ttfbP50 ?? 0) : direct.p50)} ${fmt(stream ? (floor.ttfbP50 ?? 0) : floor.p50)}${fmt(stream ? (gw.ttfbP50 ?? 0) : gw.p50)}${fmt(addP50)} |${fmt(direct.p99)}${fmt(gw.p99)}${fmt(addP99)} | ${ok ? 'ok' : 'OVER'}${gw.errors + direct.errors ? ` (${gw.errors + direct.errors} errors)` : ''}`,
        );
      }
    }
    console.log(
      '(stream rows: p50 columns are time to first byte; latencies in ms; ratio and budget compare the gateway with direct;',
    );
    console.log(
      ' bare-proxy is a fastify route relaying to the same upstream with no auth or billing: the floor of any gateway here)',
    );
  } finally {
    gateway.kill('SIGTERM');
    upstream.child.kill('SIGTERM');
    bare.child.kill('SIGTERM');
    await once(gateway, 'exit').catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchLlmGateway();
