import { z } from 'zod';
import { creditHeaders } from '../../http/credits.ts';
import type { App } from '../../http/types.ts';
import { listQuery, paginated } from '../../lib/pagination.ts';
import { AgentParams, ListQuery } from '../agents/index.ts';
import * as links from './links.service.ts';
import {
  AgentToolLink,
  AgentToolParams,
  BuiltInGroup,
  CreateTool,
  GenerateCode,
  GeneratedCode,
  LinkTool,
  TestTool,
  TOOL_CODE_MAX_CHARS,
  Tool,
  ToolParams,
  ToolRun,
  ToolSummary,
  UpdateTool,
  UpdateToolSecrets,
} from './schema.ts';
import * as service from './service.ts';

/** SPEC §4 "Tools and skills": custom tools and their links to agents. */
export async function toolRoutes(app: App): Promise<void> {
  const tags = ['Tools and skills'];
  const read = { scopes: ['agents-all' as const, 'agents-use' as const] };
  const write = { scopes: ['agents-all' as const] };
  const billed = { ...write, creditGuard: true };

  app.post(
    '/tools',
    {
      schema: {
        tags,
        summary: 'Create a custom tool',
        description: `\`parameters\` must be a JSON Schema with \`type: "object"\` (compiled by ajv); \`language\` is javascript, typescript or python; \`code\` at most ${TOOL_CODE_MAX_CHARS} characters; a name taken by the account (409) or by a built-in tool (422) is refused.`,
        body: CreateTool,
        response: { 201: Tool },
      },
      config: write,
    },
    async (req, reply) => reply.code(201).send(await service.createTool(req.ctx, req.body)),
  );
  app.get(
    '/tools',
    {
      schema: {
        tags,
        summary: "List the account's custom tools",
        querystring: listQuery(['createdAt', 'updatedAt', 'name']),
        response: { 200: paginated(Tool) },
      },
      config: write,
    },
    (req) => service.listTools(req.ctx, req.query),
  );
  app.get(
    '/tools/built-in',
    {
      schema: {
        tags,
        summary: 'The built-in tool groups with their tools and input schemas',
        description:
          "`available: false` marks a group this server does not serve yet. `provider-tools` lists the tools of the caller's active connections.",
        response: { 200: z.object({ data: z.array(BuiltInGroup) }) },
      },
      config: read,
    },
    (req) => service.listBuiltInGroups(req.ctx),
  );
  app.post(
    '/tools/generate-code',
    {
      schema: {
        tags,
        summary: 'Write tool code with the default model',
        description:
          'Answers `{code, parameters, requiredSecrets}`; returned only once the parameters compile as a JSON Schema and the code parses (JavaScript/TypeScript by esbuild, Python by compile() in the sandbox). Billed to the caller as an `llm` credit transaction (headers `X-Credits-Consumed`, `X-Credits-Remaining`); nothing is stored.',
        body: GenerateCode,
        response: { 200: GeneratedCode },
      },
      config: billed,
    },
    async (req, reply) => {
      const { value, credits } = await service.generateToolCode(req.ctx, req.body);
      return reply.headers(creditHeaders(credits)).send(value);
    },
  );
  app.get(
    '/tools/:toolId',
    { schema: { tags, summary: 'One custom tool', params: ToolParams, response: { 200: Tool } }, config: write },
    (req) => service.getTool(req.ctx, req.params.toolId),
  );
  app.put(
    '/tools/:toolId',
    {
      schema: {
        tags,
        summary: 'Update a custom tool (the fields given)',
        params: ToolParams,
        body: UpdateTool,
        response: { 200: Tool },
      },
      config: write,
    },
    (req) => service.updateTool(req.ctx, req.params.toolId, req.body),
  );
  app.delete(
    '/tools/:toolId',
    {
      schema: {
        tags,
        summary: 'Delete a custom tool (its agent links and their secrets go too)',
        params: ToolParams,
        response: { 204: z.undefined() },
      },
      config: write,
    },
    async (req, reply) => {
      await service.deleteTool(req.ctx, req.params.toolId);
      return reply.code(204).send();
    },
  );
  app.post(
    '/tools/:toolId/test',
    {
      schema: {
        tags,
        summary: 'Run the tool once in the sandbox',
        description:
          "`arguments` are checked against the tool's parameters (422); `secrets` are used for this run only (never stored) and must be declared by the tool. Answers the run: `stdout`, `stderr`, `result`, `error` ({name, message} or null), `durationMs`, `creditsCharged` (a `sandbox` credit transaction), with headers `X-Credits-Consumed` and `X-Credits-Remaining`. Secret values are cut out of the answer.",
        params: ToolParams,
        body: TestTool,
        response: { 200: ToolRun },
      },
      config: billed,
    },
    async (req, reply) => {
      const { creditsRemaining, ...run } = await service.testTool(req.ctx, req.params.toolId, req.body);
      return reply.headers(creditHeaders({ consumed: run.creditsCharged, remaining: creditsRemaining })).send(run);
    },
  );

  app.get(
    '/agents/:agentId/tools',
    {
      schema: {
        tags,
        summary: "The agent's linked tools",
        description:
          'Each link names its declared secrets and whether they are set (values are never returned); `missingSecrets` lists those without a value: such a tool is not offered to the model.',
        params: AgentParams,
        response: { 200: z.object({ data: z.array(AgentToolLink) }) },
      },
      config: read,
    },
    (req) => links.listAgentTools(req.ctx, req.params.agentId),
  );
  app.get(
    '/agents/:agentId/tools/available',
    {
      schema: {
        tags,
        summary: "The account's tools not linked to the agent yet",
        params: AgentParams,
        querystring: ListQuery,
        response: { 200: paginated(ToolSummary) },
      },
      config: read,
    },
    (req) => links.availableTools(req.ctx, req.params.agentId, req.query),
  );
  app.post(
    '/agents/:agentId/tools',
    {
      schema: {
        tags,
        summary: 'Link a tool to the agent (optionally with secret values)',
        params: AgentParams,
        body: LinkTool,
        response: { 201: AgentToolLink },
      },
      config: write,
    },
    async (req, reply) => reply.code(201).send(await links.linkTool(req.ctx, req.params.agentId, req.body)),
  );
  app.patch(
    '/agents/:agentId/tools/:toolId',
    {
      schema: {
        tags,
        summary: "Set the link's secret values",
        description:
          '`secrets` maps a declared secret name to its value (null removes it); the others are kept. Values are sealed with the key ring and never returned.',
        params: AgentToolParams,
        body: UpdateToolSecrets,
        response: { 200: AgentToolLink },
      },
      config: write,
    },
    (req) => links.updateToolSecrets(req.ctx, req.params.agentId, req.params.toolId, req.body.secrets),
  );
  app.delete(
    '/agents/:agentId/tools/:toolId',
    {
      schema: {
        tags,
        summary: 'Unlink a tool (its secrets for this agent go too)',
        params: AgentToolParams,
        response: { 204: z.undefined() },
      },
      config: write,
    },
    async (req, reply) => {
      await links.unlinkTool(req.ctx, req.params.agentId, req.params.toolId);
      return reply.code(204).send();
    },
  );
}
