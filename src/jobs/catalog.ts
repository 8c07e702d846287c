import { z } from 'zod';
import { oauthJobs } from '../auth/oauth/jobs.ts';
import type { Executor } from '../db/client.ts';
import { mcpJobs } from '../mcp/jobs.ts';
import { activityJobs } from '../modules/activity/jobs.ts';
import { agentJobs } from '../modules/agents/jobs.ts';
import { authJobs } from '../modules/auth/jobs.ts';
import { channelJobs } from '../modules/channels/jobs.ts';
import { connectionJobs } from '../modules/connections/jobs.ts';
import { creditJobs } from '../modules/credits/jobs.ts';
import { knowledgeJobs } from '../modules/knowledge/jobs.ts';
import { taskJobs } from '../modules/scheduled-tasks/jobs.ts';
import { toolJobs } from '../modules/tools/jobs.ts';
import { webhookJobs } from '../modules/webhooks/jobs.ts';
import { defineJob, type JobCatalog } from './definition.ts';
import { deleteOldJobs, type EnqueueOptions, enqueue } from './queue.ts';

/** The queue's own upkeep: finished rows are kept for a while (operators look at them), then deleted. */
const jobUpkeep = {
  'jobs.cleanup': defineJob({
    payload: z.object({}),
    schedule: { cron: '17 * * * *' },
    retry: { maxAttempts: 2, baseDelayMs: 60_000 },
    run: (deps) =>
      deleteOldJobs(deps.database.db, {
        retentionDays: deps.config.jobs.retentionDays,
        deadRetentionDays: deps.config.jobs.deadRetentionDays,
      }),
  }),
} satisfies JobCatalog;

/**
 * Every job type the service runs, by name (`<area>.<action>`); each area declares its own in its `jobs.ts`.
 * A worker claims only the types of its catalog, so an instance of an older version never takes a job it
 * does not know.
 */
export const JOB_CATALOG = {
  ...activityJobs,
  ...agentJobs,
  ...authJobs,
  ...channelJobs,
  ...connectionJobs,
  ...creditJobs,
  ...knowledgeJobs,
  ...mcpJobs,
  ...oauthJobs,
  ...taskJobs,
  ...toolJobs,
  ...webhookJobs,
  ...jobUpkeep,
} satisfies JobCatalog;

export type JobType = keyof typeof JOB_CATALOG;

/** Enqueues a job of the service's catalog (see `enqueue`); pass a transaction to commit it with other writes. */
export function enqueueJob<T extends JobType>(
  db: Executor,
  type: T,
  payload: z.input<(typeof JOB_CATALOG)[T]['payload']>,
  opts?: EnqueueOptions,
): Promise<string | undefined> {
  return enqueue(db, JOB_CATALOG, type, payload, opts);
}
