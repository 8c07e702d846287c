import { AgentError, runAgent } from '../../agent/runtime.ts';
import type { AgentTool } from '../../agent/tool-group.ts';
import type { ServiceContext } from '../../context.ts';
import type { AgentRow, ChatFileRow, ConversationRow, MessageRow } from '../../db/schema/index.ts';
import { utcDay, utcMonth } from '../../lib/dates.ts';
import {
  AppError,
  BadRequestError,
  databaseUnavailable,
  GatewayTimeoutError,
  NotFoundError,
  ValidationError,
} from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { hasNul, NUL_MESSAGE } from '../../lib/text.ts';
import type { ChatMessage } from '../../llm-upstreams/types.ts';
import { balanceAfter } from '../credits/index.ts';
import { type Billing, resolveModel } from '../llm/index.ts';
import { contentOf, filesOf, toChatMessage, trimToWindow } from './chat-content.ts';
import { OWNER } from './conversations.service.ts';
import { enqueueAgentJob } from './jobs.ts';
import { recallForPrompt } from './memories.service.ts';
import * as repo from './repo.ts';
import { holdRunLease, INTERRUPTED_RUN_ERROR } from './runs.service.ts';
import type { AgentChatRequest } from './schema.ts';
import { chatAgent } from './service.ts';

/**
 * Agent chat (SPEC §4 POST /agents/:agentId/chat/completions), callable from code too: scheduled tasks and
 * messaging channels run an agent through `chatWithAgent`. A conversation is created or continued; the usage
 * limits are checked before any model call (a limit answers `limitReachedMessage`, with no model call and no
 * charge) and the monthly cap again between steps; the agent's personality, model, temperature and enabled
 * tool groups drive the ReAct runtime; every message, tool call and tool result is stored as it happens,
 * through this instance's group commit (`ConversationLog`). The answer waits for what it reads (the agent,
 * cached; a continued conversation's history), the usage counters that decide it, and on PostgreSQL the commit
 * of what it names: the conversation and its messages are in the database, for every instance, once the answer
 * is sent (and before `onConversation` names the conversation early, as a stream's header or a task's run does;
 * see `ConversationLog` for PGlite, which serves one process).
 */

export const DEFAULT_LIMIT_MESSAGE = 'This agent has reached its usage limit for now. Please try again later.';
/** The most stored messages a chat reads back before trimming to the model's context window. */
const HISTORY_MESSAGES = 200;

export interface ChatOutcome {
  id: string;
  created: number;
  model: string;
  conversationId: string;
  content: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  credits: { consumed: number; remaining: number };
  /** The answer is the agent's `limitReachedMessage`: a usage limit stopped it. */
  limited: boolean;
}

export interface ChatOptions {
  signal: AbortSignal;
  /** Who the chat is for (usage limits count per end user); default the account itself (`owner`). */
  endUserId?: string;
  /** Told the conversation id as soon as it is known (a stream sends it as a header before the answer). */
  onConversation?: (conversationId: string) => void | Promise<void>;
  /** Narrows the agent's tool groups for this run (a web chat's anonymous visitors get none of the owner's data). */
  allowedToolGroups?: readonly string[];
  /** Told the credits of each model call as it is charged (a scheduled run knows what a failure cost). */
  onCharge?: (credits: number) => void;
  /** Told the model's text as it is written (the model is then asked for a stream): a page shows it coming. */
  onDelta?: (text: string) => void | Promise<void>;
  /** Told each tool call and tool result as it happens (its message and event are queued for writing). */
  onStep?: (step: ChatStep) => void | Promise<void>;
  /** What the ledger calls the run's model calls; default an agent chat (a scheduled run says it is a task's). */
  billing?: Billing;
  /** The path the activity log names for this run's rows; default `agent-chat`. */
  via?: 'agent-chat' | 'task' | 'channel';
}

/** A tool step of a run, with the data of its `tool.called` or `tool.result` event. */
export type ChatStep =
  | { type: 'tool.called'; toolCallId: string; name: string; arguments: string }
  | { type: 'tool.result'; toolCallId: string; name: string; content: string };

/**
 * The tools of the agent's enabled built-in groups and its linked tools, from the groups the composition root
 * registered (`deps.toolGroups`, src/composition.ts): the one place a group becomes tools.
 */
export async function toolsOf(
  ctx: ServiceContext,
  agent: AgentRow,
  endUserId: string,
  conversationId: string,
  allowed?: readonly string[],
): Promise<AgentTool[]> {
  const enabled = new Set(agent.enabledBuiltInTools.filter((g) => !allowed || allowed.includes(g)));
  const run = { agent, endUserId, conversationId, owner: endUserId === OWNER };
  const tools: AgentTool[] = [];
  for (const group of ctx.deps.toolGroups) {
    if (group.name !== undefined && !enabled.has(group.name)) continue;
    if (group.ownerOnly && !run.owner) continue;
    tools.push(...(await group.tools(ctx, run)));
  }
  return tools;
}

