import type { FastifyReply, FastifyRequest } from 'fastify';
import { serviceContextOf } from '../auth/guard.ts';
import type { OAuthServer } from '../auth/oauth/server.ts';
import type { App } from '../http/types.ts';
import { AppError, NotFoundError } from '../lib/errors.ts';
import { JSON_DEPTH_MESSAGE, nestedDeeperThan } from '../lib/json.ts';
import { listAgents } from '../modules/agents/service.ts';
import { CreateSkill, UpdateSkill } from '../modules/skills/schema.ts';
import {
  agentIdsOfSkill,
  createSkill,
  deleteSkill,
  getSkill,
  linkSkill,
  listSkills,
  unlinkSkill,
  updateSkill,
} from '../modules/skills/service.ts';
import { linksOfTool, linkTool, unlinkTool, updateToolSecrets } from '../modules/tools/links.service.ts';
import { CreateTool, UpdateTool } from '../modules/tools/schema.ts';
import { createTool, deleteTool, getTool, listTools, testTool, updateTool } from '../modules/tools/service.ts';
import { findTestRun, keepTestRun } from '../modules/tools/test-runs.service.ts';
import { BUSY_SCRIPT } from './assets.ts';
import { type Form, formIssues, one, pageHelpers, type SignedIn, send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import {
  SKILLS_PATH,
  type SkillDraft,
  skillPage,
  skillPath,
  skillsPage,
  TOOLS_PATH,
  type ToolDraft,
  toolPage,
  toolPath,
  toolsPage,
} from './tool-pages.ts';

const TOOL_ID = /^tool_[A-Za-z0-9_-]{1,96}$/;
const SKILL_ID = /^skl_[A-Za-z0-9_-]{1,96}$/;
const AGENT_ID = /^agt_[A-Za-z0-9_-]{1,96}$/;
const RUN_KEY = /^[A-Za-z0-9_-]{22}$/;
/** What the page says after an action (post-redirect-get: the text travels in the flash cookie). */
const NOTICES = {
  created: 'Created.',
  saved: 'Saved.',
  deleted: 'Deleted.',
  linked: 'Linked to the agent.',
  secrets: 'Secrets saved.',
  unlinked: 'Unlinked from the agent.',
} as const;

/** The tool form as the API takes it: `parameters` parsed from JSON (else a message), secrets split. */
function toolInput(form: Form): { draft: ToolDraft; input?: Record<string, unknown>; error?: string } {
  const draft: ToolDraft = {
    name: one(form, 'name').trim(),
    description: one(form, 'description'),
    language: one(form, 'language'),
    parameters: one(form, 'parameters'),
    requiredSecrets: one(form, 'requiredSecrets'),
    timeoutMs: one(form, 'timeoutMs').trim(),
    code: one(form, 'code'),
  };
  let parameters: unknown;
  try {
    parameters = draft.parameters.trim() ? JSON.parse(draft.parameters) : { type: 'object', properties: {} };
  } catch {
    return { draft, error: 'Parameters must be JSON (a JSON Schema object).' };
  }
  // A form field, so past the JSON bodies' check: the schema compiler would overflow the stack on it.
  if (nestedDeeperThan(parameters)) return { draft, error: `Parameters: ${JSON_DEPTH_MESSAGE}` };
  const input: Record<string, unknown> = {
    name: draft.name,
    description: draft.description,
    language: draft.language,
    parameters,
    requiredSecrets: draft.requiredSecrets.split(/[\s,]+/).filter(Boolean),
    code: draft.code,
  };
  if (draft.timeoutMs) input.timeoutMs = Number(draft.timeoutMs);
  return { draft, input };
}

/** The form's `secret_<NAME>` fields that hold a value (a blank field changes nothing). */
function secretsOf(form: Form): Record<string, string> {
  return Object.fromEntries(
    Object.entries(form).flatMap(([k, v]) => {
      const value = Array.isArray(v) ? v[0] : v;
      return k.startsWith('secret_') && value ? [[k.slice('secret_'.length), value]] : [];
    }),
  ) as Record<string, string>;
}

/** The account's agents for the link forms (the first 100, by name). */
async function agentsFor(ctx: Parameters<typeof listAgents>[0]) {
  return (await listAgents(ctx, { page: 1, limit: 100, sortBy: 'name', sortOrder: 'asc' })).data;
}

/** The account's custom tools and skills in the account pages (`/account/tools`, `/account/skills`). */
export async function toolPageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const { csrf, csrfOk, signedIn, csrfFailed } = pageHelpers(app, oauth);
  const page = { schema: { hide: true }, config: { auth: 'public' as const } };

  /** Faults a form shows (a refused value, a missing tool, no sandbox); anything else is a real 500. */
  const shown = (err: unknown): err is AppError => err instanceof AppError && err.statusCode !== 500;

  async function renderTools(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    opts: { error?: string; draft?: ToolDraft } = {},
    status = 200,
  ) {
    const ctx = serviceContextOf(req, current.actor);
    const tools = await listTools(ctx, { page: 1, limit: 100, sortBy: 'name', sortOrder: 'asc' });
    return send(
      reply,
      toolsPage({
        user: current.user,
        csrf: csrf(req, reply),
        tools: tools.data,
        ...takeFlash(req, reply),
        ...opts,
      }),
      status,
    );
  }

  async function renderTool(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    toolId: string,
    opts: { error?: string; testError?: string; draft?: ToolDraft; args?: string } = {},
    status = 200,
  ) {
    const ctx = serviceContextOf(req, current.actor);
    const [tool, agents, links] = await Promise.all([getTool(ctx, toolId), agentsFor(ctx), linksOfTool(ctx, toolId)]);
    const runKey = (req.query as Record<string, unknown>).run;
    const run =
      typeof runKey === 'string' && RUN_KEY.test(runKey) ? await findTestRun(ctx, tool.id, runKey) : undefined;
    return send(
      reply,
      toolPage({
        user: current.user,
        csrf: csrf(req, reply),
        tool,
        ...takeFlash(req, reply),
        ...opts,
        args: opts.args ?? run?.args ?? '{}',
        run: run?.run,
        runGone: typeof runKey === 'string' && !run,
        agents,
        links,
        busyScript: BUSY_SCRIPT.path,
      }),
      status,
      { scripts: true },
    );
  }

  /** The tool of the URL, or the list with a 404. */
  async function withTool(
    req: FastifyRequest,
    reply: FastifyReply,
    then: (current: SignedIn, toolId: string) => Promise<FastifyReply>,
  ): Promise<FastifyReply> {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const { toolId } = req.params as { toolId: string };
    try {
      if (!TOOL_ID.test(toolId)) throw new NotFoundError(`Tool ${toolId.slice(0, 40)} not found`);
      return await then(current, toolId);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      return renderTools(req, reply, current, { error: err.message }, 404);
    }
  }

  app.get(TOOLS_PATH, page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    return renderTools(req, reply, current);
  });

  app.post(TOOLS_PATH, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await signedIn(req, reply, TOOLS_PATH);
    if (!current) return reply;
    const { draft, input, error } = toolInput(form);
    const parsed = CreateTool.safeParse(input);
    if (error || !parsed.success) {
      const why = error ?? (parsed.success ? '' : formIssues(parsed.error));
      return renderTools(req, reply, current, { error: `The tool was not created: ${why}`, draft }, 422);
    }
    try {
      const tool = await createTool(serviceContextOf(req, current.actor), parsed.data);
      return redirectWithFlash(req, reply, toolPath(tool.id), { notice: NOTICES.created });
    } catch (err) {
      if (!shown(err)) throw err;
      return renderTools(
        req,
        reply,
        current,
        { error: `The tool was not created: ${err.message}`, draft },
        err.statusCode,
      );
    }
  });

  app.get(`${TOOLS_PATH}/:toolId`, page, (req, reply) =>
    withTool(req, reply, (current, toolId) => renderTool(req, reply, current, toolId)),
  );

  app.post(`${TOOLS_PATH}/:toolId`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withTool(req, reply, async (current, toolId) => {
      const { draft, input, error } = toolInput(form);
      const parsed = UpdateTool.safeParse({ ...input, timeoutMs: input?.timeoutMs ?? null });
      if (error || !parsed.success) {
        const why = error ?? (parsed.success ? '' : formIssues(parsed.error));
        return renderTool(req, reply, current, toolId, { error: `Not saved: ${why}`, draft }, 422);
      }
      try {
        await updateTool(serviceContextOf(req, current.actor), toolId, parsed.data);
      } catch (err) {
        if (!shown(err) || err instanceof NotFoundError) throw err;
        return renderTool(req, reply, current, toolId, { error: `Not saved: ${err.message}`, draft }, err.statusCode);
      }
      return redirectWithFlash(req, reply, toolPath(toolId), { notice: NOTICES.saved });
    });
  });

  app.post(`${TOOLS_PATH}/:toolId/test`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withTool(req, reply, async (current, toolId) => {
      const args = one(form, 'arguments');
      let parsed: unknown;
      try {
        parsed = args.trim() ? JSON.parse(args) : {};
      } catch {
        parsed = undefined;
      }
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
        return renderTool(req, reply, current, toolId, { testError: 'Arguments must be a JSON object.', args }, 422);
      }
      if (nestedDeeperThan(parsed)) {
        return renderTool(req, reply, current, toolId, { testError: `Arguments: ${JSON_DEPTH_MESSAGE}`, args }, 422);
      }
      const secrets = secretsOf(form);
      try {
        const ctx = serviceContextOf(req, current.actor);
        const run = await testTool(ctx, toolId, { arguments: parsed as Record<string, unknown>, secrets });
        const key = await keepTestRun(ctx, toolId, { run, args });
        return reply.redirect(`${toolPath(toolId)}?run=${key}#result`, 303);
      } catch (err) {
        if (!shown(err) || err instanceof NotFoundError) throw err;
        return renderTool(req, reply, current, toolId, { testError: err.message, args }, err.statusCode);
      }
    });
  });

  /** A link action: its faults (an unknown agent, an undeclared secret) shown on the tool's page. */
  const linkAction = (
    req: FastifyRequest,
    reply: FastifyReply,
    act: (ctx: ReturnType<typeof serviceContextOf>, toolId: string, agentId: string) => Promise<unknown>,
    noticeKey: keyof typeof NOTICES,
  ) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withTool(req, reply, async (current, toolId) => {
      const agentId = (req.params as { agentId?: string }).agentId ?? one(form, 'agentId');
      try {
        if (!AGENT_ID.test(agentId)) throw new NotFoundError(`Agent ${agentId.slice(0, 40)} not found`);
        await act(serviceContextOf(req, current.actor), toolId, agentId);
      } catch (err) {
        if (!shown(err)) throw err;
        return renderTool(req, reply, current, toolId, { error: err.message }, err.statusCode);
      }
      return redirectWithFlash(req, reply, `${toolPath(toolId)}#agents-h`, { notice: NOTICES[noticeKey] });
    });
  };

  app.post(`${TOOLS_PATH}/:toolId/links`, page, (req, reply) =>
    linkAction(
      req,
      reply,
      (ctx, toolId, agentId) => linkTool(ctx, agentId, { toolId, secrets: secretsOf((req.body ?? {}) as Form) }),
      'linked',
    ),
  );
  app.post(`${TOOLS_PATH}/:toolId/links/:agentId`, page, (req, reply) =>
    linkAction(
      req,
      reply,
      (ctx, toolId, agentId) => updateToolSecrets(ctx, agentId, toolId, secretsOf((req.body ?? {}) as Form)),
      'secrets',
    ),
  );
  app.post(`${TOOLS_PATH}/:toolId/links/:agentId/unlink`, page, (req, reply) =>
    linkAction(req, reply, (ctx, toolId, agentId) => unlinkTool(ctx, agentId, toolId), 'unlinked'),
  );

  app.post(`${TOOLS_PATH}/:toolId/delete`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withTool(req, reply, async (current, toolId) => {
      await deleteTool(serviceContextOf(req, current.actor), toolId);
      return redirectWithFlash(req, reply, TOOLS_PATH, { notice: NOTICES.deleted });
    });
  });

  // ---- Skills ---------------------------------------------------------------------------------------------

  async function renderSkills(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    opts: { error?: string; draft?: SkillDraft } = {},
    status = 200,
  ) {
    const ctx = serviceContextOf(req, current.actor);
    const skills = await listSkills(ctx, { page: 1, limit: 100, sortBy: 'name', sortOrder: 'asc' });
    return send(
      reply,
      skillsPage({
        user: current.user,
        csrf: csrf(req, reply),
        skills: skills.data,
        ...takeFlash(req, reply),
        ...opts,
      }),
      status,
    );
  }

  async function withSkill(
    req: FastifyRequest,
    reply: FastifyReply,
    then: (current: SignedIn, skillId: string) => Promise<FastifyReply>,
  ): Promise<FastifyReply> {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const { skillId } = req.params as { skillId: string };
    try {
      if (!SKILL_ID.test(skillId)) throw new NotFoundError(`Skill ${skillId.slice(0, 40)} not found`);
      return await then(current, skillId);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      return renderSkills(req, reply, current, { error: err.message }, 404);
    }
  }

  const skillDraft = (form: Form): SkillDraft => ({
    name: one(form, 'name'),
    description: one(form, 'description'),
    prompt: one(form, 'prompt'),
  });

  app.get(SKILLS_PATH, page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    return renderSkills(req, reply, current);
  });

  app.post(SKILLS_PATH, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await signedIn(req, reply, SKILLS_PATH);
    if (!current) return reply;
    const draft = skillDraft(form);
    const parsed = CreateSkill.safeParse(draft);
    if (!parsed.success) {
      return renderSkills(
        req,
        reply,
        current,
        { error: `The skill was not created: ${formIssues(parsed.error)}`, draft },
        422,
      );
    }
    try {
      const skill = await createSkill(serviceContextOf(req, current.actor), parsed.data);
      return redirectWithFlash(req, reply, skillPath(skill.id), { notice: NOTICES.created });
    } catch (err) {
      if (!shown(err)) throw err;
      return renderSkills(
        req,
        reply,
        current,
        { error: `The skill was not created: ${err.message}`, draft },
        err.statusCode,
      );
    }
  });

  async function renderSkill(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    skillId: string,
    opts: { error?: string; draft?: SkillDraft } = {},
    status = 200,
  ) {
    const ctx = serviceContextOf(req, current.actor);
    const [skill, agents, linkedAgentIds] = await Promise.all([
      getSkill(ctx, skillId),
      agentsFor(ctx),
      agentIdsOfSkill(ctx, skillId),
    ]);
    return send(
      reply,
      skillPage({
        user: current.user,
        csrf: csrf(req, reply),
        skill,
        agents,
        linkedAgentIds,
        ...takeFlash(req, reply),
        ...opts,
      }),
      status,
    );
  }

  app.get(`${SKILLS_PATH}/:skillId`, page, (req, reply) =>
    withSkill(req, reply, (current, skillId) => renderSkill(req, reply, current, skillId)),
  );

  const skillLinkAction = (
    req: FastifyRequest,
    reply: FastifyReply,
    act: (ctx: ReturnType<typeof serviceContextOf>, skillId: string, agentId: string) => Promise<unknown>,
    noticeKey: keyof typeof NOTICES,
  ) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withSkill(req, reply, async (current, skillId) => {
      const agentId = (req.params as { agentId?: string }).agentId ?? one(form, 'agentId');
      try {
        if (!AGENT_ID.test(agentId)) throw new NotFoundError(`Agent ${agentId.slice(0, 40)} not found`);
        await act(serviceContextOf(req, current.actor), skillId, agentId);
      } catch (err) {
        if (!shown(err)) throw err;
        return renderSkill(req, reply, current, skillId, { error: err.message }, err.statusCode);
      }
      return redirectWithFlash(req, reply, `${skillPath(skillId)}#agents-h`, { notice: NOTICES[noticeKey] });
    });
  };
  app.post(`${SKILLS_PATH}/:skillId/links`, page, (req, reply) =>
    skillLinkAction(req, reply, (ctx, skillId, agentId) => linkSkill(ctx, agentId, skillId), 'linked'),
  );
  app.post(`${SKILLS_PATH}/:skillId/links/:agentId/unlink`, page, (req, reply) =>
    skillLinkAction(req, reply, (ctx, skillId, agentId) => unlinkSkill(ctx, agentId, skillId), 'unlinked'),
  );

  app.post(`${SKILLS_PATH}/:skillId`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withSkill(req, reply, async (current, skillId) => {
      const ctx = serviceContextOf(req, current.actor);
      const draft = skillDraft(form);
      const parsed = UpdateSkill.safeParse(draft);
      const refuse = (why: string, status: number) =>
        renderSkill(req, reply, current, skillId, { draft, error: `Not saved: ${why}` }, status);
      if (!parsed.success) return refuse(formIssues(parsed.error), 422);
      try {
        await updateSkill(ctx, skillId, parsed.data);
      } catch (err) {
        if (!shown(err) || err instanceof NotFoundError) throw err;
        return refuse(err.message, err.statusCode);
      }
      return redirectWithFlash(req, reply, skillPath(skillId), { notice: NOTICES.saved });
    });
  });

  app.post(`${SKILLS_PATH}/:skillId/delete`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withSkill(req, reply, async (current, skillId) => {
      await deleteSkill(serviceContextOf(req, current.actor), skillId);
      return redirectWithFlash(req, reply, SKILLS_PATH, { notice: NOTICES.deleted });
    });
  });
}
