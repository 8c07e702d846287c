import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { sourceFile } from '../lib/paths.ts';
import { bridgeFetch } from './bridge.ts';
import { SANDBOX_MAX_FETCHES, SANDBOX_OUTPUT_LIMIT, SANDBOX_RESULT_LIMIT, type SandboxResult } from './types.ts';

/**
 * Python runs in Pyodide inside child processes (python-child.mjs), one run per process: a process is never
 * reused, so nothing one tool leaves in the interpreter (patched modules, globals) reaches another's secrets.
 * Each process starts with an empty environment, Node's permission model (it may read only its script and the
 * Pyodide package; no writes, no child processes, no workers) and no code generation from strings. Its
 * resident memory is watched and it is killed past the cap; at the time limit it is killed too. Loading
 * Pyodide takes seconds of CPU, so after the first run one spare process is kept ready (dropped after
 * SPARE_IDLE_MS without Python runs); the first run after start or idleness waits for a process to load.
 */

const require = createRequire(import.meta.url);
/** Resolved on the first Python run, not at import: a service without the package still starts. */
let pyodideEntry: string | undefined;
/** Node 20 names the permission model `--experimental-permission`; later lines `--permission`. */
const PERMISSION_FLAG = process.allowedNodeEnvironmentFlags.has('--permission')
  ? '--permission'
  : '--experimental-permission';
/** Loading Pyodide past this is a failed start (a loaded machine takes around 10 s). */
const START_TIMEOUT_MS = 90_000;
const MEMORY_POLL_MS = 50;
const SPARE_IDLE_MS = 10 * 60 * 1000;
const PAGE_SIZE = 4096;

interface PyChild {
  /** Set once spawned (a run's process waits for the snapshot first). */
  proc?: ChildProcess;
  /** Killed before or after it was spawned. */
  killed?: boolean;
  ready: Promise<void>;
  /** The last words of its stderr, for a process that dies while loading. */
  log: string;
  onMessage?: (msg: ChildMessage) => void;
  onExit?: (code: number | null, signal: string | null) => void;
}

type ChildMessage =
  | { type: 'ready' }
  | { type: 'snapshot'; bytes: Uint8Array }
  | { type: 'fetch'; callId: number; url: unknown; init: unknown }
  | ({ type: 'done'; ran: boolean } & SandboxResult);

const failure = (name: string, message: string, durationMs: number): SandboxResult => ({
  stdout: '',
  stderr: '',
  result: null,
  error: { name, message },
  durationMs: Math.round(durationMs),
});

async function residentBytes(pid: number): Promise<number> {
  try {
    const statm = await readFile(`/proc/${pid}/statm`, 'utf8');
    return Number(statm.split(' ')[1] ?? 0) * PAGE_SIZE;
  } catch {
    return 0;
  }
}

const SNAPSHOT_PREFIX = 'switchboard-pyodide-';

/**
 * A memory snapshot of a freshly loaded interpreter, made once a process: it holds nothing of any run, so the
 * processes of every pool load from it (making one costs about 3 CPU-s; a test process builds many apps, each
 * with a pool of its own).
 */
let processSnapshot: Promise<string> | undefined;

/** Snapshot directories of service processes that died without closing (ours only, their process gone). */
function removeStaleSnapshots(): void {
  try {
    for (const name of readdirSync(tmpdir())) {
      const pid = Number(new RegExp(`^${SNAPSHOT_PREFIX}(\\d+)-`).exec(name)?.[1]);
      if (!pid || pid === process.pid) continue;
      const path = join(tmpdir(), name);
      if (statSync(path).uid !== process.getuid?.()) continue;
      try {
        process.kill(pid, 0);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ESRCH') rmSync(path, { recursive: true, force: true });
      }
    }
  } catch {
    // Tidying is best effort.
  }
}

