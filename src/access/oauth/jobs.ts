import { z } from 'zod';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { sweepExpiredArtifacts } from './repo.ts';

/** Background work of the authorization server. */
export const oauthJobs = {
  /** Deletes codes, sessions, interactions, grants and refresh tokens a minute past their expiry. */
  'oauth.sweep-expired': defineJob({
    payload: z.object({}),
    schedule: { cron: '*/10 * * * *' },
    // The next run is the retry.
    retry: { maxAttempts: 1 },
    run: async (deps) => ({ deleted: await sweepExpiredArtifacts(deps.database.db) }),
  }),
} satisfies JobCatalog;
