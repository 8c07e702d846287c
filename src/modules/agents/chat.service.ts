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
import { OWNER } from './conversations.service.ts';
import { filesForChat } from './files.service.ts';
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

type Content = AgentChatRequest['messages'][number]['content'];
/** The most of one file's text a message carries. */
const FILE_TEXT_CHARS = 100_000;

/** Files named by the messages' content parts, loaded once (another account's or unknown: 404). */
async function filesOf(ctx: ServiceContext, messages: AgentChatRequest['messages']): Promise<Map<string, ChatFileRow>> {
  const ids = messages.flatMap((m) =>
    typeof m.content === 'string' ? [] : m.content.flatMap((p) => (p.type === 'file' ? [p.file.file_id] : [])),
  );
  return filesForChat(ctx.db, ctx.accountId, [...new Set(ids)]);
}

/**
 * A message as stored and as the model reads it: text parts as they are, a document's text after its name, an
 * image as an image part (only for a model with vision: otherwise 422).
 */
function contentOf(
  content: Content,
  files: Map<string, ChatFileRow>,
  vision: { ok: boolean; model: string },
): { text: string; parts: Array<Record<string, unknown>> | undefined } {
  if (typeof content === 'string') return { text: content, parts: undefined };
  const texts: string[] = [];
  const images: Array<Record<string, unknown>> = [];
  for (const part of content) {
    if (part.type === 'text') {
      texts.push(part.text);
      continue;
    }
    const file = files.get(part.file.file_id);
    if (!file) continue;
    if (file.text === null) {
      if (!vision.ok) {
        throw new ValidationError(`Model ${vision.model} cannot read images: give the agent a model with vision`, [
          { field: 'body.messages', message: `${file.filename} is an image` },
        ]);
      }
      texts.push(`[Image: ${file.filename}]`);
      images.push({
        type: 'image_url',
        image_url: { url: `data:${file.mimeType};base64,${file.bytes.toString('base64')}` },
      });
    } else {
      texts.push(`[File: ${file.filename}]\n${file.text.slice(0, FILE_TEXT_CHARS)}`);
    }
  }
  const text = texts.join('\n\n');
  return { text, parts: images.length ? [{ type: 'text', text }, ...images] : undefined };
}

/** Stored messages as the model reads them (tool calls and their results included). */
function toChatMessage(row: MessageRow): ChatMessage {
  if (row.role === 'tool') return { role: 'tool', tool_call_id: row.toolCallId ?? '', content: row.content ?? '' };
  if (row.role === 'assistant' && row.toolCalls?.length) {
    return { role: 'assistant', content: row.content, tool_calls: row.toolCalls };
  }
  return { role: row.role, content: row.content ?? '' };
}

