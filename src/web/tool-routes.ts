import { z } from 'zod';
import type { OAuthServer } from '../access/oauth/server.ts';
import type { App } from '../http/types.ts';
import { AppError, NotFoundError } from '../lib/errors.ts';
import { JSON_DEPTH_MESSAGE, nestedDeeperThan } from '../lib/json.ts';
import { listAgents } from '../modules/agents/index.ts';
import {
  CreateTool,
  createTool,
  deleteTool,
  findTestRun,
  getTool,
  keepTestRun,
  linksOfTool,
  linkTool,
  listTools,
  testTool,
  UpdateTool,
  unlinkTool,
  updateTool,
  updateToolSecrets,
} from '../modules/custom-tools/index.ts';
import {
  agentIdsOfSkill,
  CreateSkill,
  createSkill,
  deleteSkill,
  getSkill,
  linkSkill,
  listSkills,
  UpdateSkill,
  unlinkSkill,
  updateSkill,
} from '../modules/skills/index.ts';
import { BUSY_SCRIPT } from './assets.ts';
import { formIssues, send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { FormError, formOf, idParam, type Page, type PageBase, pageRouter, text } from './page-route.ts';
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

const ToolParams = z.object({ toolId: idParam(TOOL_ID, (id) => `Tool ${id.slice(0, 40)} not found`) });
/** A link action's agent comes from the path (`/links/:agentId`) or the form; checked on the tool's page. */
const ToolLinkParams = ToolParams.extend({ agentId: z.string().optional() });
const SkillParams = z.object({ skillId: idParam(SKILL_ID, (id) => `Skill ${id.slice(0, 40)} not found`) });
const SkillLinkParams = SkillParams.extend({ agentId: z.string().optional() });
const ToolForm = formOf({
  name: text,
  description: text,
  language: text,
  parameters: text,
  requiredSecrets: text,
  timeoutMs: text,
  code: text,
});
type ToolForm = z.infer<typeof ToolForm>;
const TestForm = formOf({ arguments: text });
const LinkForm = formOf({ agentId: text });
const SkillForm = formOf({ name: text, description: text, prompt: text });
const RunQuery = z.object({ run: z.unknown().optional() });

/** The tool form as the API takes it: `parameters` parsed from JSON (else a message), secrets split. */
function toolInput(form: ToolForm): { draft: ToolDraft; input?: Record<string, unknown>; error?: string } {
  const draft: ToolDraft = {
    name: form.name.trim(),
    description: form.description,
    language: form.language,
    parameters: form.parameters,
    requiredSecrets: form.requiredSecrets,
    timeoutMs: form.timeoutMs.trim(),
    code: form.code,
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
function secretsOf(form: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(form).flatMap(([k, value]) =>
      k.startsWith('secret_') && value ? [[k.slice('secret_'.length), value]] : [],
    ),
  );
}

/** The account's agents for the link forms (the first 100, by name). */
async function agentsFor(ctx: Parameters<typeof listAgents>[0]) {
  return (await listAgents(ctx, { page: 1, limit: 100, sortBy: 'name', sortOrder: 'asc' })).data;
}

/** Faults a form shows (a refused value, a missing tool, no sandbox); anything else is a real 500. */
const shown = (err: unknown): err is AppError => err instanceof AppError && err.statusCode !== 500;

/** The account's custom tools and skills in the account pages (`/account/tools`, `/account/skills`). */
export async function toolPageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const pages = pageRouter(app, oauth);

  async function renderTools(
    { req, reply, current, ctx, csrf }: PageBase,
    opts: { error?: string; draft?: ToolDraft } = {},
    status = 200,
  ) {
    const tools = await listTools(ctx, { page: 1, limit: 100, sortBy: 'name', sortOrder: 'asc' });
    return send(
      reply,
      toolsPage({ user: current.user, csrf: csrf(), tools: tools.data, ...takeFlash(req, reply), ...opts }),
      status,
    );
  }

  async function renderTool(
    { req, reply, current, ctx, csrf }: PageBase,
    toolId: string,
    opts: { error?: string; testError?: string; draft?: ToolDraft; args?: string } = {},
    status = 200,
  ) {
    const [tool, agents, links] = await Promise.all([getTool(ctx, toolId), agentsFor(ctx), linksOfTool(ctx, toolId)]);
    const runKey = RunQuery.parse(req.query ?? {}).run;
    const run =
      typeof runKey === 'string' && RUN_KEY.test(runKey) ? await findTestRun(ctx, tool.id, runKey) : undefined;
    return send(
      reply,
      toolPage({
        user: current.user,
        csrf: csrf(),
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

  /** A tool that is not there (or not the account's), or a form that does not parse: the list says so. */
  const onTool = {
    params: ToolParams,
    refused: (page: PageBase, err: AppError) =>
      err instanceof NotFoundError || err instanceof FormError
        ? renderTools(page, { error: err.message }, err.statusCode)
        : undefined,
  };

  pages.get(TOOLS_PATH, {}, (page) => renderTools(page));

  pages.post(TOOLS_PATH, { form: ToolForm, refused: onTool.refused }, async (page) => {
    const { draft, input, error } = toolInput(page.form);
    const parsed = CreateTool.safeParse(input);
    if (error || !parsed.success) {
      const why = error ?? (parsed.success ? '' : formIssues(parsed.error));
      return renderTools(page, { error: `The tool was not created: ${why}`, draft }, 422);
    }
    try {
      const tool = await createTool(page.ctx, parsed.data);
      return redirectWithFlash(page.req, page.reply, toolPath(tool.id), { notice: NOTICES.created });
    } catch (err) {
      if (!shown(err)) throw err;
      return renderTools(page, { error: `The tool was not created: ${err.message}`, draft }, err.statusCode);
    }
  });

  pages.get(`${TOOLS_PATH}/:toolId`, onTool, (page) => renderTool(page, page.params.toolId));

  pages.post(`${TOOLS_PATH}/:toolId`, { ...onTool, form: ToolForm }, async (page) => {
    const { toolId } = page.params;
    const { draft, input, error } = toolInput(page.form);
    const parsed = UpdateTool.safeParse({ ...input, timeoutMs: input?.timeoutMs ?? null });
    if (error || !parsed.success) {
      const why = error ?? (parsed.success ? '' : formIssues(parsed.error));
      return renderTool(page, toolId, { error: `Not saved: ${why}`, draft }, 422);
    }
    try {
      await updateTool(page.ctx, toolId, parsed.data);
    } catch (err) {
      if (!shown(err) || err instanceof NotFoundError) throw err;
      return renderTool(page, toolId, { error: `Not saved: ${err.message}`, draft }, err.statusCode);
    }
    return redirectWithFlash(page.req, page.reply, toolPath(toolId), { notice: NOTICES.saved });
  });

  pages.post(`${TOOLS_PATH}/:toolId/test`, { ...onTool, form: TestForm }, async (page) => {
    const { toolId } = page.params;
    const args = page.form.arguments;
    let parsed: unknown;
    try {
      parsed = args.trim() ? JSON.parse(args) : {};
    } catch {
      parsed = undefined;
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return renderTool(page, toolId, { testError: 'Arguments must be a JSON object.', args }, 422);
    }
    if (nestedDeeperThan(parsed)) {
      return renderTool(page, toolId, { testError: `Arguments: ${JSON_DEPTH_MESSAGE}`, args }, 422);
    }
    const secrets = secretsOf(page.form);
    try {
      const run = await testTool(page.ctx, toolId, { arguments: parsed as Record<string, unknown>, secrets });
      const key = await keepTestRun(page.ctx, toolId, { run, args });
      return page.reply.redirect(`${toolPath(toolId)}?run=${key}#result`, 303);
    } catch (err) {
      if (!shown(err) || err instanceof NotFoundError) throw err;
      return renderTool(page, toolId, { testError: err.message, args }, err.statusCode);
    }
  });

  type LinkPage = Page<z.infer<typeof ToolLinkParams>, undefined, z.infer<typeof LinkForm>>;
  /** A link action: its faults (an unknown agent, an undeclared secret) shown on the tool's page. */
  const linkAction =
    (act: (page: LinkPage, toolId: string, agentId: string) => Promise<unknown>, noticeKey: keyof typeof NOTICES) =>
    async (page: LinkPage) => {
      const { toolId } = page.params;
      const agentId = page.params.agentId ?? page.form.agentId;
      try {
        if (!AGENT_ID.test(agentId)) throw new NotFoundError(`Agent ${agentId.slice(0, 40)} not found`);
        await act(page, toolId, agentId);
      } catch (err) {
        if (!shown(err)) throw err;
        return renderTool(page, toolId, { error: err.message }, err.statusCode);
      }
      return redirectWithFlash(page.req, page.reply, `${toolPath(toolId)}#agents-h`, { notice: NOTICES[noticeKey] });
    };
  const onLink = { ...onTool, params: ToolLinkParams, form: LinkForm };

  pages.post(
    `${TOOLS_PATH}/:toolId/links`,
    onLink,
    linkAction(
      (page, toolId, agentId) => linkTool(page.ctx, agentId, { toolId, secrets: secretsOf(page.form) }),
      'linked',
    ),
  );
  pages.post(
    `${TOOLS_PATH}/:toolId/links/:agentId`,
    onLink,
    linkAction(
      (page, toolId, agentId) => updateToolSecrets(page.ctx, agentId, toolId, secretsOf(page.form)),
      'secrets',
    ),
  );
  pages.post(
    `${TOOLS_PATH}/:toolId/links/:agentId/unlink`,
    onLink,
    linkAction((page, toolId, agentId) => unlinkTool(page.ctx, agentId, toolId), 'unlinked'),
  );

  pages.post(`${TOOLS_PATH}/:toolId/delete`, onTool, async ({ req, reply, ctx, params }) => {
    await deleteTool(ctx, params.toolId);
    return redirectWithFlash(req, reply, TOOLS_PATH, { notice: NOTICES.deleted });
  });

  // ---- Skills ---------------------------------------------------------------------------------------------

  async function renderSkills(
    { req, reply, current, ctx, csrf }: PageBase,
    opts: { error?: string; draft?: SkillDraft } = {},
    status = 200,
  ) {
    const skills = await listSkills(ctx, { page: 1, limit: 100, sortBy: 'name', sortOrder: 'asc' });
    return send(
      reply,
      skillsPage({ user: current.user, csrf: csrf(), skills: skills.data, ...takeFlash(req, reply), ...opts }),
      status,
    );
  }

  const onSkill = {
    params: SkillParams,
    refused: (page: PageBase, err: AppError) =>
      err instanceof NotFoundError || err instanceof FormError
        ? renderSkills(page, { error: err.message }, err.statusCode)
        : undefined,
  };

  const skillDraft = (form: z.infer<typeof SkillForm>): SkillDraft => ({
    name: form.name,
    description: form.description,
    prompt: form.prompt,
  });

  pages.get(SKILLS_PATH, {}, (page) => renderSkills(page));

  pages.post(SKILLS_PATH, { form: SkillForm, refused: onSkill.refused }, async (page) => {
    const draft = skillDraft(page.form);
    const parsed = CreateSkill.safeParse(draft);
    if (!parsed.success) {
      return renderSkills(page, { error: `The skill was not created: ${formIssues(parsed.error)}`, draft }, 422);
    }
    try {
      const skill = await createSkill(page.ctx, parsed.data);
      return redirectWithFlash(page.req, page.reply, skillPath(skill.id), { notice: NOTICES.created });
    } catch (err) {
      if (!shown(err)) throw err;
      return renderSkills(page, { error: `The skill was not created: ${err.message}`, draft }, err.statusCode);
    }
  });

  async function renderSkill(
    { req, reply, current, ctx, csrf }: PageBase,
    skillId: string,
    opts: { error?: string; draft?: SkillDraft } = {},
    status = 200,
  ) {
    const [skill, agents, linkedAgentIds] = await Promise.all([
      getSkill(ctx, skillId),
      agentsFor(ctx),
      agentIdsOfSkill(ctx, skillId),
    ]);
    return send(
      reply,
      skillPage({
        user: current.user,
        csrf: csrf(),
        skill,
        agents,
        linkedAgentIds,
        ...takeFlash(req, reply),
        ...opts,
      }),
      status,
    );
  }

  pages.get(`${SKILLS_PATH}/:skillId`, onSkill, (page) => renderSkill(page, page.params.skillId));

  type SkillLinkPage = Page<z.infer<typeof SkillLinkParams>, undefined, z.infer<typeof LinkForm>>;
  const skillLinkAction =
    (
      act: (ctx: SkillLinkPage['ctx'], skillId: string, agentId: string) => Promise<unknown>,
      noticeKey: keyof typeof NOTICES,
    ) =>
    async (page: SkillLinkPage) => {
      const { skillId } = page.params;
      const agentId = page.params.agentId ?? page.form.agentId;
      try {
        if (!AGENT_ID.test(agentId)) throw new NotFoundError(`Agent ${agentId.slice(0, 40)} not found`);
        await act(page.ctx, skillId, agentId);
      } catch (err) {
        if (!shown(err)) throw err;
        return renderSkill(page, skillId, { error: err.message }, err.statusCode);
      }
      return redirectWithFlash(page.req, page.reply, `${skillPath(skillId)}#agents-h`, { notice: NOTICES[noticeKey] });
    };
  const onSkillLink = { ...onSkill, params: SkillLinkParams, form: LinkForm };
  pages.post(
    `${SKILLS_PATH}/:skillId/links`,
    onSkillLink,
    skillLinkAction((ctx, skillId, agentId) => linkSkill(ctx, agentId, skillId), 'linked'),
  );
  pages.post(
    `${SKILLS_PATH}/:skillId/links/:agentId/unlink`,
    onSkillLink,
    skillLinkAction((ctx, skillId, agentId) => unlinkSkill(ctx, agentId, skillId), 'unlinked'),
  );

  pages.post(`${SKILLS_PATH}/:skillId`, { ...onSkill, form: SkillForm }, async (page) => {
    const { skillId } = page.params;
    const draft = skillDraft(page.form);
    const parsed = UpdateSkill.safeParse(draft);
    const refuse = (why: string, status: number) =>
      renderSkill(page, skillId, { draft, error: `Not saved: ${why}` }, status);
    if (!parsed.success) return refuse(formIssues(parsed.error), 422);
    try {
      await updateSkill(page.ctx, skillId, parsed.data);
    } catch (err) {
      if (!shown(err) || err instanceof NotFoundError) throw err;
      return refuse(err.message, err.statusCode);
    }
    return redirectWithFlash(page.req, page.reply, skillPath(skillId), { notice: NOTICES.saved });
  });

  pages.post(`${SKILLS_PATH}/:skillId/delete`, onSkill, async ({ req, reply, ctx, params }) => {
    await deleteSkill(ctx, params.skillId);
    return redirectWithFlash(req, reply, SKILLS_PATH, { notice: NOTICES.deleted });
  });
}
