import type { Cron } from 'croner';
import type { Deps } from '../context.ts';
import type { Executor } from '../db/client.ts';
import { type JobCatalog, parseSchedule } from './definition.ts';
import { enqueue, errorText } from './queue.ts';

/** How often the scheduler checks that the next slot of every recurring job is queued. */
const TICK_MS = 15_000;

/**
 * Queues the recurring jobs of a catalog: for each, the next run of its cron schedule as a job due then, keyed
 * `<type>@<slot time>` and enqueued with `once`, so the slot exists once however many instances schedule it
 * and runs once (a worker claims it with SKIP LOCKED), even if an instance enqueues it late, after it ran.
 *
 * This departs from ARCHITECTURE.md's leader elected with `pg_try_advisory_lock`: a session advisory lock
 * needs one connection held for the leader's lifetime (outside the pool, re-won after every reconnect), and
 * PGlite would need a second code path. The unique slot key needs neither, has no leader to lose, and makes
 * every instance's scheduler equal; the price is one conflicting insert per slot per instance.
 *
 * A slot missed while no instance ran is not made up: the next one is queued. A slot queued and then not
 * run in time (every instance stopped) runs when a worker next starts.
 */
export class JobScheduler {
  private readonly schedules: Array<{ type: string; cron: Cron }>;
  /** The slot this instance last queued, per type: nothing to insert until it has passed. */
  private readonly queued = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;

  constructor(
    private readonly deps: Pick<Deps, 'log'> & { db: Executor },
    private readonly catalog: JobCatalog,
    private readonly tickMs = TICK_MS,
  ) {
    this.schedules = Object.entries(catalog).flatMap(([type, def]) =>
      def.schedule ? [{ type, cron: parseSchedule(def.schedule) }] : [],
    );
  }

  /** Queues the next slots now (in the background) and then every tick. */
  start(): void {
    if (this.timer || this.schedules.length === 0) return;
    const run = () => {
      if (this.ticking) return;
      this.ticking = this.tick()
        .then(
          () => undefined,
          (err: unknown) => this.deps.log.warn({ error: errorText(err) }, 'scheduling recurring jobs failed'),
        )
        .finally(() => {
          this.ticking = undefined;
        });
    };
    this.timer = setInterval(run, this.tickMs);
    this.timer.unref();
    run();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking;
  }

  /** Ensures the first slot after `now` of every recurring job is queued; answers the slots this call inserted. */
  async tick(now = new Date()): Promise<Array<{ type: string; runAt: Date }>> {
    const inserted: Array<{ type: string; runAt: Date }> = [];
    for (const { type, cron } of this.schedules) {
      const slot = cron.nextRun(now);
      if (!slot || this.queued.get(type) === slot.getTime()) continue;
      const id = await enqueue(
        this.deps.db,
        this.catalog,
        type,
        {},
        {
          runAt: slot,
          dedupeKey: `${type}@${slot.toISOString()}`,
          once: true,
        },
      );
      this.queued.set(type, slot.getTime());
      if (id) inserted.push({ type, runAt: slot });
    }
    return inserted;
  }
}
