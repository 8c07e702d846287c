import { hostname } from 'node:os';
import type { Deps } from '../context.ts';
import type { JobRow } from '../db/schema/index.ts';
import { backoffMs, type JobCatalog, retryPolicy } from './definition.ts';
import { errorText } from './queue.ts';
import * as repo from './repo.ts';

export interface WorkerOptions {
  deps: Deps;
  catalog: JobCatalog;
  /** Jobs run at once. */
  concurrency: number;
  /** How often an idle worker looks for due jobs. */
  pollIntervalMs: number;
  /** How long a claim holds without renewal; renewed every third of it while the job runs. */
  leaseMs: number;
  /** Names the worker in `locked_by` (default host:pid:random). */
  id?: string;
}

interface Running {
  done: Promise<void>;
  abort: AbortController;
}

class LeaseLost extends Error {}

/**
 * Claims due jobs of its catalog's types and runs them, `concurrency` at a time. A claim is a lease: renewed
 * while the handler runs, it lets a job whose worker died be claimed again once it runs out. A job therefore
 * runs at least once; a handler must tolerate running again after a crash (every handler here is idempotent).
 * Only the holder of the current claim records an outcome, so a stale worker never overwrites a newer run.
 */
export class JobWorker {
  readonly id: string;
  private readonly running = new Map<string, Running>();
  private readonly types: string[];
  private loop: Promise<void> | undefined;
  private stopping = false;
  private wakeUp: (() => void) | undefined;

  constructor(private readonly opts: WorkerOptions) {
    this.id = opts.id ?? `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
    this.types = Object.keys(opts.catalog);
  }

  /** Starts polling in the background; returns at once. */
  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.loop = this.poll();
  }

  /** Looks for due jobs now instead of at the next poll (after an enqueue on this instance). */
  wake(): void {
    this.wakeUp?.();
  }

  /**
   * Stops claiming and waits up to `timeoutMs` for running jobs to finish. Jobs still running then are told to
   * stop (their signal aborts) and left: their rows stay `running` and another worker claims them once their
   * lease expires.
   */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.loop;
    this.loop = undefined;
    const all = Promise.all([...this.running.values()].map((r) => r.done));
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (late) {
      this.opts.deps.log.warn(
        { jobs: [...this.running.keys()] },
        'jobs still running at shutdown; they run again once their lease expires',
      );
      for (const r of this.running.values()) r.abort.abort(new Error('The worker is shutting down'));
    }
  }

  /** Claims what is due (up to the free slots) and resolves when those jobs have finished: for tests and tools. */
  async runOnce(): Promise<number> {
    const claimed = await this.claim();
    await Promise.all(claimed.map((id) => this.running.get(id)?.done));
    return claimed.length;
  }

  /** Job ids running now. */
  get active(): string[] {
    return [...this.running.keys()];
  }

  private async poll(): Promise<void> {
    while (!this.stopping) {
      const free = this.opts.concurrency - this.running.size;
      let claimed = 0;
      try {
        claimed = (await this.claim()).length;
      } catch (err) {
        this.opts.deps.log.warn({ error: errorText(err) }, 'claiming jobs failed');
      }
      if (this.stopping) break;
      // A full batch may mean more is due: claim again at once while slots are free. Otherwise wait for the
      // next poll, or for a job to finish and free a slot.
      if (claimed === 0 || claimed < free || this.running.size >= this.opts.concurrency) await this.sleep();
    }
  }

  private sleep(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.wakeUp === done) this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, this.opts.pollIntervalMs);
      this.wakeUp = done;
    });
  }

  private async claim(): Promise<string[]> {
    const limit = this.opts.concurrency - this.running.size;
    if (limit <= 0) return [];
    const rows = await repo.claimJobs(this.opts.deps.database.db, {
      types: this.types,
      workerId: this.id,
      leaseMs: this.opts.leaseMs,
      limit,
      running: [...this.running.keys()],
    });
    for (const row of rows) this.launch(row);
    return rows.map((r) => r.id);
  }

  private launch(row: JobRow): void {
    const abort = new AbortController();
    const done = this.execute(row, abort)
      .catch((err: unknown) => {
        // Recording the outcome failed (the database went away): the lease runs out and the job runs again.
        this.opts.deps.log.warn({ jobId: row.id, type: row.type, error: errorText(err) }, 'recording a job failed');
      })
      .finally(() => {
        this.running.delete(row.id);
        this.wake();
      });
    this.running.set(row.id, { done, abort });
  }

  private async execute(row: JobRow, abort: AbortController): Promise<void> {
    const { deps, catalog } = this.opts;
    const db = deps.database.db;
    const claim: repo.Claim = { id: row.id, workerId: this.id, attempt: row.attempts };
    const log = deps.log.child({ jobId: row.id, jobType: row.type, attempt: row.attempts });
    const def = catalog[row.type];
    const parsed = def?.payload.safeParse(row.payload);
    if (!def || !parsed?.success) {
      // A payload that no longer fits its schema will not fit on a retry either.
      const error = parsed?.error ? `Invalid payload: ${parsed.error.message}` : `Unknown job type ${row.type}`;
      await repo.markFailed(db, claim, { error: errorText(error), retryInMs: undefined });
      log.error({ error: errorText(error) }, 'job dead');
      return;
    }
    if (row.attempts > row.maxAttempts) {
      // Its worker died on every attempt (a job that crashes the process, or a deadline it never meets).
      await repo.markFailed(db, claim, { error: row.lastError ?? 'Out of attempts', retryInMs: undefined });
      log.error({ error: row.lastError }, 'job dead: out of attempts');
      return;
    }

    const heartbeat = this.heartbeat(claim, abort, log);
    let failure: { err: unknown } | undefined;
    try {
      await def.run(deps, parsed.data, { jobId: row.id, attempt: row.attempts, signal: abort.signal, log });
    } catch (err) {
      failure = { err };
    } finally {
      heartbeat.stop();
    }
    // A lost claim belongs to whoever holds it now; they record the outcome.
    if (abort.signal.aborted) return;
    if (!failure) {
      if (await repo.markSucceeded(db, claim)) log.debug('job succeeded');
      return;
    }
    const error = errorText(failure.err);
    const retryInMs = row.attempts < row.maxAttempts ? backoffMs(retryPolicy(def), row.attempts) : undefined;
    if (await repo.markFailed(db, claim, { error, retryInMs })) {
      if (retryInMs === undefined) log.error({ error }, 'job dead: out of attempts');
      else log.warn({ error, retryInMs }, 'job failed; will retry');
    }
  }

  /** Renews the lease every third of it; aborts the handler when the claim turns out to be lost. */
  private heartbeat(claim: repo.Claim, abort: AbortController, log: Deps['log']): { stop(): void } {
    const every = Math.max(50, Math.floor(this.opts.leaseMs / 3));
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const beat = async () => {
      try {
        const held = await repo.extendLease(this.opts.deps.database.db, claim, this.opts.leaseMs);
        if (!held && !stopped) {
          log.warn('job lease lost: another worker may be running it; abandoning this run');
          abort.abort(new LeaseLost(`Lease of job ${claim.id} lost`));
          return;
        }
      } catch (err) {
        // A missed renewal is retried at the next beat; the lease covers two more.
        log.warn({ error: errorText(err) }, 'renewing a job lease failed');
      }
      if (!stopped) timer = setTimeout(beat, every);
    };
    timer = setTimeout(beat, every);
    return {
      stop() {
        stopped = true;
        clearTimeout(timer);
      },
    };
  }
}
