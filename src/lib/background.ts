import type { Logger } from './logger.ts';

/**
 * Work that finishes after the answer is sent (settling a bill, for instance). Shutdown drains it, so a
 * graceful stop loses nothing; failures are logged, never thrown at a caller who has already been answered.
 */
export class BackgroundTasks {
  /** Work in flight, and what settles once it finished and was logged if it failed. */
  private readonly pending = new Map<Promise<unknown>, Promise<unknown>>();

  constructor(private readonly log: Logger) {}

  /**
   * Tracks `work` until it settles, logging its failure. Work tracked already is not tracked again: the credit
   * bank answers the charges of one batch with one promise, tracked once and logged once if the batch fails.
   */
  track(what: string, work: Promise<unknown>): void {
    if (this.pending.has(work)) return;
    const done = work.then(
      () => this.pending.delete(work),
      (err: unknown) => {
        this.pending.delete(work);
        this.log.error({ err, what }, 'background task failed');
      },
    );
    this.pending.set(work, done);
  }

  /** Resolves when everything tracked so far (and anything it started) has finished. */
  async drain(): Promise<void> {
    while (this.pending.size) await Promise.all(this.pending.values());
  }
}
