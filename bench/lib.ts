import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { adminQuery, databaseUrl } from '../test/global-setup.ts';
import { type ServerProcess, startServer } from '../test/server-process.ts';

/**
 * What every benchmark shares: the figure table, a load generator, child processes. A benchmark measures
 * Switchboard and, in the same run on the same machine, a baseline (a bare fastify route, a direct call), and
 * judges the ratio or the figure against its budget from ARCHITECTURE.md. Absolute numbers vary with the
 * machine and its load; the ratio is what a budget can hold.
 */

/**
 * The key benchmarks run PostgreSQL with (BENCH_DATABASE_URL; each server on a fresh database of its own):
 * fixed, so that anything sealed with it opens in any run. For benchmarks only.
 */
export const BENCH_ENCRYPTION_KEYS = `bench:${Buffer.alloc(32).toString('base64')}`;

/**
 * A database of its own on the server of `url` (BENCH_DATABASE_URL's), for one server of a benchmark, dropped by
 * `drop()`. A database reused from run to run grows, and where PostgreSQL runs without autovacuum (this machine's)
 * its dead rows made the same agent chat 3 ms slower from one run to the next (docs/benchmarks.md).
 */
export async function freshBenchDatabase(url: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `sb_bench_${Date.now()}_${randomBytes(3).toString('hex')}`;
  await adminQuery(url, `CREATE DATABASE ${name}`);
  return { url: databaseUrl(url, name), drop: () => adminQuery(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/**
 * The service as `npm start` runs it, for a load benchmark: a fresh embedded database (with BENCH_DATABASE_URL, a
 * fresh PostgreSQL database on its server: freshBenchDatabase), rate limits out of the way, a CPU profile (sampled
 * every 100 µs, not the default 1 ms) into BENCH_PROFILE when set. `stop()` also removes the data directory and
 * drops the database.
 */
export async function startBenchServer(
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<ServerProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-bench-'));
  const pg = process.env.BENCH_DATABASE_URL ? await freshBenchDatabase(process.env.BENCH_DATABASE_URL) : undefined;
  let server: ServerProcess;
  try {
    server = await startServer(
      {
        DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
        RATE_LIMIT_GLOBAL: '1000000000',
        RATE_LIMIT_AUTH: '1000000000',
        ...env,
        ...(pg ? { DATABASE_URL: pg.url, ENCRYPTION_KEYS: BENCH_ENCRYPTION_KEYS } : {}),
      },
      {
        nodeArgs: [...nodeArgs, ...profileArgs()],
        timeoutMs: 300_000,
      },
    );
  } catch (err) {
    await pg?.drop();
    throw err;
  }
  // Past start-up its log lines are read and dropped, not parsed: at LOG_LEVEL=info a line a request would cost
  // the load generator (this process) CPU that only the service's run pays.
  server.child.stdout?.removeAllListeners('data');
  server.child.stdout?.resume();
  const stop = server.stop;
  return {
    ...server,
    async stop(signal) {
      try {
        return await stop(signal);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
        await pg?.drop();
      }
    },
  };
}

/**
 * Node's arguments that write a process's CPU profile (sampled every 100 µs, not the default 1 ms) into
 * BENCH_PROFILE, or into its folder `sub` (made here); none without BENCH_PROFILE. `node bench/cpu-profile.mjs`
 * summarizes one.
 */
export function profileArgs(sub = ''): string[] {
  const root = process.env.BENCH_PROFILE;
  if (!root) return [];
  const dir = join(root, sub);
  mkdirSync(dir, { recursive: true });
  return ['--cpu-prof', '--cpu-prof-interval=100', `--cpu-prof-dir=${dir}`];
}

export interface Figure {
  name: string;
  unit: 'req/s' | 'ms' | 'µs' | 'MB' | 'KB';
  value: number;
  baseline?: number;
  /** The budget as text (`< 2000 ms`, `ratio >= 0.8`) and whether this run met it. */
  budget?: { text: string; ok: boolean };
}

export interface BenchResult {
  title: string;
  /** What the baseline column is. */
  baseline: string;
  figures: Figure[];
  notes?: string[];
}

export interface Benchmark {
  name: string;
  summary: string;
  run(): Promise<BenchResult>;
}

const formatValue = (n: number, unit: Figure['unit']) =>
  `${unit === 'ms' && n < 10 ? n.toFixed(2) : (unit === 'ms' || unit === 'KB') && n < 100 ? n.toFixed(1) : Math.round(n).toLocaleString('en-US')} ${unit}`;

/** One table, the same layout for every benchmark: figure | Switchboard | baseline | ratio | budget. */
export function formatResult(r: BenchResult): string {
  const rows = [
    ['figure', 'switchboard', r.baseline, 'ratio', 'budget'],
    ...r.figures.map((f) => [
      f.name,
      formatValue(f.value, f.unit),
      f.baseline === undefined ? '-' : formatValue(f.baseline, f.unit),
      f.baseline ? (f.value / f.baseline).toFixed(2) : '-',
      f.budget ? `${f.budget.text}: ${f.budget.ok ? 'ok' : 'OVER'}` : '-',
    ]),
  ];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => row[i]?.length ?? 0))) ?? [];
  const line = (row: string[]) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join(' | ');
  return [
    `## ${r.title}`,
    line(rows[0] ?? []),
    widths.map((w) => '-'.repeat(w)).join('-|-'),
    ...rows.slice(1).map(line),
    ...(r.notes ?? []).map((n) => `  ${n}`),
  ].join('\n');
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  /** Answers other than 2xx, plus connection errors and timeouts. */
  failures: number;
}

