import { z } from 'zod';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { enqueuerFor } from '../../jobs/queue.ts';
import { extractMemories } from './memories.service.ts';
import { failOrphanedRuns } from './runs.service.ts';

/** Background work of agents: memory extraction after a reply, off the request path; dead instances' turns. */
export const agentJobs = {
  /** Marks failed the chat turns whose instance died (their lease ran out); every instance also does at start-up. */
  'agents.fail-orphaned-runs': defineJob({
    payload: z.object({}),
    schedule: { cron: '* * * * *' },
    // The next minute's run is the retry.
    retry: { maxAttempts: 1 },
    run: async (deps) => ({ failed: await failOrphanedRuns(deps) }),
  }),
  'agents.extract-memories': defineJob({
    payload: z.object({ conversationId: z.string() }),
    retry: { maxAttempts: 3, baseDelayMs: 10_000 },
    run: (deps, { conversationId }, job) => extractMemories(deps, conversationId, job.log),
  }),
} satisfies JobCatalog;

/** Queues a job of this area (inside the caller's transaction when given one). */
export const enqueueAgentJob = enqueuerFor(agentJobs);
