import { z } from 'zod';
import { oauthJobs } from './access/oauth/jobs.ts';
import type { AgentPorts } from './agent/ports.ts';
import type { AgentToolGroup } from './agent/tool-group.ts';
import type { AreaState, BaseDeps } from './context.ts';
import { defineJob, type JobCatalog } from './jobs/definition.ts';
import { deleteOldJobs, enqueuerFor } from './jobs/queue.ts';
import { activityJobs, createActivityWriter, recordActivity } from './modules/activity/index.ts';
import {
  AgentConfigCache,
  type AgentDeletionHook,
  agentJobs,
  ConversationLog,
  memoryToolGroup,
} from './modules/agents/index.ts';
import { authJobs } from './modules/auth/index.ts';
import { channelAgentDeletion, channelJobs } from './modules/channels/index.ts';
import { ActiveConnectionsCache, connectionJobs, providerToolGroup } from './modules/connections/index.ts';
import { createCreditBank, creditJobs } from './modules/credits/index.ts';
import { linkedToolGroup, toolJobs } from './modules/custom-tools/index.ts';
import { knowledgeJobs, knowledgeToolGroup } from './modules/knowledge/index.ts';
import { runCompletion } from './modules/llm/index.ts';
import { mcpJobs } from './modules/mcp-tasks/index.ts';
import { executeCodeToolGroup } from './modules/sandbox/index.ts';
import { taskAgentDeletion, taskJobs, taskToolGroup } from './modules/scheduled-tasks/index.ts';
import { skillToolGroup } from './modules/skills/index.ts';
import { webhookJobs } from './modules/webhooks/index.ts';

/**
 * The composition root: the one place that knows every area. It lists the agent tool groups and the job
 * catalog, gives the agent runtime its model calls and builds the areas' per-app state; `createDeps`
 * (src/runtime.ts) puts them in `Deps`.
 */

/** What each area holds for the app's lifetime (`Deps['areas']`, see `AreaState`), built once per `Deps`. */
export function createAreaState(deps: BaseDeps): AreaState {
  const ttlMs = deps.config.authCacheTtlMs;
  return {
    activityWriter: createActivityWriter(deps),
    creditBank: createCreditBank(deps),
    conversationLog: new ConversationLog(deps),
    agentConfigCache: new AgentConfigCache(ttlMs),
    activeConnectionsCache: new ActiveConnectionsCache(ttlMs),
  };
}

/** The agent tool groups of every area, in the order the model sees their tools. */
export const AGENT_TOOL_GROUPS: readonly AgentToolGroup[] = [
  providerToolGroup,
  knowledgeToolGroup,
  memoryToolGroup,
  skillToolGroup,
  executeCodeToolGroup,
  linkedToolGroup,
  taskToolGroup,
];

/** What the areas above agents do when an agent is deleted: channels release their webhooks, tasks are disabled. */
export const AGENT_DELETION: readonly AgentDeletionHook[] = [channelAgentDeletion, taskAgentDeletion];

/** The agent runtime's model calls and activity log. */
export const AGENT_PORTS: AgentPorts = { complete: runCompletion, recordActivity };

/** The queue's own upkeep: finished rows are kept for a while (operators look at them), then deleted. */
const jobUpkeep = {
  'jobs.cleanup': defineJob({
    payload: z.object({}),
    schedule: { cron: '17 * * * *' },
    retry: { maxAttempts: 2, baseDelayMs: 60_000 },
    run: (deps) =>
      deleteOldJobs(deps.database.db, {
        retentionDays: deps.config.jobs.retentionDays,
        deadRetentionDays: deps.config.jobs.deadRetentionDays,
      }),
  }),
} satisfies JobCatalog;

/**
 * Every job type the service runs, by name (`<area>.<action>`); each area declares its own in its `jobs.ts`.
 * A worker claims only the types of its catalog, so an instance of an older version never takes a job it
 * does not know.
 */
export const JOB_CATALOG = {
  ...activityJobs,
  ...agentJobs,
  ...authJobs,
  ...channelJobs,
  ...connectionJobs,
  ...creditJobs,
  ...knowledgeJobs,
  ...mcpJobs,
  ...oauthJobs,
  ...taskJobs,
  ...toolJobs,
  ...webhookJobs,
  ...jobUpkeep,
} satisfies JobCatalog;

export type JobType = keyof typeof JOB_CATALOG;

/** Enqueues a job of the service's catalog (see `enqueue`); pass a transaction to commit it with other writes. */
export const enqueueJob = enqueuerFor(JOB_CATALOG);
