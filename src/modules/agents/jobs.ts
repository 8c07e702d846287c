import { z } from 'zod';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { enqueuerFor } from '../../jobs/queue.ts';
import { extractMemories } from './memories.service.ts';

/** Background work of agents: memory extraction after a reply, off the request path. */
export const agentJobs = {
  'agents.extract-memories': defineJob({
    payload: z.object({ conversationId: z.string() }),
    retry: { maxAttempts: 3, baseDelayMs: 10_000 },
    run: (deps, { conversationId }, job) => extractMemories(deps, conversationId, job.log),
  }),
} satisfies JobCatalog;

/** Queues a job of this area (inside the caller's transaction when given one). */
export const enqueueAgentJob = enqueuerFor(agentJobs);
