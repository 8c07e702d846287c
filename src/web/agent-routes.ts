import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { OAuthServer } from '../access/oauth/server.ts';
import { toAppError } from '../http/error-handler.ts';
import { startSse } from '../http/sse.ts';
import type { App } from '../http/types.ts';
import { abortSignalOf } from '../lib/cancel.ts';
import {
  AppError,
  CreditsExhaustedError,
  ForbiddenError,
  ServiceUnavailableError,
  UnauthorizedError,
  ValidationError,
} from '../lib/errors.ts';
import { sseEvent } from '../lib/sse.ts';
import {
  type Agent,
  AVAILABLE_GROUPS,
  CreateAgent,
  chatWithAgent,
  createAgent,
  deleteConversation,
  getAgent,
  listAgents,
  listConversations,
  listMessages,
  ownedConversation,
  toConversation,
  UpdateAgent,
  updateAgent,
} from '../modules/agents/index.ts';
import { availableCredits } from '../modules/credits/index.ts';
import { clientGone, listModels } from '../modules/llm/index.ts';
import { AGENTS_PATH, agentPath, agentsPage, chatPage } from './agent-pages.ts';
import { type AgentSettingsDraft, agentSettingsCards } from './agent-settings-pages.ts';
import { AGENT_CHAT_SCRIPT, COPY_SCRIPT } from './assets.ts';
import { formIssues, send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { formOf, idParam, list, type PageBase, pageRouter, text } from './page-route.ts';

type SettingsState = { notice?: string; error?: string; draft?: AgentSettingsDraft };

/** The settings form's fields as UpdateAgent takes them; a blank number is "none" (a usage limit) or "keep". */
function updateOf(d: AgentSettingsDraft, current: Agent): Record<string, unknown> {
  const num = (s: string) => (s.trim() === '' ? undefined : Number(s));
  const usageLimits = Object.fromEntries(
    Object.entries({
      dailyMessagesPerUser: num(d.dailyMessagesPerUser),
      monthlyCreditsCap: num(d.monthlyCreditsCap),
      limitReachedMessage: d.limitReachedMessage.trim() || undefined,
    }).filter(([, v]) => v !== undefined),
  );
  return {
    name: d.name,
    description: d.description,
    // Sent only when changed: an agent whose model this server no longer serves can still save its other fields.
    ...(d.llm && d.llm !== current.llm ? { llm: d.llm } : {}),
    personality: d.personality,
    firstPrompt: d.firstPrompt,
    ...(num(d.temperature) !== undefined ? { temperature: num(d.temperature) } : {}),
    enabledBuiltInTools: d.tools,
    usageLimits,
  };
}

const AGENT_ID = /^agt_[A-Za-z0-9_-]{1,96}$/;
const CONVERSATION_ID = /^conv_[A-Za-z0-9_-]{1,96}$/;

const agentId = idParam(AGENT_ID, (id) => `Agent ${id.slice(0, 40)} not found`);
const AgentParams = z.object({ agentId });
const ConversationParams = z.object({
  agentId,
  conversationId: idParam(CONVERSATION_ID, () => 'No such conversation'),
});
/** `?c=<conversation>`: the conversation shown (another value shows none). */
const ChatQuery = z.object({ c: text });
const CreateForm = formOf({ name: text, personality: text, llm: text, tools: list });
const MessageForm = formOf({ message: text, conversationId: text });
const SettingsForm = formOf({
  name: text,
  description: text,
  llm: text,
  personality: text,
  firstPrompt: text,
  temperature: text,
  tools: list,
  dailyMessagesPerUser: text,
  monthlyCreditsCap: text,
  limitReachedMessage: text,
});

/** A conversation id the form gave, when it is one. */
const conversationOf = (given: string) => (CONVERSATION_ID.test(given) ? given : undefined);

/** The agents and chat pages (`/account/agents`), over the agents services. */
export async function agentPageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const pages = pageRouter(app, oauth);
  const { currentUser } = pages.helpers;
  const { config } = app.deps;
  const modelsOf = (ctx: PageBase['ctx']) => {
    try {
      return listModels(ctx).map((m) => m.id);
    } catch {
      return [];
    }
  };

  async function renderList(
    { reply, current, ctx, csrf }: PageBase,
    opts: { error?: string; draft?: { name: string; personality: string } } = {},
    status = 200,
  ) {
    const agents = await listAgents(ctx, { page: 1, limit: 100, sortBy: 'createdAt', sortOrder: 'asc' });
    return send(
      reply,
      agentsPage({
        user: current.user,
        csrf: csrf(),
        agents: agents.data,
        models: modelsOf(ctx),
        groups: [...AVAILABLE_GROUPS],
        ...opts,
      }),
      status,
    );
  }

  async function renderChat(
    { reply, current, ctx, csrf }: PageBase,
    agentId: string,
    conversationId: string | undefined,
    opts: { error?: string; draft?: string; settings?: SettingsState } = {},
    status = 200,
  ) {
    const { settings = {}, ...chatOpts } = opts;
    const agent = await getAgent(ctx, agentId);
    const conversations = await listConversations(ctx, agentId, { page: 1, limit: 50 });
    const currentConversation = conversationId ? await ownedConversation(ctx, agentId, conversationId) : undefined;
    const messages = currentConversation
      ? (await listMessages(ctx, agentId, currentConversation.id, { page: 1, limit: 100 })).data
      : [];
    return send(
      reply,
      chatPage({
        user: current.user,
        csrf: csrf(),
        agent,
        conversations: conversations.data,
        current: currentConversation ? toConversation(currentConversation) : undefined,
        messages,
        script: AGENT_CHAT_SCRIPT.path,
        settings: {
          body: agentSettingsCards(agent, csrf(), {
            models: modelsOf(ctx),
            baseUrl: config.baseUrl,
            ...settings,
          }),
          scripts: [COPY_SCRIPT.path],
        },
        ...chatOpts,
      }),
      status,
      { scripts: true },
    );
  }

  /** The agent (or conversation) of the URL is not the account's, or the form did not parse: the list says so. */
  const refused = (page: PageBase, err: AppError) =>
    err.statusCode >= 500 || err.statusCode === 422
      ? undefined
      : renderList(page, { error: err.message }, err.statusCode);
  const onAgent = { params: AgentParams, refused };

  pages.get(AGENTS_PATH, {}, (page) => renderList(page));

  pages.post(AGENTS_PATH, { form: CreateForm, refused }, async (page) => {
    const { form } = page;
    const draft = { name: form.name, personality: form.personality };
    const parsed = CreateAgent.safeParse({
      name: draft.name,
      personality: draft.personality,
      ...(form.llm ? { llm: form.llm } : {}),
      enabledBuiltInTools: form.tools,
    });
    if (!parsed.success) {
      return renderList(page, { error: parsed.error.issues.map((i) => i.message).join('; '), draft }, 422);
    }
    try {
      const agent = await createAgent(page.ctx, parsed.data);
      return page.reply.redirect(agentPath(agent.id), 303);
    } catch (err) {
      if (err instanceof AppError && err.statusCode < 500) {
        return renderList(page, { error: err.message, draft }, err.statusCode);
      }
      // A server with no model at all (no LLM upstream configured): the form cannot be accepted as it is, and it
      // says why, with the draft kept (the API answers 503 for the same).
      if (err instanceof ServiceUnavailableError) {
        return renderList(page, { error: err.message, draft }, 422);
      }
      throw err;
    }
  });

  pages.get(`${AGENTS_PATH}/:agentId`, { ...onAgent, query: ChatQuery }, (page) => {
    const { notice } = takeFlash(page.req, page.reply);
    const conversationId = conversationOf(page.query.c);
    return renderChat(page, page.params.agentId, conversationId, notice ? { settings: { notice } } : {});
  });

  pages.post(`${AGENTS_PATH}/:agentId/chat`, { ...onAgent, form: MessageForm }, async (page) => {
    const { agentId } = page.params;
    const message = page.form.message.trim();
    const conversationId = conversationOf(page.form.conversationId);
    if (!message) return renderChat(page, agentId, conversationId, { error: 'Write a message first.' }, 422);
    try {
      const outcome = await chatWithAgent(
        page.ctx,
        agentId,
        { messages: [{ role: 'user', content: message }], ...(conversationId ? { conversationId } : {}) },
        { signal: AbortSignal.timeout(180_000) },
      );
      return page.reply.redirect(agentPath(agentId, outcome.conversationId), 303);
    } catch (err) {
      if (err instanceof AppError && err.statusCode < 500 && err.statusCode !== 404) {
        return renderChat(page, agentId, conversationId, { error: err.message, draft: message }, err.statusCode);
      }
      throw err;
    }
  });

  /**
   * The agent page's settings form (agent-settings-pages.ts): saved through `updateAgent`, as `PUT
   * /agents/:id`, then back to the page's settings card; a refusal shows the form again with what was typed.
   * Signed out, sign-in comes back to the agent's page (this path answers POSTs only).
   */
  pages.post(
    `${AGENTS_PATH}/:agentId/settings`,
    { ...onAgent, form: SettingsForm, returnTo: (param) => agentPath(param('agentId')) },
    async (page) => {
      const { form } = page;
      const agent = await getAgent(page.ctx, page.params.agentId);
      const draft: AgentSettingsDraft = {
        name: form.name,
        description: form.description,
        llm: form.llm,
        personality: form.personality,
        firstPrompt: form.firstPrompt,
        temperature: form.temperature,
        tools: form.tools,
        dailyMessagesPerUser: form.dailyMessagesPerUser,
        monthlyCreditsCap: form.monthlyCreditsCap,
        limitReachedMessage: form.limitReachedMessage,
      };
      const refusedForm = (error: string, status: number) =>
        renderChat(page, agent.id, undefined, { settings: { error, draft } }, status);
      const parsed = UpdateAgent.safeParse(updateOf(draft, agent));
      if (!parsed.success) return refusedForm(formIssues(parsed.error), 422);
      try {
        await updateAgent(page.ctx, agent.id, parsed.data);
      } catch (err) {
        if (err instanceof AppError && err.statusCode < 500 && err.statusCode !== 404) {
          return refusedForm(err.message, err.statusCode);
        }
        throw err;
      }
      return redirectWithFlash(page.req, page.reply, `${agentPath(agent.id)}#settings`, { notice: 'Settings saved.' });
    },
  );

  /**
   * The chat page's script posts the message form here and reads the reply as it is written (Server-Sent
   * Events: `conversation`, `delta`, `tool.called`, `tool.result`, then `done` or `error`), from the same
   * `chatWithAgent` as the API. The browser's session and the form's CSRF token, as the form's own POST; the
   * agent chat's limits (RATE_LIMIT_LLM a window per account, as the API's agent chat; 402 at a zero balance).
   * Refusals before the stream are §7 JSON bodies the script shows.
   */
  pages.post(
    `${AGENTS_PATH}/:agentId/chat/stream`,
    {
      params: AgentParams,
      form: MessageForm,
      csrfFailed: () => {
        throw new ForbiddenError('The form was out of date: reload the page and try again.');
      },
      signedOut: () => {
        throw new UnauthorizedError('You are signed out: reload the page and sign in again.');
      },
      rateLimit: {
        max: config.rateLimits.llm,
        timeWindow: config.rateLimits.windowMs,
        keyGenerator: async (req: FastifyRequest) => {
          const user = await currentUser(req);
          return user ? `acct:${user.actor.accountId}` : `ip:${req.ip}`;
        },
      },
    },
    async ({ req, reply, ctx, params, form }) => {
      const { agentId } = params;
      const message = form.message.trim();
      const conversationId = conversationOf(form.conversationId);
      if (!message) throw new ValidationError('Write a message first.', [{ field: 'message', message: 'required' }]);
      if (((await availableCredits(ctx.deps, ctx.accountId)) ?? 0) <= 0) {
        throw new CreditsExhaustedError();
      }
      const signal = abortSignalOf(clientGone(reply));
      let raw: ReturnType<typeof startSse> | undefined;
      let url: string | undefined;
      const write = (event: string, data: unknown) => {
        if (raw && !raw.destroyed) raw.write(sseEvent(event, data));
      };
      try {
        const outcome = await chatWithAgent(
          ctx,
          agentId,
          { messages: [{ role: 'user', content: message }], ...(conversationId ? { conversationId } : {}) },
          {
            signal,
            onConversation: (id) => {
              url = agentPath(agentId, id);
              raw = startSse(reply);
              write('conversation', { conversationId: id, url });
            },
            onDelta: (text) => write('delta', { text }),
            onStep: ({ type, ...step }) => write(type, step),
          },
        );
        write('done', {
          conversationId: outcome.conversationId,
          url,
          limited: outcome.limited,
          creditsConsumed: outcome.credits.consumed,
          creditsRemaining: outcome.credits.remaining,
        });
        raw?.end();
      } catch (err) {
        if (!raw) throw err; // before the stream: an ordinary error answer
        const fault = toAppError(err);
        if (fault.statusCode >= 500) req.log.error({ err }, 'agent chat stream failed');
        write('error', { ...fault.toBody(), url });
        raw.end();
      }
    },
  );

  pages.post(
    `${AGENTS_PATH}/:agentId/conversations/:conversationId/delete`,
    { params: ConversationParams, refused },
    async ({ reply, ctx, params }) => {
      await deleteConversation(ctx, params.agentId, params.conversationId);
      return reply.redirect(agentPath(params.agentId), 303);
    },
  );
}