/** What the agent's enabled groups add to its instructions (its skill index), in the groups' order. */
async function groupInstructions(ctx: ServiceContext, agent: AgentRow): Promise<string[]> {
  const texts: string[] = [];
  for (const group of ctx.deps.toolGroups) {
    if (group.instructions && group.name !== undefined && agent.enabledBuiltInTools.includes(group.name))
      texts.push(await group.instructions(ctx, agent));
  }
  return texts;
}

/** The balance after the request, as `creditBalance` shows it: every charge answered so far counted. */
async function balanceOf(ctx: ServiceContext): Promise<number> {
  return (await balanceAfter(ctx.deps, ctx.accountId)) ?? 0;
}

/** A request read against its conversation: the messages new to it, the prompt and the files they name. */
interface TurnInput {
  /** What the conversation does not hold yet (clients that resend the whole history), ending with the user's. */
  incoming: AgentChatRequest['messages'];
  continued: { conversation: ConversationRow; messages: MessageRow[] } | undefined;
  files: Map<string, ChatFileRow>;
  vision: { ok: boolean; model: string };
  prompt: string;
  /** The prompt as parts, when it carries images. */
  parts: Array<Record<string, unknown>> | undefined;
}

/** A turn under way: its conversation, what the model reads before the request, and its lease's row. */
interface Turn {
  agent: AgentRow;
  model: ReturnType<typeof resolveModel>;
  endUserId: string;
  conversationId: string;
  history: ChatMessage[];
  run: { id: string; written: Promise<boolean> };
  signal: AbortSignal;
}

export async function chatWithAgent(
  ctx: ServiceContext,
  agentId: string,
  request: AgentChatRequest,
  opts: ChatOptions,
): Promise<ChatOutcome> {
  const agent = await chatAgent(ctx, agentId);
  const log = ctx.deps.areas.conversationLog;
  const model = resolveModel(ctx, agent.llm);
  const endUserId = opts.endUserId ?? request.user ?? OWNER;
  const input = await readTurn(ctx, agent, model, request);
  const { conversationId, history } = openConversation(ctx, agent, input, endUserId);
  // The turn is held by a lease from here until its answer or failure is stored (runs.service.ts): if this
  // instance dies meanwhile, another marks the turn failed once the lease runs out.
  const leaseMs = ctx.deps.config.agentRunLeaseMs;
  const run = log.startRun(conversationId, leaseMs);
  const leaseLost = new AbortController();
  const lease = holdRunLease(ctx.deps, run, leaseMs, ctx.log, () => leaseLost.abort());
  const signal = AbortSignal.any([opts.signal, leaseLost.signal]);
  try {
    return await answerTurn(
      ctx,
      { agent, model, endUserId, conversationId, history, run, signal },
      input,
      request,
      opts,
    );
  } catch (err) {
    // The turn was already marked failed (this instance lost its lease): nothing more is stored.
    if (leaseLost.signal.aborted) throw new GatewayTimeoutError(INTERRUPTED_RUN_ERROR);
    const fault =
      err instanceof AgentError && opts.signal.aborted
        ? // The client went away: the run stopped, and what was generated is billed (runCompletion settled it).
          new BadRequestError('The client closed the request; the run was stopped')
        : err instanceof AgentError
          ? new GatewayTimeoutError(err.message)
          : err;
    // A client may read the failed turn (or continue the conversation) on another instance at once.
    await log.commitNow(log.failRun(conversationId, run.id, failureText(fault)).written);
    throw fault;
  } finally {
    lease.stop();
  }
}

/**
 * Reads the request against its conversation (404 for one not found): with a conversation, only what follows the
 * request's last assistant message is new. The last message must be the user's, with something in it.
 */
