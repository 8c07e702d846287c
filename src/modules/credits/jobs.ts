import { z } from 'zod';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { releaseExpiredHolds } from './service.ts';

/** Background work of the credits area. */
export const creditJobs = {
  /** Gives back the credit leases of an instance that died (they expire when it stops renewing them). */
  'credits.release-expired-holds': defineJob({
    payload: z.object({}),
    schedule: { cron: '* * * * *' },
    // The next minute's run is the retry.
    retry: { maxAttempts: 1 },
    run: async (deps) => ({ released: await releaseExpiredHolds({ db: deps.database.db }) }),
  }),
} satisfies JobCatalog;
