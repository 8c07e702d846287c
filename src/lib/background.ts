import type { Logger } from './logger.ts';

/**
 * Work that finishes after the answer is sent (settling a bill, for instance). Shutdown drains it, so a
 * graceful stop loses nothing; failures are logged, never thrown at a caller who has already been answered.
 */
export class BackgroundTasks {
  private readonly pending = new Set<Promise<unknown>>();

  constructor(private readonly log: Logger) {}

  track(what: string, work: Promise<unknown>): void {
    const p = work.catch((err: unknown) => this.log.error({ err, what }, 'background task failed'));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Resolves when everything tracked so far (and anything it started) has finished. */
  async drain(): Promise<void> {
    while (this.pending.size) await Promise.all(this.pending);
  }
}