async function readTurn(
  ctx: ServiceContext,
  agent: AgentRow,
  model: Turn['model'],
  request: AgentChatRequest,
): Promise<TurnInput> {
  let incoming = request.messages;
  let continued: TurnInput['continued'];
  if (request.conversationId) {
    // Writes of this conversation still queued here are written first: the history includes them.
    await ctx.deps.areas.conversationLog.settled(request.conversationId);
    continued = await repo.conversationWithHistory(
      ctx.db,
      ctx.accountId,
      agent.id,
      request.conversationId,
      HISTORY_MESSAGES,
    );
    if (!continued) throw new NotFoundError(`Conversation ${request.conversationId} not found`);
    const lastAssistant = incoming.map((m) => m.role).lastIndexOf('assistant');
    incoming = incoming.slice(lastAssistant + 1);
  }
  const last = incoming.at(-1);
  if (last?.role !== 'user') {
    throw new ValidationError("The last message must be the user's", [
      { field: 'body.messages', message: 'must end with a user message' },
    ]);
  }
  // Stored through the group commit: a NUL the database refuses is the caller's 400 now, not a failed write later.
  if (hasNul(incoming)) throw new BadRequestError(NUL_MESSAGE);
  const files = await filesOf(ctx, incoming);
  const vision = { ok: model.capabilities.vision, model: model.id };
  const asked = contentOf(last.content, files, vision);
  if (!asked.text.trim() && !asked.parts) throw new BadRequestError('The user message is empty');
  return { incoming, continued, files, vision, prompt: asked.text, parts: asked.parts };
}

/** Queues a message of the conversation for writing (`ConversationLog`); answers it as it is stored. */
function record(
  ctx: ServiceContext,
  conversationId: string,
  m: Pick<MessageRow, 'role' | 'content'> & Partial<MessageRow>,
): MessageRow {
  return ctx.deps.areas.conversationLog.message({
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    error: null,
    ...m,
    conversationId,
  }).message;
}

/**
 * The turn's conversation, continued or new (a new one's history is its first prompt at most: nothing to read),
 * with the request's new messages queued for writing.
 */
function openConversation(
  ctx: ServiceContext,
  agent: AgentRow,
  input: TurnInput,
  endUserId: string,
): { conversationId: string; history: ChatMessage[] } {
  let conversationId: string;
  let history: ChatMessage[];
  if (input.continued) {
    conversationId = input.continued.conversation.id;
    // A failed turn's marker is not something the agent said.
    history = input.continued.messages.filter((m) => m.error === null).map(toChatMessage);
  } else {
    conversationId = newId('conversation');
    void ctx.deps.areas.conversationLog.conversation({
      id: conversationId,
      accountId: ctx.accountId,
      agentId: agent.id,
      endUserId,
      title: input.prompt.replace(/\s+/g, ' ').trim().slice(0, 80),
    });
    history = agent.firstPrompt
      ? [toChatMessage(record(ctx, conversationId, { role: 'assistant', content: agent.firstPrompt }))]
      : [];
  }
  for (const m of input.incoming) {
    record(ctx, conversationId, { role: m.role, content: contentOf(m.content, input.files, input.vision).text });
  }
  return { conversationId, history };
}

const NO_USAGE: ChatOutcome['usage'] = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

/**
 * The turn's answer: the agent's limit message when a usage limit is reached (no model call, no charge), else the
 * ReAct run over the history trimmed to the model's window, the agent's instructions and memories and its tools.
 */
async function answerTurn(
  ctx: ServiceContext,
  turn: Turn,
  input: TurnInput,
  request: AgentChatRequest,
  opts: ChatOptions,
): Promise<ChatOutcome> {
  const log = ctx.deps.areas.conversationLog;
  const { agent, model, conversationId } = turn;
  if (opts.onConversation) {
    // Named before the answer: the conversation and the turn's messages are committed first.
    if (!(await log.commitRows(turn.run.written))) throw databaseUnavailable();
    await opts.onConversation(conversationId);
  } else {
    // Committed while the model answers: the answer then waits for its own message only.
    void log.commitRows(turn.run.written);
  }

  const limits = agent.usageLimits;
  const limitMessage = limits.limitReachedMessage || DEFAULT_LIMIT_MESSAGE;
  const month = utcMonth(new Date());
  const overCap = async () =>
    limits.monthlyCreditsCap !== undefined &&
    (await repo.monthlySpend(ctx.db, agent.id, month)) >= limits.monthlyCreditsCap;
  const withinDay =
    limits.dailyMessagesPerUser === undefined ||
    (await repo.countDailyMessage(ctx.db, agent.id, turn.endUserId, utcDay(new Date()), limits.dailyMessagesPerUser));
  if (!withinDay || (await overCap())) {
    return storeAnswer(ctx, turn, {
      content: limitMessage,
      usage: { ...NO_USAGE },
      credits: { consumed: 0, remaining: await balanceOf(ctx) },
      limited: true,
    });
  }

  // Earlier messages of the request itself (a client sending a whole new conversation) join the history.
  const earlier: ChatMessage[] = input.incoming
    .slice(0, -1)
    .map((m) => ({ role: m.role, content: contentOf(m.content, input.files, input.vision).text }));
  const budget = Math.floor(model.contextWindow * 0.75) - (request.max_tokens ?? Math.min(model.maxOutputTokens, 4096));
  const trimmed = trimToWindow([...turn.history, ...earlier], Math.max(1000, budget));

  const remembers = agent.enabledBuiltInTools.includes('agent-memory');
  const remembered = remembers ? await recallForPrompt(ctx, agent, turn.endUserId, input.prompt) : '';
  const added = await groupInstructions(ctx, agent);
  const run = await runAgent(ctx, {
    prompt: input.parts ?? input.prompt,
    history: trimmed,
    instructions: [agent.personality, ...added, remembered].filter(Boolean).join('\n\n') || undefined,
    model: model.id,
    tools: await toolsOf(ctx, agent, turn.endUserId, conversationId, opts.allowedToolGroups),
    temperature: request.temperature ?? agent.temperature,
    maxTokens: request.max_tokens,
    billing: opts.billing ?? { type: 'agent', description: `Agent ${agent.name}` },
    signal: turn.signal,
    beforeStep: async () => ((await overCap()) ? limitMessage : undefined),
    onCharge: async (credits) => {
      opts.onCharge?.(credits.consumed);
      // The monthly spend is kept only where a cap reads it.
      if (limits.monthlyCreditsCap !== undefined) await repo.addMonthlySpend(ctx.db, agent.id, month, credits.consumed);
    },
    onMessage: (m) => recordStep(ctx, conversationId, m, opts.onStep),
    onDelta: opts.onDelta,
    activity: { via: opts.via ?? 'agent-chat', agentId: agent.id, agentName: agent.name },
  });
  const promptTokens = run.promptTokens.reduce((a, b) => a + b, 0);
  return storeAnswer(ctx, turn, {
    content: run.text,
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: run.completionTokens,
      total_tokens: promptTokens + run.completionTokens,
    },
    credits: { consumed: run.creditsConsumed, remaining: await balanceOf(ctx) },
    limited: run.stoppedBy === 'limit',
    learn: remembers && run.stoppedBy === 'answer',
  });
}

