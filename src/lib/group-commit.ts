import type { BackgroundTasks } from './background.ts';
import type { Logger } from './logger.ts';

/**
 * How long a write waits for others to share its statement (group commit): on PGlite a statement runs on the
 * service's own thread, so fewer of them matter more. Conversation writes use it (credit charges wait longer).
 */
export const GROUP_COMMIT_WINDOW_MS = { pg: 5, pglite: 20 } as const;

/**
 * Group commit for writes an answer does not wait for: `add` queues an item, and within `windowMs` every
 * queued item is written by one call of `write` (at most `max` a call; the rest follow at once), in the order
 * they were added. A failed write is tried again (three times, backing off); then its items are logged as lost
 * and their promises answer false (a batch of several is first written item by item, so one bad item loses only
 * itself). Every item is tracked in `background`, so draining it (tests, shutdown) waits until it is written.
 */
export class GroupCommit<T> {
  private queue: Array<{ item: T; done: (err?: unknown) => void }> = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** Statements written so far (tests and benchmarks read it). */
  batches = 0;

  constructor(
    private readonly opts: {
      what: string;
      write: (items: T[]) => Promise<void>;
      windowMs: number;
      max?: number;
      log: Logger;
      background: BackgroundTasks;
    },
  ) {}

  /** Queues `item`; resolves once it is written (true) or given up (false): nobody needs to wait for that. */
  add(item: T): Promise<boolean> {
    const written = new Promise<boolean>((resolve) => {
      this.queue.push({ item, done: (err) => resolve(err === undefined) });
    });
    this.opts.background.track(this.opts.what, written);
    if (this.queue.length >= (this.opts.max ?? 1000)) void this.flush();
    else if (!this.timer && !this.flushing) this.timer = setTimeout(() => void this.flush(), this.opts.windowMs);
    return written;
  }

  /** Whether anything is queued or being written. */
  get pending(): boolean {
    return this.queue.length > 0 || this.flushing !== undefined;
  }

  /** Writes everything queued now, and resolves once it is written (or given up). */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.flushing ??= (async () => {
      try {
        while (this.queue.length) await this.writeBatch(this.queue.splice(0, this.opts.max ?? 1000));
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
  }

  private async writeBatch(batch: Array<{ item: T; done: (err?: unknown) => void }>, attempts = 4): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.opts.write(batch.map((b) => b.item));
        this.batches++;
        for (const b of batch) b.done();
        return;
      } catch (err) {
        if (attempt < attempts) {
          await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
          continue;
        }
        if (batch.length > 1) {
          // One item may be what fails: the others are still written, one at a time and in order.
          for (const b of batch) await this.writeBatch([b], 1);
          return;
        }
        this.opts.log.error({ err }, `${this.opts.what}: a write was lost`);
        for (const b of batch) b.done(err ?? new Error('write failed'));
        return;
      }
    }
  }
}
