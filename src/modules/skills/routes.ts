import { z } from 'zod';
import { creditHeaders } from '../../http/credits.ts';
import type { App } from '../../http/types.ts';
import { listQuery, paginated } from '../../lib/pagination.ts';
import { AgentParams, ListQuery } from '../agents/index.ts';
import {
  AgentSkillLink,
  AgentSkillParams,
  CreateSkill,
  GeneratedPrompt,
  GeneratePrompt,
  LinkSkill,
  Skill,
  SkillParams,
  SkillSummary,
  UpdateSkill,
} from './schema.ts';
import * as service from './service.ts';

/** SPEC §4 "Tools and skills": skills and their links to agents. */
export async function skillRoutes(app: App): Promise<void> {
  const tags = ['Tools and skills'];
  const read = { scopes: ['agents-all' as const, 'agents-use' as const] };
  const write = { scopes: ['agents-all' as const] };

  app.post(
    '/skills',
    {
      schema: {
        tags,
        summary: 'Create a skill',
        description: 'A name the account already uses is a 409.',
        body: CreateSkill,
        response: { 201: Skill },
      },
      config: write,
    },
    async (req, reply) => reply.code(201).send(await service.createSkill(req.ctx, req.body)),
  );
  app.get(
    '/skills',
    {
      schema: {
        tags,
        summary: "List the account's skills",
        querystring: listQuery(['createdAt', 'updatedAt', 'name']),
        response: { 200: paginated(Skill) },
      },
      config: write,
    },
    (req) => service.listSkills(req.ctx, req.query),
  );
  app.post(
    '/skills/generate-prompt',
    {
      schema: {
        tags,
        summary: 'Draft a skill with the default model',
        description:
          'Answers `{name, description, prompt}`; billed to the caller as an `llm` credit transaction (headers `X-Credits-Consumed`, `X-Credits-Remaining`); nothing is stored.',
        body: GeneratePrompt,
        response: { 200: GeneratedPrompt },
      },
      config: { ...write, creditGuard: true },
    },
    async (req, reply) => {
      const { value, credits } = await service.generateSkillPrompt(req.ctx, req.body.description);
      return reply.headers(creditHeaders(credits)).send(value);
    },
  );
  app.get(
    '/skills/:skillId',
    { schema: { tags, summary: 'One skill', params: SkillParams, response: { 200: Skill } }, config: write },
    (req) => service.getSkill(req.ctx, req.params.skillId),
  );
  app.put(
    '/skills/:skillId',
    {
      schema: {
        tags,
        summary: 'Update a skill (the fields given)',
        params: SkillParams,
        body: UpdateSkill,
        response: { 200: Skill },
      },
      config: write,
    },
    (req) => service.updateSkill(req.ctx, req.params.skillId, req.body),
  );
  app.delete(
    '/skills/:skillId',
    {
      schema: {
        tags,
        summary: 'Delete a skill (its agent links go too)',
        params: SkillParams,
        response: { 204: z.undefined() },
      },
      config: write,
    },
    async (req, reply) => {
      await service.deleteSkill(req.ctx, req.params.skillId);
      return reply.code(204).send();
    },
  );

  app.get(
    '/agents/:agentId/skills',
    {
      schema: {
        tags,
        summary: "The agent's linked skills",
        description:
          "With the `skills` built-in group enabled, the agent's system prompt carries an index of them (name and description) and its `skill-load` tool loads one's full prompt.",
        params: AgentParams,
        response: { 200: z.object({ data: z.array(AgentSkillLink) }) },
      },
      config: read,
    },
    (req) => service.listAgentSkills(req.ctx, req.params.agentId),
  );
  app.get(
    '/agents/:agentId/skills/available',
    {
      schema: {
        tags,
        summary: "The account's skills not linked to the agent yet",
        params: AgentParams,
        querystring: ListQuery,
        response: { 200: paginated(SkillSummary) },
      },
      config: read,
    },
    (req) => service.availableSkills(req.ctx, req.params.agentId, req.query),
  );
  app.post(
    '/agents/:agentId/skills',
    {
      schema: {
        tags,
        summary: 'Link a skill to the agent',
        params: AgentParams,
        body: LinkSkill,
        response: { 201: AgentSkillLink },
      },
      config: write,
    },
    async (req, reply) => reply.code(201).send(await service.linkSkill(req.ctx, req.params.agentId, req.body.skillId)),
  );
  app.delete(
    '/agents/:agentId/skills/:skillId',
    {
      schema: { tags, summary: 'Unlink a skill', params: AgentSkillParams, response: { 204: z.undefined() } },
      config: write,
    },
    async (req, reply) => {
      await service.unlinkSkill(req.ctx, req.params.agentId, req.params.skillId);
      return reply.code(204).send();
    },
  );
}