/** A message of the run (the model's, with its tool calls, or a tool's result), stored with its steps' events. */
async function recordStep(
  ctx: ServiceContext,
  conversationId: string,
  m: ChatMessage & { toolName?: string },
  onStep: ChatOptions['onStep'],
): Promise<void> {
  record(ctx, conversationId, {
    role: m.role === 'tool' ? 'tool' : 'assistant',
    content: typeof m.content === 'string' ? m.content : null,
    toolCalls: m.tool_calls ?? null,
    toolCallId: m.tool_call_id ?? null,
    toolName: m.toolName ?? null,
  });
  const steps: ChatStep[] = (m.tool_calls ?? []).map((call) => ({
    type: 'tool.called',
    toolCallId: call.id,
    name: call.function.name,
    arguments: call.function.arguments,
  }));
  if (m.role === 'tool') {
    steps.push({
      type: 'tool.result',
      toolCallId: m.tool_call_id ?? '',
      name: m.toolName ?? '',
      content: typeof m.content === 'string' ? m.content.slice(0, 4000) : '',
    });
  }
  for (const step of steps) {
    const { type, ...data } = step;
    void ctx.deps.areas.conversationLog.event(conversationId, type, data);
    await onStep?.(step);
  }
}

/**
 * Stores the turn's answer and answers the outcome once what it names is committed (any instance then reads it,
 * and continues it, at once). An exchange that may teach the agent something (`learn`) queues memory extraction,
 * off the request path, once it is stored.
 */
async function storeAnswer(
  ctx: ServiceContext,
  turn: Turn,
  reply: Pick<ChatOutcome, 'content' | 'usage' | 'credits' | 'limited'> & { learn?: boolean },
): Promise<ChatOutcome> {
  const { conversationId } = turn;
  const { committed, written } = ctx.deps.areas.conversationLog.answer(conversationId, turn.run, reply.content, {
    creditsConsumed: reply.credits.consumed,
    limited: reply.limited,
  });
  if (reply.learn) {
    ctx.deps.background.track(
      'memory extraction',
      written.then((ok) =>
        ok
          ? enqueueAgentJob(
              ctx.deps.database.db,
              'agents.extract-memories',
              { conversationId },
              { accountId: ctx.accountId, dedupeKey: `agents.extract-memories:${conversationId}` },
            )
          : undefined,
      ),
    );
  }
  if (!(await committed)) throw databaseUnavailable();
  return {
    id: newId('completion'),
    created: Math.floor(Date.now() / 1000),
    model: turn.model.id,
    conversationId,
    content: reply.content,
    usage: reply.usage,
    credits: reply.credits,
    limited: reply.limited,
  };
}

/** What a failed turn stores and tells subscribers: the agent's or the service's own words, never internals. */
function failureText(err: unknown): string {
  if (err instanceof AppError) return err.message;
  return 'The agent could not answer because of an internal error.';
}
