import { z } from 'zod';
import type { Executor } from '../../db/client.ts';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { type EnqueueOptions, enqueue } from '../../jobs/queue.ts';
import { extractMemories } from './memories.service.ts';

/** Background work of agents: memory extraction after a reply, off the request path. */
export const agentJobs = {
  'agents.extract-memories': defineJob({
    payload: z.object({ conversationId: z.string() }),
    retry: { maxAttempts: 3, baseDelayMs: 10_000 },
    run: (deps, { conversationId }, job) => extractMemories(deps, conversationId, job.log),
  }),
} satisfies JobCatalog;

export function enqueueAgentJob<T extends keyof typeof agentJobs>(
  db: Executor,
  type: T,
  payload: z.input<(typeof agentJobs)[T]['payload']>,
  opts?: EnqueueOptions,
): Promise<string | undefined> {
  return enqueue(db, agentJobs, type, payload, opts);
}
