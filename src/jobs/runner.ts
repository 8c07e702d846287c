import type { Deps } from '../context.ts';
import type { JobCatalog } from './definition.ts';
import { JobScheduler } from './scheduler.ts';
import { JobWorker } from './worker.ts';

/** One instance's share of the jobs: a worker and the recurring scheduler, started and stopped together. */
export class JobRunner {
  readonly worker: JobWorker;
  readonly scheduler: JobScheduler;

  constructor(deps: Deps, catalog: JobCatalog) {
    const { concurrency, pollIntervalMs, leaseMs } = deps.config.jobs;
    this.worker = new JobWorker({ deps, catalog, concurrency, pollIntervalMs, leaseMs });
    this.scheduler = new JobScheduler({ db: deps.database.db, log: deps.log }, catalog);
  }

  /** Returns at once: the first poll and the first scheduling run in the background. */
  start(): void {
    this.scheduler.start();
    this.worker.start();
  }

  /** Stops scheduling and claiming, then waits up to `timeoutMs` for running jobs (see JobWorker.stop). */
  async stop(timeoutMs: number): Promise<void> {
    await this.scheduler.stop();
    await this.worker.stop(timeoutMs);
  }
}
