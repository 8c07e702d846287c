import type { AgentTool, AgentToolGroup } from '../../agent/tool-group.ts';
import { requireScope, type ServiceContext } from '../../context.ts';
import type { AgentRow, AgentToolRow, CustomToolRow } from '../../db/schema/index.ts';
import { ConflictError, NotFoundError, ValidationError } from '../../lib/errors.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import { agentConfigChanged, cachedAgentConfig, ownedAgent } from '../agents/index.ts';
import * as repo from './repo.ts';
import { runTool } from './run.ts';
import type { AgentToolLink } from './schema.ts';
import { ownedTool } from './service.ts';

/**
 * Agent-tool links (SPEC §4): a linked tool becomes one of the agent's tools. Each link holds its own secret
 * values, sealed with the key ring (the agent and tool ids bound as associated data) and never returned: an
 * answer names each declared secret and whether it is set. A tool missing a declared secret is not offered to
 * the model, and its link says which are missing.
 */

const MANAGE = ['agents-all'] as const;
const READ = ['agents-all', 'agents-use'] as const;

const sealedFor = (agentId: string, toolId: string) => `agent_tools:${agentId}:${toolId}`;

function openSecrets(ctx: ServiceContext, link: AgentToolRow): Record<string, string> {
  if (!link.secretsEnc) return {};
  return JSON.parse(ctx.deps.keyRing.decrypt(link.secretsEnc, sealedFor(link.agentId, link.toolId))) as Record<
    string,
    string
  >;
}

function missingOf(tool: CustomToolRow, link: AgentToolRow): string[] {
  const set = new Set(link.secretNames);
  return tool.requiredSecrets.filter((n) => !set.has(n));
}

function toLink(l: repo.LinkWithTool): AgentToolLink {
  const set = new Set(l.link.secretNames);
  const missing = missingOf(l.tool, l.link);
  return {
    agentId: l.link.agentId,
    toolId: l.tool.id,
    tool: {
      id: l.tool.id,
      name: l.tool.name,
      description: l.tool.description,
      language: l.tool.language,
      requiredSecrets: l.tool.requiredSecrets,
    },
    secrets: l.tool.requiredSecrets.map((name) => ({ name, set: set.has(name) })),
    missingSecrets: missing,
    ready: missing.length === 0,
    createdAt: l.link.createdAt.toISOString(),
    updatedAt: l.link.updatedAt.toISOString(),
  };
}

export async function listAgentTools(ctx: ServiceContext, agentId: string): Promise<{ data: AgentToolLink[] }> {
  const agent = await ownedAgent(ctx, agentId, READ);
  return { data: (await repo.listLinks(ctx.db, ctx.accountId, agent.id)).map(toLink) };
}

/** Every link of one of the account's tools (the tool's page shows which agents use it). */
export async function linksOfTool(ctx: ServiceContext, toolId: string): Promise<AgentToolLink[]> {
  const tool = await ownedTool(ctx, toolId);
  return (await repo.linksOfTool(ctx.db, ctx.accountId, tool.id)).map((link) => toLink({ link, tool }));
}

/** The account's tools not linked to the agent yet (summaries: no code). */
export async function availableTools(
  ctx: ServiceContext,
  agentId: string,
  p: { page: number; limit: number },
): Promise<Page<AgentToolLink['tool']>> {
  const agent = await ownedAgent(ctx, agentId, READ);
  const { rows, total } = await repo.listTools(ctx.db, ctx.accountId, {
    ...p,
    sortBy: 'name',
    sortOrder: 'asc',
    notLinkedTo: agent.id,
  });
  return toPage(
    rows.map((t) => ({
      id: t.id,
      name: t.name,
      description: t.description,
      language: t.language,
      requiredSecrets: t.requiredSecrets,
    })),
    total,
    p,
  );
}

/**
 * The link's secrets after applying `changes` (a value sets, null removes; names the tool does not declare
 * are refused), sealed, with the names set.
 */
function sealSecrets(
  ctx: ServiceContext,
  tool: CustomToolRow,
  agentId: string,
  current: Record<string, string>,
  changes: Record<string, string | null>,
): { secretsEnc: string | null; secretNames: string[] } {
  const unknown = Object.keys(changes).filter((n) => !tool.requiredSecrets.includes(n));
  if (unknown.length) {
    throw new ValidationError(`Secrets the tool does not declare: ${unknown.join(', ')}`, [
      { field: 'body.secrets', message: `not declared by ${tool.name}: ${unknown.join(', ')}` },
    ]);
  }
  const next = { ...current };
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) delete next[name];
    else next[name] = value;
  }
  const names = Object.keys(next).sort();
  if (!names.length) return { secretsEnc: null, secretNames: [] };
  return {
    secretsEnc: ctx.deps.keyRing.encrypt(JSON.stringify(next), sealedFor(agentId, tool.id)),
    secretNames: names,
  };
}

