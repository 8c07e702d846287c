import { requireScope, type ServiceContext } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { AgentRow } from '../../db/schema/index.ts';
import { NotFoundError, ValidationError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import { resolveModel } from '../llm/index.ts';
import { agentConfigChanged, cachedAgentConfig } from './config-cache.ts';
import * as repo from './repo.ts';
import { type Agent, AVAILABLE_GROUPS, type BuiltInToolGroup, type CreateAgent, type UpdateAgent } from './schema.ts';

/**
 * Agents (SPEC §4): `agents-use` may list, read and chat; only `agents-all` creates, changes and deletes. An
 * account's first agent becomes its default, which the id `default` addresses; deleting it clears the mark.
 */

export const DEFAULT_AGENT_ID = 'default';
const READ_SCOPES = ['agents-all', 'agents-use'] as const;

export function toAgent(row: AgentRow): Agent {
  return {
    id: row.id,
    accountId: row.accountId,
    name: row.name,
    llm: row.llm,
    personality: row.personality,
    description: row.description,
    temperature: row.temperature,
    firstPrompt: row.firstPrompt,
    enabledBuiltInTools: row.enabledBuiltInTools,
    billingAccountType: row.billingAccountType,
    usageLimits: row.usageLimits,
    isDefault: row.isDefault,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** The caller's agent by id or `default`, or 404; `anyOf` are the scopes that may reach it. */
export async function ownedAgent(
  ctx: ServiceContext,
  agentId: string,
  anyOf: readonly ('agents-all' | 'agents-use')[] = READ_SCOPES,
): Promise<AgentRow> {
  requireScope(ctx, ...anyOf);
  const row = await findByIdOrDefault(ctx, agentId);
  if (!row) {
    throw new NotFoundError(
      agentId === DEFAULT_AGENT_ID ? 'The account has no default agent' : `Agent ${agentId} not found`,
    );
  }
  return row;
}

/**
 * `ownedAgent` for a chat: the row comes from this instance's agent cache (see config-cache.ts), so a chat
 * reads no agent from the database while the agent is unchanged.
 */
export async function chatAgent(ctx: ServiceContext, agentId: string): Promise<AgentRow> {
  requireScope(ctx, ...READ_SCOPES);
  const row = await cachedAgentConfig(ctx.deps, ctx.accountId, `agent:${agentId}`, () =>
    findByIdOrDefault(ctx, agentId),
  );
  if (!row) {
    throw new NotFoundError(
      agentId === DEFAULT_AGENT_ID ? 'The account has no default agent' : `Agent ${agentId} not found`,
    );
  }
  return row;
}

/**
 * The account's agent id for an id or `default`, undefined when there is none. No scope check: callers that
 * may name an agent under their own scope (channels, scheduled tasks) decide who may ask.
 */
export async function existingAgentId(
  ctx: { db: Executor; accountId: string },
  agentId: string,
): Promise<string | undefined> {
  return (await findByIdOrDefault(ctx, agentId))?.id;
}

function findByIdOrDefault(ctx: { db: Executor; accountId: string }, agentId: string): Promise<AgentRow | undefined> {
  return agentId === DEFAULT_AGENT_ID
    ? repo.findDefaultAgent(ctx.db, ctx.accountId)
    : repo.findAgent(ctx.db, ctx.accountId, agentId);
}

function checkGroups(groups: readonly BuiltInToolGroup[] | undefined): BuiltInToolGroup[] | undefined {
  if (!groups) return undefined;
  const unique = [...new Set(groups)];
  const unavailable = unique.filter((g) => !AVAILABLE_GROUPS.has(g));
  if (unavailable.length) {
    throw new ValidationError(
      `Built-in tool groups not available yet on this server: ${unavailable.join(', ')} (available: ${[...AVAILABLE_GROUPS].join(', ')})`,
      [{ field: 'body.enabledBuiltInTools', message: `not available yet: ${unavailable.join(', ')}` }],
    );
  }
  return unique;
}

function checkModel(ctx: ServiceContext, llm: string | undefined): string {
  try {
    return resolveModel(ctx, llm).id;
  } catch (err) {
    if (err instanceof ValidationError) {
      throw new ValidationError(err.message, [{ field: 'body.llm', message: err.details[0]?.message ?? err.message }]);
    }
    throw err;
  }
}

export async function createAgent(ctx: ServiceContext, input: CreateAgent): Promise<Agent> {
  requireScope(ctx, 'agents-all');
  const row = await repo.insertAgent(ctx.db, {
    id: newId('agent'),
    accountId: ctx.accountId,
    name: input.name,
    llm: checkModel(ctx, input.llm),
    personality: input.personality,
    description: input.description,
    temperature: input.temperature,
    firstPrompt: input.firstPrompt,
    enabledBuiltInTools: checkGroups(input.enabledBuiltInTools) ?? [],
    billingAccountType: input.billingAccountType,
    usageLimits: input.usageLimits,
  });
  agentConfigChanged(ctx.deps, ctx.accountId);
  return toAgent(row);
}

export async function listAgents(
  ctx: ServiceContext,
  p: { page: number; limit: number; sortBy: 'createdAt' | 'updatedAt' | 'name'; sortOrder: 'asc' | 'desc' },
): Promise<Page<Agent>> {
  requireScope(ctx, ...READ_SCOPES);
  const { rows, total } = await repo.listAgents(ctx.db, ctx.accountId, p);
  return toPage(rows.map(toAgent), total, p);
}

export async function getAgent(ctx: ServiceContext, agentId: string): Promise<Agent> {
  return toAgent(await ownedAgent(ctx, agentId));
}

/** Changes only the fields given (SPEC leaves PUT's body open: every field is optional). */
export async function updateAgent(ctx: ServiceContext, agentId: string, input: UpdateAgent): Promise<Agent> {
  const current = await ownedAgent(ctx, agentId, ['agents-all']);
  const row = await repo.updateAgent(ctx.db, ctx.accountId, current.id, {
    ...input,
    ...(input.llm !== undefined ? { llm: checkModel(ctx, input.llm) } : {}),
    ...(input.enabledBuiltInTools ? { enabledBuiltInTools: checkGroups(input.enabledBuiltInTools) } : {}),
  });
  agentConfigChanged(ctx.deps, ctx.accountId);
  if (!row) throw new NotFoundError(`Agent ${agentId} not found`);
  return toAgent(row);
}

export async function setDefaultAgent(ctx: ServiceContext, agentId: string): Promise<Agent> {
  const current = await ownedAgent(ctx, agentId, ['agents-all']);
  const row = await ctx.db.transaction(async (tx) => {
    await repo.setDefaultAgent(tx, ctx.accountId, current.id);
    return repo.findAgent(tx, ctx.accountId, current.id);
  });
  agentConfigChanged(ctx.deps, ctx.accountId);
  if (!row) throw new NotFoundError(`Agent ${agentId} not found`);
  return toAgent(row);
}

/** Why a task stopped when its agent went: shown on the task. */
export const AGENT_DELETED_REASON = 'Its agent was deleted';

export type { AgentDeletionHook } from '../../agent/ports.ts';

/**
 * Deletes the agent with its conversations, counters and messaging channels (their Telegram webhooks removed
 * first); the account then has no default if it was it. Its scheduled tasks stay, disabled with
 * `AGENT_DELETED_REASON`, in the same transaction (the hooks of `deps.agentDeletion`).
 */
export async function deleteAgent(ctx: ServiceContext, agentId: string): Promise<void> {
  const current = await ownedAgent(ctx, agentId, ['agents-all']);
  for (const hook of ctx.deps.agentDeletion) await hook.before?.(ctx, current.id);
  try {
    await ctx.db.transaction(async (tx) => {
      if (!(await repo.deleteAgent(tx, ctx.accountId, current.id)))
        throw new NotFoundError(`Agent ${agentId} not found`);
      for (const hook of ctx.deps.agentDeletion) await hook.within?.(tx, ctx, current.id);
    });
  } finally {
    agentConfigChanged(ctx.deps, ctx.accountId);
  }
}
