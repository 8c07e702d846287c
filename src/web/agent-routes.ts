import type { FastifyReply, FastifyRequest } from 'fastify';
import { serviceContextOf } from '../auth/guard.ts';
import type { OAuthServer } from '../auth/oauth/server.ts';
import { toAppError } from '../http/error-handler.ts';
import { startSse } from '../http/sse.ts';
import type { App } from '../http/types.ts';
import { abortSignalOf } from '../lib/cancel.ts';
import {
  AppError,
  CreditsExhaustedError,
  ForbiddenError,
  NotFoundError,
  ServiceUnavailableError,
  UnauthorizedError,
  ValidationError,
} from '../lib/errors.ts';
import { sseEvent } from '../lib/sse.ts';
import { chatWithAgent } from '../modules/agents/chat.service.ts';
import {
  deleteConversation,
  listConversations,
  listMessages,
  ownedConversation,
  toConversation,
} from '../modules/agents/conversations.service.ts';
import { type Agent, AVAILABLE_GROUPS, CreateAgent, UpdateAgent } from '../modules/agents/schema.ts';
import { createAgent, getAgent, listAgents, updateAgent } from '../modules/agents/service.ts';
import { availableCredits } from '../modules/credits/service.ts';
import { clientGone } from '../modules/llm/routes.ts';
import { listModels } from '../modules/llm/service.ts';
import { AGENT_CHAT_JS, AGENT_CHAT_JS_PATH } from './agent-chat-script.ts';
import { AGENTS_PATH, agentPath, agentsPage, chatPage } from './agent-pages.ts';
import { type AgentSettingsDraft, agentSettingsCards } from './agent-settings-pages.ts';
import { COPY_SCRIPT } from './assets.ts';
import { type Form, formIssues, many, one, pageHelpers, type SignedIn, send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';

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

/** The agents and chat pages (`/account/agents`), over the agents services. */
export async function agentPageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const { csrf, csrfOk, signedIn, csrfFailed, currentUser } = pageHelpers(app, oauth);
  const { config } = app.deps;
  const page = { schema: { hide: true }, config: { auth: 'public' as const } };
  const modelsOf = (req: FastifyRequest, current: SignedIn) => {
    try {
      return listModels(serviceContextOf(req, current.actor)).map((m) => m.id);
    } catch {
      return [];
    }
  };

  async function renderList(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    opts: { error?: string; draft?: { name: string; personality: string } } = {},
    status = 200,
  ) {
    const ctx = serviceContextOf(req, current.actor);
    const agents = await listAgents(ctx, { page: 1, limit: 100, sortBy: 'createdAt', sortOrder: 'asc' });
    return send(
      reply,
      agentsPage({
        user: current.user,
        csrf: csrf(req, reply),
        agents: agents.data,
        models: modelsOf(req, current),
        groups: [...AVAILABLE_GROUPS],
        ...opts,
      }),
      status,
    );
  }

  async function renderChat(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    agentId: string,
    conversationId: string | undefined,
    opts: { error?: string; draft?: string; settings?: SettingsState } = {},
    status = 200,
  ) {
    const { settings = {}, ...chatOpts } = opts;
    const ctx = serviceContextOf(req, current.actor);
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
        csrf: csrf(req, reply),
        agent,
        conversations: conversations.data,
        current: currentConversation ? toConversation(currentConversation) : undefined,
        messages,
        script: AGENT_CHAT_JS_PATH,
        settings: {
          body: agentSettingsCards(agent, csrf(req, reply), {
            models: modelsOf(req, current),
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

  /** The agent (and conversation) of the URL, or the list page with a 404. */
  async function withAgent(
    req: FastifyRequest,
    reply: FastifyReply,
    then: (current: SignedIn, agentId: string) => Promise<FastifyReply>,
  ): Promise<FastifyReply> {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const { agentId } = req.params as { agentId: string };
    try {
      if (!AGENT_ID.test(agentId)) throw new NotFoundError(`Agent ${agentId.slice(0, 40)} not found`);
      return await then(current, agentId);
    } catch (err) {
      if (!(err instanceof AppError) || err.statusCode >= 500 || err.statusCode === 422) throw err;
      return renderList(req, reply, current, { error: err.message }, err.statusCode);
    }
  }

  app.get(AGENTS_PATH, page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    return renderList(req, reply, current);
  });

  app.post(AGENTS_PATH, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await signedIn(req, reply, AGENTS_PATH);
    if (!current) return reply;
    const draft = { name: one(form, 'name'), personality: one(form, 'personality') };
    const parsed = CreateAgent.safeParse({
      name: draft.name,
      personality: draft.personality,
      ...(one(form, 'llm') ? { llm: one(form, 'llm') } : {}),
      enabledBuiltInTools: many(form, 'tools'),
    });
    if (!parsed.success) {
      return renderList(
        req,
        reply,
        current,
        { error: parsed.error.issues.map((i) => i.message).join('; '), draft },
        422,
      );
    }
    try {
      const agent = await createAgent(serviceContextOf(req, current.actor), parsed.data);
      return reply.redirect(agentPath(agent.id), 303);
    } catch (err) {
      if (err instanceof AppError && err.statusCode < 500) {
        return renderList(req, reply, current, { error: err.message, draft }, err.statusCode);
      }
      // A server with no model at all (no LLM upstream configured): the form cannot be accepted as it is, and it
      // says why, with the draft kept (the API answers 503 for the same).
      if (err instanceof ServiceUnavailableError) {
        return renderList(req, reply, current, { error: err.message, draft }, 422);
      }
      throw err;
    }
  });

  app.get(`${AGENTS_PATH}/:agentId`, page, (req, reply) =>
    withAgent(req, reply, (current, agentId) => {
      const c = (req.query as Record<string, unknown>).c;
      const conversationId = typeof c === 'string' && CONVERSATION_ID.test(c) ? c : undefined;
      const { notice } = takeFlash(req, reply);
      return renderChat(req, reply, current, agentId, conversationId, notice ? { settings: { notice } } : {});
    }),
  );

  app.post(`${AGENTS_PATH}/:agentId/chat`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withAgent(req, reply, async (current, agentId) => {
      const message = one(form, 'message').trim();
      const given = one(form, 'conversationId');
      const conversationId = CONVERSATION_ID.test(given) ? given : undefined;
      if (!message)
        return renderChat(req, reply, current, agentId, conversationId, { error: 'Write a message first.' }, 422);
      try {
        const outcome = await chatWithAgent(
          serviceContextOf(req, current.actor),
          agentId,
          { messages: [{ role: 'user', content: message }], ...(conversationId ? { conversationId } : {}) },
          { signal: AbortSignal.timeout(180_000) },
        );
        return reply.redirect(agentPath(agentId, outcome.conversationId), 303);
      } catch (err) {
        if (err instanceof AppError && err.statusCode < 500 && err.statusCode !== 404) {
          return renderChat(
            req,
            reply,
            current,
            agentId,
            conversationId,
            { error: err.message, draft: message },
            err.statusCode,
          );
        }
        throw err;
      }
    });
  });

  /**
   * The agent page's settings form (agent-settings-pages.ts): saved through `updateAgent`, as `PUT
   * /agents/:id`, then back to the page's settings card; a refusal shows the form again with what was typed.
   */
  app.post(`${AGENTS_PATH}/:agentId/settings`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    // Signed out: sign-in comes back to the agent's page (this path answers POSTs only).
    if (!(await currentUser(req))) {
      await signedIn(req, reply, agentPath((req.params as { agentId: string }).agentId));
      return reply;
    }
    return withAgent(req, reply, async (current, agentId) => {
      const ctx = serviceContextOf(req, current.actor);
      const agent = await getAgent(ctx, agentId);
      const draft: AgentSettingsDraft = {
        name: one(form, 'name'),
        description: one(form, 'description'),
        llm: one(form, 'llm'),
        personality: one(form, 'personality'),
        firstPrompt: one(form, 'firstPrompt'),
        temperature: one(form, 'temperature'),
        tools: many(form, 'tools'),
        dailyMessagesPerUser: one(form, 'dailyMessagesPerUser'),
        monthlyCreditsCap: one(form, 'monthlyCreditsCap'),
        limitReachedMessage: one(form, 'limitReachedMessage'),
      };
      const refused = (error: string, status: number) =>
        renderChat(req, reply, current, agentId, undefined, { settings: { error, draft } }, status);
      const parsed = UpdateAgent.safeParse(updateOf(draft, agent));
      if (!parsed.success) return refused(formIssues(parsed.error), 422);
      try {
        await updateAgent(ctx, agent.id, parsed.data);
      } catch (err) {
        if (err instanceof AppError && err.statusCode < 500 && err.statusCode !== 404) {
          return refused(err.message, err.statusCode);
        }
        throw err;
      }
      return redirectWithFlash(req, reply, `${agentPath(agent.id)}#settings`, { notice: 'Settings saved.' });
    });
  });

  app.get(AGENT_CHAT_JS_PATH.split('?')[0] ?? '', page, async (_req, reply) =>
    reply
      .type('application/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=86400')
      .header('x-content-type-options', 'nosniff')
      .send(AGENT_CHAT_JS),
  );

  /**
   * The chat page's script posts the message form here and reads the reply as it is written (Server-Sent
   * Events: `conversation`, `delta`, `tool.called`, `tool.result`, then `done` or `error`), from the same
   * `chatWithAgent` as the API. The browser's session and the form's CSRF token, as the form's own POST; the
   * agent chat's limits (RATE_LIMIT_LLM a window per account, as the API's agent chat; 402 at a zero balance).
   * Refusals before the stream are §7 JSON bodies the script shows.
   */
  app.post(
    `${AGENTS_PATH}/:agentId/chat/stream`,
    {
      ...page,
      config: {
        ...page.config,
        rateLimit: {
          max: config.rateLimits.llm,
          timeWindow: config.rateLimits.windowMs,
          keyGenerator: async (req: FastifyRequest) => {
            const user = await currentUser(req);
            return user ? `acct:${user.actor.accountId}` : `ip:${req.ip}`;
          },
        },
      },
    },
    async (req, reply) => {
      const form = (req.body ?? {}) as Form;
      if (!csrfOk(req, form)) throw new ForbiddenError('The form was out of date: reload the page and try again.');
      const current = await currentUser(req);
      if (!current) throw new UnauthorizedError('You are signed out: reload the page and sign in again.');
      const { agentId } = req.params as { agentId: string };
      if (!AGENT_ID.test(agentId)) throw new NotFoundError(`Agent ${agentId.slice(0, 40)} not found`);
      const message = one(form, 'message').trim();
      const given = one(form, 'conversationId');
      const conversationId = CONVERSATION_ID.test(given) ? given : undefined;
      if (!message) throw new ValidationError('Write a message first.', [{ field: 'message', message: 'required' }]);
      const ctx = serviceContextOf(req, current.actor);
      if (((await availableCredits(ctx.deps, ctx.accountId)) ?? 0) <= 0) {
        throw new CreditsExhaustedError('Insufficient credits: the balance is exhausted; add credits to continue');
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

  app.post(`${AGENTS_PATH}/:agentId/conversations/:conversationId/delete`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withAgent(req, reply, async (current, agentId) => {
      const { conversationId } = req.params as { conversationId: string };
      if (!CONVERSATION_ID.test(conversationId)) throw new NotFoundError('No such conversation');
      await deleteConversation(serviceContextOf(req, current.actor), agentId, conversationId);
      return reply.redirect(agentPath(agentId), 303);
    });
  });
}
