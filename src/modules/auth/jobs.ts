import { z } from 'zod';
import { deleteExpiredSessions, deleteSpentSignInAttempts } from '../../access/repo.ts';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';

/** Background work of sign-in. */
export const authJobs = {
  /**
   * Deletes the sign-in budget windows (sign-in-limit.ts) that ended, a new attempt starts a new one anyway, and
   * the browser sessions past their end, which no sign-in check accepts any more.
   */
  'auth.sweep-sign-in-attempts': defineJob({
    payload: z.object({}),
    schedule: { cron: '*/10 * * * *' },
    // The next run is the retry.
    retry: { maxAttempts: 1 },
    run: async (deps) => {
      const now = new Date();
      return {
        deleted: await deleteSpentSignInAttempts(deps.database.db, now),
        expiredSessions: await deleteExpiredSessions(deps.database.db, now),
      };
    },
  }),
} satisfies JobCatalog;
