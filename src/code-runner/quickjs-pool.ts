import { Worker } from 'node:worker_threads';
import { sourceFile } from '../lib/paths.ts';
import { bridgeFetch } from './bridge.ts';
import { SANDBOX_MAX_FETCHES, SANDBOX_OUTPUT_LIMIT, SANDBOX_RESULT_LIMIT, type SandboxResult } from './types.ts';

interface Slot {
  worker: Worker;
  run: ActiveRun | undefined;
}

interface ActiveRun {
  id: number;
  started: number;
  timeoutMs: number;
  finish: (r: SandboxResult) => void;
  abort: AbortController;
  kill: NodeJS.Timeout;
}

/** What a worker posts back (untrusted only in shape; it is our own code). */
type WorkerMessage =
  | { type: 'fetch'; runId: number; callId: number; url: unknown; init: unknown }
  | ({ type: 'done'; id: number } & SandboxResult);

/** How long past its limit a run may go before its worker is terminated (the in-QuickJS interrupt failed). */
const KILL_GRACE_MS = 2000;

/**
 * QuickJS worker threads, started on first use, one run at a time each (the caller's Slots bound how many run
 * at once). A worker that overruns its run's limit is terminated and replaced; one that dies fails its run.
 */
export class QuickJsPool {
  private readonly idle: Slot[] = [];
  private readonly all = new Set<Slot>();
  private nextId = 0;
  private closed = false;

  constructor(private readonly opts: { memoryBytes: number; allowHosts: readonly string[] }) {}

  /** Runs compiled source (an expression evaluating to `async function (args, secrets)`). */
  async run(source: string, args: unknown, secrets: Record<string, string>, timeoutMs: number): Promise<SandboxResult> {
    if (this.closed) throw new Error('The sandbox is closed');
    const slot = this.idle.pop() ?? this.spawn();
    const id = ++this.nextId;
    slot.worker.ref();
    return new Promise<SandboxResult>((resolve) => {
      const started = performance.now();
      const run: ActiveRun = {
        id,
        started,
        timeoutMs,
        abort: new AbortController(),
        finish: (r) => {
          clearTimeout(run.kill);
          run.abort.abort();
          slot.run = undefined;
          resolve(r);
        },
        kill: setTimeout(() => {
          void this.discard(slot, {
            name: 'TimeoutError',
            message: `The run took longer than its ${timeoutMs} ms limit and was stopped`,
          });
        }, timeoutMs + KILL_GRACE_MS),
      };
      slot.run = run;
      slot.worker.postMessage({
        type: 'run',
        id,
        source,
        args: args ?? null,
        secrets,
        timeoutMs,
        memoryBytes: this.opts.memoryBytes,
        outputLimit: SANDBOX_OUTPUT_LIMIT,
        resultLimit: SANDBOX_RESULT_LIMIT,
        maxFetches: SANDBOX_MAX_FETCHES,
      });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      [...this.all].map((slot) => this.discard(slot, { name: 'SandboxError', message: 'The sandbox is closing' })),
    );
  }

  private spawn(): Slot {
    const worker = new Worker(sourceFile('code-runner', 'quickjs-worker.js'), {
      // The worker sees no environment variables; its own heap is bounded too (QuickJS's memory is separate).
      env: {},
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 32 },
      stdout: true,
      stderr: true,
    });
    // Emscripten's own complaints (an aborted instance) are the run's error already, not log lines.
    worker.stdout.resume();
    worker.stderr.resume();
    const slot: Slot = { worker, run: undefined };
    this.all.add(slot);
    worker.on('message', (msg: WorkerMessage) => this.onMessage(slot, msg));
    worker.on('error', (err) =>
      this.discard(slot, { name: 'SandboxError', message: `The sandbox stopped: ${err.message}` }),
    );
    worker.on('exit', () => this.discard(slot, { name: 'SandboxError', message: 'The sandbox stopped unexpectedly' }));
    return slot;
  }

  private onMessage(slot: Slot, msg: WorkerMessage): void {
    const run = slot.run;
    if (!run) return;
    if (msg.type === 'done' && msg.id === run.id) {
      run.finish({
        stdout: msg.stdout,
        stderr: msg.stderr,
        result: msg.result,
        error: msg.error,
        durationMs: Math.round(msg.durationMs),
      });
      slot.worker.unref();
      if (!this.closed) this.idle.push(slot);
    } else if (msg.type === 'fetch' && msg.runId === run.id) {
      const remaining = run.timeoutMs - (performance.now() - run.started);
      void bridgeFetch(msg, {
        allowHosts: this.opts.allowHosts,
        signal: run.abort.signal,
        timeoutMs: remaining,
      }).then((answer) => {
        if (slot.run === run) slot.worker.postMessage({ type: 'fetch-result', callId: msg.callId, ...answer });
      });
    }
  }

  /** Terminates a worker; its run (if any) ends with `error`. */
  private async discard(slot: Slot, error: { name: string; message: string }): Promise<void> {
    if (!this.all.delete(slot)) return;
    const at = this.idle.indexOf(slot);
    if (at >= 0) this.idle.splice(at, 1);
    const run = slot.run;
    if (run) {
      run.finish({
        stdout: '',
        stderr: '',
        result: null,
        error,
        durationMs: Math.round(performance.now() - run.started),
      });
    }
    await slot.worker.terminate().catch(() => {});
  }
}
