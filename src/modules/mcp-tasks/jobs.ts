import { z } from 'zod';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { sweepMcpTasks } from './service.ts';

/** Upkeep of MCP tasks (service.ts): expired ones deleted, runs lost with their instance failed. */
export const mcpJobs = {
  'mcp.tasks-cleanup': defineJob({
    payload: z.object({}),
    schedule: { cron: '*/5 * * * *' },
    // The next run is the retry.
    retry: { maxAttempts: 1 },
    run: (deps) => sweepMcpTasks(deps),
  }),
} satisfies JobCatalog;