export class PythonPool {
  private readonly spares: PyChild[] = [];
  private readonly live = new Set<PyChild>();
  private closed = false;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: { memoryBytes: number; allowHosts: readonly string[] }) {}

  /** Runs Python code; `ran` is false when it never started (a syntax error, a process that failed to start). */
  async run(
    code: string,
    args: unknown,
    secrets: Record<string, string>,
    timeoutMs: number,
  ): Promise<{ result: SandboxResult; ran: boolean }> {
    const child = this.spares.shift() ?? this.start();
    // The next run's process starts loading once this one ends: loading beside a run would slow it.
    try {
      await child.ready;
    } catch (err) {
      this.keepSpare();
      this.kill(child);
      return {
        result: failure('SandboxError', `The Python sandbox did not start: ${(err as Error).message}`, 0),
        ran: false,
      };
    }
    if (this.closed) {
      this.kill(child);
      return { result: failure('SandboxError', 'The sandbox is closing', 0), ran: false };
    }
    try {
      return await this.execute(child, code, args, secrets, timeoutMs);
    } finally {
      this.keepSpare();
    }
  }

  /** Resolves once a process is loaded and waiting (starting one if none is): the next run starts at once. */
  async warm(): Promise<void> {
    if (this.closed) return;
    if (this.spares.length === 0) this.keepSpare();
    await this.spares[0]?.ready;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    for (const child of [...this.live]) this.kill(child);
    this.spares.length = 0;
  }

  /** The process's interpreter snapshot (`processSnapshot`), made by this pool if none is (or the last try failed). */
  private makeSnapshot(): Promise<string> {
    if (processSnapshot) return processSnapshot;
    const made = this.writeSnapshot();
    processSnapshot = made;
    // A failed snapshot is tried again by the next run.
    made.catch(() => {
      if (processSnapshot === made) processSnapshot = undefined;
    });
    return made;
  }

  /**
   * Loads Pyodide once in a locked-down process and writes the interpreter's memory to a private temporary
   * file (only this service writes it; sandbox processes may only read it), removed when this process exits.
   */
  private async writeSnapshot(): Promise<string> {
    const maker: PyChild = { log: '', ready: Promise.resolve() };
    this.spawn(maker, 'snapshot');
    try {
      const bytes = await new Promise<Uint8Array>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('Pyodide took too long to load')), START_TIMEOUT_MS);
        maker.onMessage = (msg) => {
          if (msg.type === 'snapshot') {
            clearTimeout(timer);
            resolve(msg.bytes);
          }
        };
        maker.onExit = (code) => {
          clearTimeout(timer);
          reject(new Error(`exit code ${code}: ${maker.log.trim().split('\n').at(-1) ?? ''}`));
        };
      });
      removeStaleSnapshots();
      const dir = mkdtempSync(join(tmpdir(), `${SNAPSHOT_PREFIX}${process.pid}-`));
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
      const path = join(dir, 'interpreter.snapshot');
      writeFileSync(path, bytes, { mode: 0o600 });
      return path;
    } finally {
      this.kill(maker);
    }
  }

  /** One ready process waiting for the next run, kept while Python is in use. */
  private keepSpare(): void {
    if (this.closed) return;
    if (this.spares.length === 0) this.spares.push(this.start());
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      for (const spare of this.spares.splice(0)) this.kill(spare);
    }, SPARE_IDLE_MS);
    this.idleTimer.unref();
  }

  /** A process loading from the snapshot (made first if need be), ready when its `ready` resolves. */
  private start(): PyChild {
    const child: PyChild = { log: '', ready: Promise.resolve() };
    this.live.add(child);
    child.ready = this.makeSnapshot().then((path) => {
      if (this.closed || child.killed) throw new Error('The sandbox is closing');
      this.spawn(child, 'run', path);
      return this.readyOf(child);
    });
    // A spare nobody awaits yet must not turn a failed start into an unhandled rejection.
    child.ready.catch(() => {});
    return child;
  }

  /** Starts `child`'s sandbox process (see python-child.mjs), locked down as the module comment says. */
  private spawn(child: PyChild, mode: 'snapshot' | 'run', snapshotPath?: string): void {
    const script = sourceFile('code-runner', 'python-child.mjs');
    pyodideEntry ??= require.resolve('pyodide/pyodide.mjs');
    const proc = fork(script, [pathToFileURL(pyodideEntry).href, mode, ...(snapshotPath ? [snapshotPath] : [])], {
      env: {},
      execArgv: [
        PERMISSION_FLAG,
        `--allow-fs-read=${script}`,
        `--allow-fs-read=${sourceFile('code-runner', 'output.mjs')}`,
        `--allow-fs-read=${dirname(pyodideEntry)}/`,
        ...(snapshotPath ? [`--allow-fs-read=${snapshotPath}`] : []),
        '--disallow-code-generation-from-strings',
        '--max-old-space-size=256',
        '--no-warnings',
      ],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      // Structured clone: the snapshot's bytes travel as bytes.
      serialization: 'advanced',
    });
    child.proc = proc;
    this.live.add(child);
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (chunk: string) => {
      child.log = (child.log + chunk).slice(-2000);
    });
    proc.on('message', (msg: ChildMessage) => child.onMessage?.(msg));
    proc.on('exit', (code, signal) => {
      this.live.delete(child);
      const at = this.spares.indexOf(child);
      if (at >= 0) this.spares.splice(at, 1);
      child.onExit?.(code, signal);
    });
    proc.on('error', () => {});
    this.idle(child, true);
  }

  private readyOf(child: PyChild): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('Pyodide took too long to load')), START_TIMEOUT_MS);
      child.onMessage = (msg) => {
        if (msg.type === 'ready') {
          clearTimeout(timer);
          resolve();
        }
      };
      child.onExit = (code) => {
        clearTimeout(timer);
        const last = child.log.trim().split('\n').at(-1) ?? '';
        reject(new Error(`exit code ${code}${last ? `: ${last}` : ''}`));
      };
    });
  }

  /** An idle process (a spare) does not keep the service's process alive; a running one does. */
  private idle(child: PyChild, idle: boolean): void {
    const channel = child.proc?.channel as { ref(): void; unref(): void } | undefined;
    if (idle) {
      child.proc?.unref();
      channel?.unref();
    } else {
      child.proc?.ref();
      channel?.ref();
    }
  }

  private execute(
    child: PyChild,
    code: string,
    args: unknown,
    secrets: Record<string, string>,
    timeoutMs: number,
  ): Promise<{ result: SandboxResult; ran: boolean }> {
    const proc = child.proc;
    if (!proc)
      return Promise.resolve({ result: failure('SandboxError', 'The Python sandbox did not start', 0), ran: false });
    const started = performance.now();
    const elapsed = () => performance.now() - started;
    const abort = new AbortController();
    this.idle(child, false);
    return new Promise((resolve) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (r: SandboxResult, ran = true) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearInterval(watch);
        abort.abort();
        this.kill(child);
        resolve({ result: r, ran });
      };
      // setTimeout counts from the event loop's cached clock, so it may fire a little before `timeoutMs` have
      // passed by performance.now() (seen: a run stopped at 999 ms of its 1000): a run is stopped once its whole
      // limit has passed.
      const expire = () => {
        const left = timeoutMs - elapsed();
        if (left > 0) timer = setTimeout(expire, Math.ceil(left));
        else
          finish(
            failure('TimeoutError', `The run took longer than its ${timeoutMs} ms limit and was stopped`, elapsed()),
          );
      };
      timer = setTimeout(expire, timeoutMs);
      const limitMb = Math.round(this.opts.memoryBytes / 1048576);
      const pid = proc.pid;
      const watch = setInterval(() => {
        if (pid === undefined) return;
        void residentBytes(pid).then((bytes) => {
          if (bytes > this.opts.memoryBytes) {
            finish(failure('MemoryLimitError', `The run used more than its ${limitMb} MB of memory`, elapsed()));
          }
        });
      }, MEMORY_POLL_MS);
      child.onExit = (exitCode, signal) =>
        finish(
          failure(
            'SandboxError',
            `The Python process stopped unexpectedly (${signal ?? `exit code ${exitCode}`})`,
            elapsed(),
          ),
        );
      child.onMessage = (msg) => {
        if (msg.type === 'done') {
          finish(
            {
              stdout: msg.stdout,
              stderr: msg.stderr,
              result: msg.result,
              error: msg.error,
              durationMs: Math.round(msg.durationMs),
            },
            msg.ran,
          );
        } else if (msg.type === 'fetch') {
          void bridgeFetch(msg, {
            allowHosts: this.opts.allowHosts,
            signal: abort.signal,
            timeoutMs: timeoutMs - elapsed(),
          }).then((answer) => {
            if (!settled) proc.send({ type: 'fetch-result', callId: msg.callId, ...answer });
          });
        }
      };
      proc.send({
        type: 'run',
        code,
        args: args ?? null,
        secrets,
        outputLimit: SANDBOX_OUTPUT_LIMIT,
        resultLimit: SANDBOX_RESULT_LIMIT,
        maxFetches: SANDBOX_MAX_FETCHES,
      });
    });
  }

  private kill(child: PyChild): void {
    child.killed = true;
    this.live.delete(child);
    const proc = child.proc;
    if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  }
}