export async function linkTool(
  ctx: ServiceContext,
  agentId: string,
  input: { toolId: string; secrets?: Record<string, string | null> | undefined },
): Promise<AgentToolLink> {
  const agent = await ownedAgent(ctx, agentId, MANAGE);
  const tool = await ownedTool(ctx, input.toolId);
  const sealed = sealSecrets(ctx, tool, agent.id, {}, input.secrets ?? {});
  const link = await repo.insertLink(ctx.db, {
    agentId: agent.id,
    toolId: tool.id,
    accountId: ctx.accountId,
    ...sealed,
  });
  agentConfigChanged(ctx.deps, ctx.accountId);
  if (!link) throw new ConflictError(`Tool ${tool.id} is already linked to agent ${agent.id}`);
  return toLink({ link, tool });
}

/** Sets (or with null, removes) secret values of the link; the others are kept. */
export async function updateToolSecrets(
  ctx: ServiceContext,
  agentId: string,
  toolId: string,
  secrets: Record<string, string | null>,
): Promise<AgentToolLink> {
  const agent = await ownedAgent(ctx, agentId, MANAGE);
  const updated = await ctx.db.transaction(async (tx) => {
    const found = await repo.lockLink(tx, ctx.accountId, agent.id, toolId);
    if (!found) throw new NotFoundError(`Tool ${toolId} is not linked to agent ${agent.id}`);
    const sealed = sealSecrets(ctx, found.tool, agent.id, openSecrets(ctx, found.link), secrets);
    const link = await repo.updateLinkSecrets(tx, ctx.accountId, agent.id, toolId, sealed);
    if (!link) throw new NotFoundError(`Tool ${toolId} is not linked to agent ${agent.id}`);
    return toLink({ link, tool: found.tool });
  });
  agentConfigChanged(ctx.deps, ctx.accountId);
  return updated;
}

export async function unlinkTool(ctx: ServiceContext, agentId: string, toolId: string): Promise<void> {
  const agent = await ownedAgent(ctx, agentId, MANAGE);
  const deleted = await repo.deleteLink(ctx.db, ctx.accountId, agent.id, toolId);
  agentConfigChanged(ctx.deps, ctx.accountId);
  if (!deleted) throw new NotFoundError(`Tool ${toolId} is not linked to agent ${agent.id}`);
}

/** How much of a run the model reads back (the rest of stdout is cut). */
const STDOUT_FOR_MODEL = 4000;

/**
 * The agent's linked tools as agent tools, for the chat runtime: those missing a declared secret are left
 * out. A call runs the code in the sandbox with the link's secrets, billed to the account.
 */
export async function linkedAgentTools(ctx: ServiceContext, agent: AgentRow): Promise<AgentTool[]> {
  requireScope(ctx, ...READ);
  // Read once per AUTH_CACHE_TTL_MS while unchanged (see agents/config-cache.ts): shared rows, never modified.
  const links = await cachedAgentConfig(ctx.deps, agent.accountId, `links:${agent.id}`, () =>
    repo.listLinks(ctx.db, agent.accountId, agent.id),
  );
  return links
    .filter((l) => missingOf(l.tool, l.link).length === 0)
    .map(({ link, tool }) => ({
      name: tool.name,
      description: tool.description || `Custom tool ${tool.name}`,
      parameters: tool.parameters,
      mode: 'write' as const,
      source: 'custom',
      async run(args, _signal, charged) {
        const run = await runTool(ctx, tool, args, openSecrets(ctx, link));
        charged?.(run.creditsCharged);
        if (run.error) throw new Error(`${run.error.name}: ${run.error.message}`);
        const stdout = run.stdout.length > STDOUT_FOR_MODEL ? `${run.stdout.slice(0, STDOUT_FOR_MODEL)}…` : run.stdout;
        return stdout ? { result: run.result ?? null, stdout } : (run.result ?? null);
      },
    }));
}

/** The custom tools linked to the agent: every agent has this group (no name to enable). */
export const linkedToolGroup: AgentToolGroup = { tools: (ctx, run) => linkedAgentTools(ctx, run.agent) };
