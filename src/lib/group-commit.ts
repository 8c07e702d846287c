import type { BackgroundTasks } from './background.ts';
import type { Logger } from './logger.ts';

/**
 * How long a write waits for others to share its statement (group commit): on PGlite a statement runs on the
 * service's own thread, so fewer of them matter more. Conversation writes use it (credit charges wait longer).
 */
export const GROUP_COMMIT_WINDOW_MS = { pg: 5, pglite: 20 } as const;

/**
 * When a group commit writes (GroupCommit's, and the credit bank's, which batches its own kind of write): the
 * first item queued waits up to `windowMs` for others, and while items keep coming one batch is written a window.
 * A steady stream thus costs the database one statement a window, not one each time the last one committed (under
 * load a batch every few milliseconds, whose CPU showed in every request's latency: docs/gateway-speed.md).
 * `flush` writes everything at once, what arrives meanwhile included (a full batch, tests, shutdown). `writeOne`
 * writes one batch, or nothing when nothing is due (a flush may have written it already); `more` says whether
 * anything is left to write.
 */
export class WriteSchedule {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> | undefined;

  constructor(
    private readonly opts: {
      windowMs: number;
      /** A batch holds at most this many: once that many are queued, they are written at once. */
      max: number;
      /** Writes a batch of at most `limit` (default: as many as a batch holds). */
      writeOne: (limit?: number) => Promise<void>;
      more: () => boolean;
      onError: (err: unknown) => void;
    },
  ) {}

  /** Something was queued, `length` in all now: a full batch is written at once, else within the window. */
  queued(length: number): void {
    if (length >= this.opts.max) this.flush().catch(this.opts.onError);
    else this.soon();
  }

  /** A batch within the window (batches start at least a window apart). */
  soon(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.next().then(() => {
        if (this.opts.more()) this.soon();
      }, this.opts.onError);
    }, this.opts.windowMs);
  }

  /** Writes everything now, and what arrives meanwhile; resolves once nothing is left. */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    do await this.next();
    while (this.opts.more());
  }

  /**
   * Writes at once, after the batch being written if one is, at most `count()` of what is queued then (none: the
   * batch being written took them); what arrives later keeps its window.
   */
  async now(count: () => number): Promise<void> {
    while (this.current) await this.current.catch(() => {});
    const n = count();
    if (n > 0) await this.next(n);
  }

  /** The batch being written, if one is. */
  get writing(): Promise<void> | undefined {
    return this.current;
  }

  /** One batch (of at most `limit`), or the one being written. */
  private next(limit?: number): Promise<void> {
    this.current ??= this.opts.writeOne(limit).finally(() => {
      this.current = undefined;
    });
    return this.current;
  }
}

/**
 * Group commit for writes an answer does not wait for: `add` queues an item, and within `windowMs` every
 * queued item is written by one call of `write` (at most `max` a call; the rest follow at once when that many
 * are queued, else a window later: WriteSchedule), in the order they were added. A failed write is tried again
 * (three times, backing off); then its items are logged as lost and their promises answer false (a batch of
 * several is first written item by item, so one bad item loses only itself). Every item is tracked in
 * `background`, so draining it (tests, shutdown) waits until it is written.
 */
export class GroupCommit<T> {
  private queue: Array<{ item: T; done: (err?: unknown) => void }> = [];
  private readonly schedule: WriteSchedule;
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
  ) {
    const max = opts.max ?? 1000;
    this.schedule = new WriteSchedule({
      windowMs: opts.windowMs,
      max,
      writeOne: async (limit = max) => {
        if (this.queue.length) await this.writeBatch(this.queue.splice(0, Math.min(limit, max)));
      },
      more: () => this.queue.length > 0,
      onError: (err) => opts.log.error({ err }, `${opts.what}: a batch failed`),
    });
  }

  /** Queues `item`; resolves once it is written (true) or given up (false): nobody needs to wait for that. */
  add(item: T): Promise<boolean> {
    const written = new Promise<boolean>((resolve) => {
      this.queue.push({ item, done: (err) => resolve(err === undefined) });
    });
    this.opts.background.track(this.opts.what, written);
    this.schedule.queued(this.queue.length);
    return written;
  }

  /** Whether anything is queued or being written. */
  get pending(): boolean {
    return this.queue.length > 0 || this.schedule.writing !== undefined;
  }

  /** Writes everything queued now, and resolves once it is written (or given up). */
  flush(): Promise<void> {
    return this.schedule.flush();
  }

  /**
   * Writes what is queued now at once (after the batch being written, if one is), and resolves once it is written
   * (or given up); what is queued after it waits for its window, to share a statement with what follows it. With
   * `pick`, only the items it picks are written now (in their order), ahead of the others queued before them,
   * which keep their window: for writes that may go before what was queued earlier.
   */
  writeQueued(pick?: (item: T) => boolean): Promise<void> {
    const last = this.queue.at(-1);
    if (!last) return Promise.resolve();
    return this.schedule.now(() => {
      // `last` and what was queued before it, less what a batch written meanwhile took.
      const end = this.queue.indexOf(last) + 1;
      if (!pick) return end;
      const picked: typeof this.queue = [];
      const kept: typeof this.queue = [];
      for (const q of this.queue.slice(0, end)) (pick(q.item) ? picked : kept).push(q);
      this.queue = [...picked, ...kept, ...this.queue.slice(end)];
      return picked.length;
    });
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
