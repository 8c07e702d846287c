import { z } from 'zod';
import { deleteSpentSignInAttempts } from '../../auth/repo.ts';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';

/** Background work of sign-in. */
export const authJobs = {
  /** Deletes the sign-in budget windows (sign-in-limit.ts) that ended; a new attempt starts a new one anyway. */
  'auth.sweep-sign-in-attempts': defineJob({
    payload: z.object({}),
    schedule: { cron: '*/10 * * * *' },
    // The next run is the retry.
    retry: { maxAttempts: 1 },
    run: async (deps) => ({ deleted: await deleteSpentSignInAttempts(deps.database.db, new Date()) }),
  }),
} satisfies JobCatalog;