/** Closed-loop HTTP load with autocannon: `connections` clients each send the next request on an answer. */
export async function load(
  url: string,
  opts: {
    seconds: number;
    connections: number;
    headers?: Record<string, string>;
    method?: 'GET' | 'POST';
    body?: string;
  },
): Promise<LoadResult> {
  const result = await autocannon({
    url,
    connections: opts.connections,
    pipelining: 1,
    duration: opts.seconds,
    headers: opts.headers ?? {},
    method: opts.method ?? 'GET',
    ...(opts.body === undefined ? {} : { body: opts.body }),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: result.non2xx + result.errors + result.timeouts,
  };
}

/**
 * A file of bench/ as its own process (TypeScript through tsx), with this process's environment and `env`;
 * resolves with the first line it prints (its URL).
 */
export async function startChild(
  file: string,
  args: string[] = [],
  nodeArgs: string[] = [],
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(
    process.execPath,
    [...nodeArgs, ...(file.endsWith('.ts') ? ['--import', 'tsx'] : []), file, ...args],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...env },
    },
  );
  let buf = '';
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve({ child, line: buf.slice(0, nl).trim() });
    });
    child.once('exit', (code) => reject(new Error(`${file} exited (${code}) before printing its URL`)));
  });
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** Resident memory of a process (Linux /proc), in MB. */
export function rssMb(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024);
}

/** CPU time (user + system) a process has used so far, in ms (Linux /proc; 10 ms resolution). */
export function cpuMs(pid: number | undefined): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** Signs up on a running server and makes a PAT with the given scopes. */
export async function signupWithPat(baseUrl: string, scopes: string[]): Promise<string> {
  return (await signupWithSession(baseUrl, scopes)).pat;
}

/** Signs up on a running server; answers the session token and a PAT with the given scopes. */
export async function signupWithSession(baseUrl: string, scopes: string[]): Promise<{ session: string; pat: string }> {
  const signup = await fetch(`${baseUrl}/api/v1/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `bench-${Date.now()}@example.test`, password: 'bench-password', name: 'Bench' }),
  });
  if (signup.status !== 201) throw new Error(`signup answered ${signup.status}: ${await signup.text()}`);
  const { session_token: session } = (await signup.json()) as { session_token: string };
  const pat = await fetch(`${baseUrl}/api/v1/auth/pat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${session}` },
    body: JSON.stringify({ name: 'bench', scopes }),
  });
  if (pat.status !== 201) throw new Error(`POST /auth/pat answered ${pat.status}: ${await pat.text()}`);
  return { session, pat: ((await pat.json()) as { personal_access_token: string }).personal_access_token };
}
