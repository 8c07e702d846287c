import { z } from 'zod';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { enqueuerFor } from '../../jobs/queue.ts';
import { dispatchDueTasks, executeTaskRun } from './runs.ts';

/**
 * The retry policy of a run: at most 3 attempts, the second 1 minute after the first fails, the third 2 minutes
 * after (plus up to a quarter of jitter); see `executeTaskRun` for which failures are retried.
 */
export const TASK_RUN_RETRY = { maxAttempts: 3, baseDelayMs: 60_000 } as const;

/**
 * Background work of scheduled tasks: the dispatcher every minute, and one job per run. A run's job has one
 * claim more than the retry policy's attempts: if the service dies mid-run, that claim records the run as
 * interrupted instead of leaving it `running`.
 */
export const taskJobs = {
  'tasks.dispatch-due': defineJob({
    payload: z.object({}),
    schedule: { cron: '* * * * *' },
    retry: { maxAttempts: 1 },
    run: async (deps) => ({ queued: await dispatchDueTasks(deps) }),
  }),
  'tasks.run': defineJob({
    payload: z.object({ runId: z.string() }),
    retry: { maxAttempts: TASK_RUN_RETRY.maxAttempts + 1, baseDelayMs: TASK_RUN_RETRY.baseDelayMs },
    run: (deps, { runId }, job) => executeTaskRun(deps, runId, job),
  }),
} satisfies JobCatalog;

/** Queues a job of this area (inside the caller's transaction when given one). */
export const enqueueTaskJob = enqueuerFor(taskJobs);