/** The newest messages that fit in `budget` tokens, never starting on a tool result cut from its call. */
function trimToWindow(history: ChatMessage[], budget: number): ChatMessage[] {
  const kept: ChatMessage[] = [];
  let used = 0;
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i];
    if (!m) continue;
    // An estimate (4 characters a token) is enough to trim by, and costs no tokenizer on every turn.
    const chars =
      (typeof m.content === 'string' ? m.content.length : 0) + (m.tool_calls ? JSON.stringify(m.tool_calls).length : 0);
    used += Math.ceil(chars / 4) + 4;
    if (used > budget) break;
    kept.unshift(m);
  }
  while (kept[0]?.role === 'tool') kept.shift();
  return kept;
}

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

  // With a conversation, only what follows the request's last assistant message is new (clients that resend
  // the whole history do not store it twice).
  let incoming = request.messages;
  let continued: { conversation: ConversationRow; messages: MessageRow[] } | undefined;
  if (request.conversationId) {
    // Writes of this conversation still queued here are written first: the history includes them.
    await log.settled(request.conversationId);
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
  const prompt = asked.text;
  if (!prompt.trim() && !asked.parts) throw new BadRequestError('The user message is empty');

  const record = (conversationId: string, m: Pick<MessageRow, 'role' | 'content'> & Partial<MessageRow>) =>
    log.message({ toolCalls: null, toolCallId: null, toolName: null, error: null, ...m, conversationId });
  let history: ChatMessage[];
  let conversationId: string;
  if (continued) {
    conversationId = continued.conversation.id;
    // A failed turn's marker is not something the agent said.
    history = continued.messages.filter((m) => m.error === null).map(toChatMessage);
  } else {
    // A new conversation's history is its first prompt at most: nothing to read.
    conversationId = newId('conversation');
    void log.conversation({
      id: conversationId,
      accountId: ctx.accountId,
      agentId: agent.id,
      endUserId,
      title: prompt.replace(/\s+/g, ' ').trim().slice(0, 80),
    });
    history = agent.firstPrompt
      ? [toChatMessage(record(conversationId, { role: 'assistant', content: agent.firstPrompt }).message)]
      : [];
  }
  for (const m of incoming) record(conversationId, { role: m.role, content: contentOf(m.content, files, vision).text });
  // The turn is held by a lease from here until its answer or failure is stored (runs.service.ts): if this
  // instance dies meanwhile, another marks the turn failed once the lease runs out.
  const leaseMs = ctx.deps.config.agentRunLeaseMs;
  const turn = log.startRun(conversationId, leaseMs);
  const leaseLost = new AbortController();
  const lease = holdRunLease(ctx.deps, turn, leaseMs, ctx.log, () => leaseLost.abort());
  const signal = AbortSignal.any([opts.signal, leaseLost.signal]);
  try {
    return await answerTurn();
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
    await log.commitNow(log.failRun(conversationId, turn.id, failureText(fault)).written);
    throw fault;
  } finally {
    lease.stop();
  }

  async function answerTurn(): Promise<ChatOutcome> {
    if (opts.onConversation) {
      // Named before the answer: the conversation and the turn's messages are committed first.
      if (!(await log.commitNow(turn.written))) throw databaseUnavailable();
      await opts.onConversation(conversationId);
    } else {
      // Committed while the model answers: the answer then waits for its own message only.
      void log.commitNow(turn.written);
    }

    const limits = agent.usageLimits;
    const limitMessage = limits.limitReachedMessage || DEFAULT_LIMIT_MESSAGE;
    const month = utcMonth(new Date());
    const overCap = async () =>
      limits.monthlyCreditsCap !== undefined &&
      (await repo.monthlySpend(ctx.db, agent.id, month)) >= limits.monthlyCreditsCap;
    const answer = async (
      content: string,
      usage: ChatOutcome['usage'],
      credits: ChatOutcome['credits'],
      limited: boolean,
      /** The exchange may teach the agent something (memory extraction). */
      learn = false,
    ) => {
      const { committed, written } = log.answer(conversationId, turn, content, {
        creditsConsumed: credits.consumed,
        limited,
      });
      if (learn) {
        // What the exchange teaches is decided off the request path, once the exchange is stored.
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
      // What the answer names is committed before it is sent: any instance reads it, and continues it, at once.
      if (!(await committed)) throw databaseUnavailable();
      return {
        id: newId('completion'),
        created: Math.floor(Date.now() / 1000),
        model: model.id,
        conversationId,
        content,
        usage,
        credits,
        limited,
      };
    };
    const noUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

    const withinDay =
      limits.dailyMessagesPerUser === undefined ||
      (await repo.countDailyMessage(ctx.db, agent.id, endUserId, utcDay(new Date()), limits.dailyMessagesPerUser));
    if (!withinDay || (await overCap())) {
      return answer(limitMessage, noUsage, { consumed: 0, remaining: await balanceOf(ctx) }, true);
    }

    // Earlier messages of the request itself (a client sending a whole new conversation) join the history.
    const earlier: ChatMessage[] = incoming
      .slice(0, -1)
      .map((m) => ({ role: m.role, content: contentOf(m.content, files, vision).text }));
    const budget =
      Math.floor(model.contextWindow * 0.75) - (request.max_tokens ?? Math.min(model.maxOutputTokens, 4096));
    const trimmed = trimToWindow([...history, ...earlier], Math.max(1000, budget));

    const remembers = agent.enabledBuiltInTools.includes('agent-memory');
    const remembered = remembers ? await recallForPrompt(ctx, agent, endUserId, prompt) : '';
    const added = await groupInstructions(ctx, agent);
    let usage = { ...noUsage };
    const run = await runAgent(ctx, {
      prompt: asked.parts ?? prompt,
      history: trimmed,
      instructions: [agent.personality, ...added, remembered].filter(Boolean).join('\n\n') || undefined,
      model: model.id,
      tools: await toolsOf(ctx, agent, endUserId, conversationId, opts.allowedToolGroups),
      temperature: request.temperature ?? agent.temperature,
      maxTokens: request.max_tokens,
      billing: opts.billing ?? { type: 'agent', description: `Agent ${agent.name}` },
      signal,
      beforeStep: async () => ((await overCap()) ? limitMessage : undefined),
      onCharge: async (credits) => {
        opts.onCharge?.(credits.consumed);
        // The monthly spend is kept only where a cap reads it.
        if (limits.monthlyCreditsCap !== undefined)
          await repo.addMonthlySpend(ctx.db, agent.id, month, credits.consumed);
      },
      onMessage: async (m) => {
        record(conversationId, {
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
          void log.event(conversationId, type, data);
          await opts.onStep?.(step);
        }
      },
      onDelta: opts.onDelta,
      activity: { via: opts.via ?? 'agent-chat', agentId: agent.id, agentName: agent.name },
    });
    usage = {
      prompt_tokens: run.promptTokens.reduce((a, b) => a + b, 0),
      completion_tokens: 0,
      total_tokens: 0,
    };
    usage.completion_tokens = run.completionTokens;
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    return answer(
      run.text,
      usage,
      { consumed: run.creditsConsumed, remaining: await balanceOf(ctx) },
      run.stoppedBy === 'limit',
      remembers && run.stoppedBy === 'answer',
    );
  }
}

/** What a failed turn stores and tells subscribers: the agent's or the service's own words, never internals. */
function failureText(err: unknown): string {
  if (err instanceof AppError) return err.message;
  return 'The agent could not answer because of an internal error.';
}
