import type { AgentTool, AgentToolGroup } from '../../agent/tool-group.ts';
import { requireScope, type ServiceContext } from '../../context.ts';
import type { AgentRow, SkillRow } from '../../db/schema/index.ts';
import { ConflictError, isUniqueViolation, NotFoundError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import { argText } from '../../lib/text.ts';
import { ownedAgent } from '../agents/index.ts';
import { askForJson, type Billed } from '../custom-tools/index.ts';
import * as repo from './repo.ts';
import {
  type AgentSkillLink,
  type CreateSkill,
  GeneratedPrompt,
  type Skill,
  type SkillSummary,
  type UpdateSkill,
} from './schema.ts';

/**
 * Skills (SPEC §4 "Tools and skills"): reusable prompts an account writes once and links to agents. `agents-all`
 * writes them; an agent with the `skills` built-in group sees its linked skills as a short index in its system
 * prompt and loads one's full prompt with the `skill-load` tool when it needs it.
 */

const MANAGE = ['agents-all'] as const;
const READ_LINKS = ['agents-all', 'agents-use'] as const;

export function toSkill(row: SkillRow): Skill {
  return {
    id: row.id,
    accountId: row.accountId,
    name: row.name,
    description: row.description,
    prompt: row.prompt,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

const summary = (row: SkillRow): SkillSummary => ({ id: row.id, name: row.name, description: row.description });

async function ownedSkill(ctx: ServiceContext, skillId: string): Promise<SkillRow> {
  requireScope(ctx, ...MANAGE);
  const row = await repo.findSkill(ctx.db, ctx.accountId, skillId);
  if (!row) throw new NotFoundError(`Skill ${skillId} not found`);
  return row;
}

function nameTaken(err: unknown, name: string | undefined): never {
  if (isUniqueViolation(err)) throw new ConflictError(`A skill named "${name}" already exists`);
  throw err;
}

export async function createSkill(ctx: ServiceContext, input: CreateSkill): Promise<Skill> {
  requireScope(ctx, ...MANAGE);
  const row = await repo
    .insertSkill(ctx.db, { id: newId('skill'), accountId: ctx.accountId, ...input })
    .catch((err: unknown) => nameTaken(err, input.name));
  return toSkill(row);
}

export async function listSkills(
  ctx: ServiceContext,
  p: { page: number; limit: number; sortBy: repo.SkillSort; sortOrder: 'asc' | 'desc' },
): Promise<Page<Skill>> {
  requireScope(ctx, ...MANAGE);
  const { rows, total } = await repo.listSkills(ctx.db, ctx.accountId, p);
  return toPage(rows.map(toSkill), total, p);
}

export async function getSkill(ctx: ServiceContext, skillId: string): Promise<Skill> {
  return toSkill(await ownedSkill(ctx, skillId));
}

export async function updateSkill(ctx: ServiceContext, skillId: string, input: UpdateSkill): Promise<Skill> {
  const current = await ownedSkill(ctx, skillId);
  const row = await repo
    .updateSkill(ctx.db, ctx.accountId, current.id, input)
    .catch((err: unknown) => nameTaken(err, input.name));
  if (!row) throw new NotFoundError(`Skill ${skillId} not found`);
  return toSkill(row);
}

/** Deletes the skill; its links to agents go with it. */
export async function deleteSkill(ctx: ServiceContext, skillId: string): Promise<void> {
  const current = await ownedSkill(ctx, skillId);
  if (!(await repo.deleteSkill(ctx.db, ctx.accountId, current.id)))
    throw new NotFoundError(`Skill ${skillId} not found`);
}

const GENERATE_PROMPT = `You write "skills" for an AI agent: reusable instructions the agent loads when a task calls for them.
Given what the user wants, answer ONLY a JSON object {"name": string, "description": string, "prompt": string}:
- name: a short title (at most 60 characters);
- description: one line saying when to use the skill (the agent reads it in an index to decide whether to load it);
- prompt: the full instructions, written to the agent in the second person: the goal, the steps, the output format, and what to avoid.`;

/** A skill drafted by the default model from a description (billed to the caller); nothing is stored. */
export async function generateSkillPrompt(ctx: ServiceContext, description: string): Promise<Billed<GeneratedPrompt>> {
  requireScope(ctx, ...MANAGE);
  const { value: out, credits } = await askForJson(ctx, {
    system: GENERATE_PROMPT,
    user: description,
    shape: GeneratedPrompt,
    what: 'Skills: prompt generation',
    check: async (v) => (v.name.trim() && v.prompt.trim() ? undefined : 'The name and the prompt must not be empty.'),
  });
  return {
    value: { name: out.name.trim().slice(0, 100), description: out.description.slice(0, 1000), prompt: out.prompt },
    credits,
  };
}

// ---- Links --------------------------------------------------------------------------------------------

function toLink(agentId: string, l: repo.SkillLinkWithSkill): AgentSkillLink {
  return { agentId, skillId: l.skill.id, skill: summary(l.skill), createdAt: l.link.createdAt.toISOString() };
}

export async function listAgentSkills(ctx: ServiceContext, agentId: string): Promise<{ data: AgentSkillLink[] }> {
  const agent = await ownedAgent(ctx, agentId, READ_LINKS);
  return { data: (await repo.listLinks(ctx.db, ctx.accountId, agent.id)).map((l) => toLink(agent.id, l)) };
}

/** The ids of the agents a skill is linked to (the skill's page). */
export async function agentIdsOfSkill(ctx: ServiceContext, skillId: string): Promise<string[]> {
  const skill = await ownedSkill(ctx, skillId);
  return repo.agentIdsOfSkill(ctx.db, ctx.accountId, skill.id);
}

/** The account's skills not linked to the agent yet. */
export async function availableSkills(
  ctx: ServiceContext,
  agentId: string,
  p: { page: number; limit: number },
): Promise<Page<SkillSummary>> {
  const agent = await ownedAgent(ctx, agentId, READ_LINKS);
  const { rows, total } = await repo.listSkills(ctx.db, ctx.accountId, {
    ...p,
    sortBy: 'name',
    sortOrder: 'asc',
    notLinkedTo: agent.id,
  });
  return toPage(rows.map(summary), total, p);
}

export async function linkSkill(ctx: ServiceContext, agentId: string, skillId: string): Promise<AgentSkillLink> {
  const agent = await ownedAgent(ctx, agentId, MANAGE);
  const skill = await ownedSkill(ctx, skillId);
  const link = await repo.insertLink(ctx.db, { agentId: agent.id, skillId: skill.id, accountId: ctx.accountId });
  if (!link) throw new ConflictError(`Skill ${skillId} is already linked to agent ${agent.id}`);
  return toLink(agent.id, { link, skill });
}

export async function unlinkSkill(ctx: ServiceContext, agentId: string, skillId: string): Promise<void> {
  const agent = await ownedAgent(ctx, agentId, MANAGE);
  if (!(await repo.deleteLink(ctx.db, ctx.accountId, agent.id, skillId))) {
    throw new NotFoundError(`Skill ${skillId} is not linked to agent ${agent.id}`);
  }
}

// ---- The `skills` built-in group ---------------------------------------------------------------------

/** The most skills the index in the system prompt names (the rest still load by name). */
const INDEX_LIMIT = 50;

/**
 * The agent's linked skills as a short index for its system prompt (name and one line each), or '' when it
 * has none. Full prompts stay out of the prompt until `skill-load` fetches one.
 */
export async function skillIndexFor(ctx: ServiceContext, agent: AgentRow): Promise<string> {
  const links = await repo.listLinks(ctx.db, agent.accountId, agent.id);
  if (!links.length) return '';
  const lines = links
    .slice(0, INDEX_LIMIT)
    .map(({ skill }) => `- ${skill.name}${skill.description ? `: ${skill.description.replace(/\s+/g, ' ')}` : ''}`);
  return `Skills you can load with the skill-load tool when a request calls for one (load it before following it):\n${lines.join('\n')}`;
}

/** The `skills` group's tool: the full prompt of one of the agent's linked skills, by name or id. */
export function skillTools(ctx: ServiceContext, agent: Pick<AgentRow, 'id' | 'accountId'>): AgentTool[] {
  return [
    {
      name: 'skill-load',
      description: 'Load the full instructions of one of your skills (named in your skill index) before using it.',
      parameters: {
        type: 'object',
        properties: { name: { type: 'string', description: 'The skill name as the index gives it' } },
        required: ['name'],
        additionalProperties: false,
      },
      mode: 'read',
      source: 'skills',
      async run(args) {
        const wanted = argText(args.name).trim();
        const links = await repo.listLinks(ctx.db, agent.accountId, agent.id);
        const found =
          links.find((l) => l.skill.id === wanted || l.skill.name === wanted) ??
          links.find((l) => l.skill.name.toLowerCase() === wanted.toLowerCase());
        if (!found) {
          throw new NotFoundError(
            `No skill named "${wanted.slice(0, 100)}"; yours: ${links.map((l) => l.skill.name).join(', ') || 'none'}`,
          );
        }
        return { name: found.skill.name, instructions: found.skill.prompt };
      },
    },
  ];
}

/** The `skills` group: its tools load a skill, and the agent's instructions list the skills it has. */
export const skillToolGroup: AgentToolGroup = {
  name: 'skills',
  tools: (ctx, run) => skillTools(ctx, run.agent),
  instructions: (ctx, agent) => skillIndexFor(ctx, agent),
};
