import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openTestDatabase, TEST_ENCRYPTION_KEYS, type TestDatabase } from './harness.ts';

/**
 * The service as its own process, started the way `npm start` starts it (package.json's command), for tests and benchmarks that need
 * the real entry point: signals, listening, start-up time, memory. Logs (pino JSON on stdout) are kept and
 * parsed so callers can wait for a message.
 */
export interface ServerProcess {
  child: ChildProcess;
  url: string;
  port: number;
  /** Milliseconds from spawn to the "Switchboard ready" log line (to /readyz answering when LOG_LEVEL hides it). */
  startToReadyMs: number;
  /** Every JSON log line so far. */
  logs: Array<Record<string, unknown>>;
  /** What the process wrote to stderr so far, and any stdout line that was not JSON. */
  stderr(): string;
  /** Resident memory now (Linux /proc), in MB. */
  rssMb(): number;
  /** Sends the signal and resolves with how the process ended. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The node arguments of `npm start` (`node <flags> bin/start.js`), read from package.json: one source. */
function startArgs(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const [node, ...args] = pkg.scripts.start.split(/\s+/);
  if (node !== 'node') throw new Error(`package.json start script must run node: ${pkg.scripts.start}`);
  return args;
}

/** A port nobody listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function pollReady(url: string, exited: Promise<unknown>): Promise<number> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  while (!gone) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) return performance.now();
    } catch {}
    await new Promise((r) => setTimeout(r, 20));
  }
  return new Promise<number>(() => {}); // the exit rejects the caller's promise
}

/**
 * Starts the service with only the given settings (plus PATH and HOME): a developer's shell variables do not
 * leak in. Resolves once it logs that it is ready; rejects with its output if it exits first.
 */
export async function startServer(
  env: Record<string, string>,
  opts: { timeoutMs?: number; nodeArgs?: string[] } = {},
): Promise<ServerProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const level = env.LOG_LEVEL ?? 'info';
  const started = performance.now();
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...startArgs()], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOST: '127.0.0.1',
      LOG_LEVEL: level,
      BASE_URL: `http://127.0.0.1:${port}`,
      // No balancer polls a test's server: SIGTERM closes at once unless the test asks for a drain.
      SHUTDOWN_DRAIN_MS: '0',
      // The sign-in budget is shared by every instance on one database (issue 39), and test servers all sign in
      // from 127.0.0.1 onto the PostgreSQL run's shared database: a test that counts sign-ins sets its own.
      RATE_LIMIT_AUTH: '100000',
      ...env,
      PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  let pending = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });

  const readyAt = new Promise<number>((resolve, reject) => {
    // Below info the ready line is not logged: ask /readyz instead (every 20 ms).
    if (!['info', 'debug', 'trace'].includes(level)) void pollReady(`http://127.0.0.1:${port}`, exited).then(resolve);
    child.stdout?.on('data', (d: Buffer) => {
      pending += d.toString();
      let nl = pending.indexOf('\n');
      while (nl >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        nl = pending.indexOf('\n');
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          if (entry.msg === 'Switchboard ready') resolve(performance.now());
        } catch {
          stderr += `${line}\n`;
        }
      }
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`server exited (${code ?? signal}) before it was ready:\n${stderr}`)),
    );
    setTimeout(
      () => reject(new Error(`server not ready after ${opts.timeoutMs ?? 60_000} ms:\n${stderr}`)),
      opts.timeoutMs ?? 60_000,
    ).unref();
  });
  let readyTime: number;
  try {
    readyTime = await readyAt;
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    port,
    startToReadyMs: Math.round(readyTime - started),
    logs,
    stderr: () => stderr,
    rssMb() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
      return Math.round(kb / 1024);
    },
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    exited,
  };
}

/** A test's service process over a database of its own, as `startTestServer` gives it. */
export interface TestServer {
  /** The process started last. */
  readonly server: ServerProcess;
  /** Its URL. */
  readonly url: string;
  /** The database; on PGlite `open()` it only once the processes stopped (one process at a time). */
  readonly testDb: TestDatabase;
  /** Starts another process on the same database and settings (a restart, once the test stopped the last). */
  start(): Promise<ServerProcess>;
  /** Kills every process it started, then closes and removes the database. */
  close(): Promise<void>;
}

/**
 * The service as its own process for a test, over a private database (a PostgreSQL clone of the run's template,
 * or a PGlite data directory): a process runs background jobs, and on a shared database it would take other
 * files' jobs to its own fakes. Started with test keys, warnings-only logs and limits far above a test's load,
 * then `env`; resolves once it is ready.
 */
export async function startTestServer(
  opts: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<TestServer> {
  const testDb = await openTestDatabase({ privateDatabase: true });
  const env = {
    ...testDb.env,
    ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_GLOBAL: '100000',
    RATE_LIMIT_LLM: '100000',
    ...opts.env,
  };
  const started: ServerProcess[] = [];
  const latest = () => {
    const server = started.at(-1);
    if (!server) throw new Error('no server process started');
    return server;
  };
  const start = async () => {
    const server = await startServer(env, opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {});
    started.push(server);
    return server;
  };
  const close = async () => {
    for (const server of started) await server.stop('SIGKILL');
    await testDb.close();
  };
  try {
    await testDb.handOver(); // PGlite: the server process owns the data directory
    await start();
  } catch (err) {
    await close();
    throw err;
  }
  return {
    get server() {
      return latest();
    },
    get url() {
      return latest().url;
    },
    testDb,
    start,
    close,
  };
}

/** A TypeScript script of the repository (tsx) as a process of its own, for the crash tests. */
export interface ScriptProcess {
  child: ChildProcess;
  exited: Promise<unknown[]>;
  /** What the process wrote to stdout so far. */
  stdout(): string;
  /** What the process wrote to stderr so far. */
  stderr(): string;
  /**
   * The first whole stdout line holding `marker`, parsed as JSON; rejects if the process ends or `timeoutMs` passes
   * first.
   */
  line<T>(marker: string, timeoutMs?: number): Promise<T>;
  /** Sends SIGKILL and resolves once the process is gone, with the signal that ended it. */
  kill(): Promise<NodeJS.Signals | null>;
}

/**
 * Starts `script` (a path from the repository's root) with only `env` and PATH and HOME as its settings: a crash
 * test's worker or writer, killed mid-work with `kill()`.
 */
export function startScript(script: string, env: Record<string, string>): ScriptProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit');
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return {
    child,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    line<T>(marker: string, timeoutMs = 60_000) {
      return new Promise<T>((resolve, reject) => {
        // Whole lines only (a chunk may end mid-line), and no more looking once one is found.
        const look = () => {
          const found = stdout
            .split('\n')
            .slice(0, -1)
            .find((l) => l.includes(marker));
          if (found === undefined) return false;
          child.stdout?.off('data', look);
          try {
            resolve(JSON.parse(found) as T);
          } catch (err) {
            reject(err);
          }
          return true;
        };
        if (look()) return;
        child.stdout?.on('data', look);
        void exited.then(() => reject(new Error(`${script} exited:\n${stderr}`)));
        setTimeout(
          () => reject(new Error(`no ${marker} from ${script} in ${timeoutMs} ms:\n${stdout}\n${stderr}`)),
          timeoutMs,
        ).unref();
      });
    },
    async kill() {
      child.kill('SIGKILL');
      const [, signal] = await exited;
      return signal as NodeJS.Signals | null;
    },
  };
}
