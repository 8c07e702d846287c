import { z } from 'zod';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { deleteExpiredTestRuns } from './repo.ts';

/** Background work of custom tools. */
export const toolJobs = {
  /** Deletes the kept test-run results (test-runs.service.ts) past their 10 minutes. */
  'tools.sweep-test-runs': defineJob({
    payload: z.object({}),
    schedule: { cron: '*/10 * * * *' },
    // The next run is the retry.
    retry: { maxAttempts: 1 },
    run: async (deps) => ({ deleted: await deleteExpiredTestRuns(deps.database.db, new Date()) }),
  }),
} satisfies JobCatalog;
