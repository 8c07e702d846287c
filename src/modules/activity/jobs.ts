import { z } from 'zod';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { purgeActivity } from './service.ts';

/** The activity log's upkeep: rows past ACTIVITY_RETENTION_DAYS are deleted once an hour. */
export const activityJobs = {
  'activity.purge': defineJob({
    payload: z.object({}),
    schedule: { cron: '41 * * * *' },
    retry: { maxAttempts: 2, baseDelayMs: 60_000 },
    run: (deps) => purgeActivity(deps),
  }),
} satisfies JobCatalog;
