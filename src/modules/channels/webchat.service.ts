import { randomBytes } from 'node:crypto';
import type { PublicContext } from '../../context.ts';
import type { MessagingChannelRow } from '../../db/schema/index.ts';
import { utcDay } from '../../lib/dates.ts';
import { ConflictError, ForbiddenError, NotFoundError, TooManyRequestsError } from '../../lib/errors.ts';
import { newId, sha256Hex } from '../../lib/ids.ts';
import * as repo from './repo.ts';
import type { WebchatMessage, WebchatReply } from './schema.ts';
import { askChannelAgent, channelAgentContext } from './service.ts';

/**
 * The public web chat (`POST /messaging-channels/webchat/messages`): visitors of a page talk to the channel's
 * agent. A visitor holds a token issued with their first answer (stored only as its SHA-256); each visitor
 * keeps one conversation. A channel may allow only some page origins. Limits: per client address (the route),
 * per visitor and per channel per UTC day (here). `clientMessageId` makes a retried message answer the stored
 * reply instead of running the agent again. Visitors are anonymous: the agent runs without the owner's
 * connections or knowledge (only its memory of that visitor), within the channel writer's restriction set.
 */

/** Tool groups an anonymous visitor's run may use. */
const VISITOR_GROUPS = ['agent-memory'] as const;

export interface PreparedWebchat {
  channel: MessagingChannelRow;
  visitorId: string;
  visitorToken: string;
  key: string;
  content: string;
  /** The stored answer of a retried `clientMessageId`. */
  replay?: WebchatReply;
}

const secondsToMidnight = (now: Date) => {
  const next = new Date(now);
  next.setUTCHours(24, 0, 0, 0);
  return Math.max(1, Math.ceil((next.getTime() - now.getTime()) / 1000));
};

/** Whether a browser on `origin` may use the channel (no list: any origin). */
export function originAllowed(channel: MessagingChannelRow, origin: string | undefined): boolean {
  const allowed = channel.config.allowedOrigins ?? [];
  return allowed.length === 0 || (origin !== undefined && allowed.includes(origin.replace(/\/+$/, '')));
}

/**
 * Checks the channel, origin, visitor and limits, and claims the message: everything before the agent runs.
 * `originAccepted` is called as soon as the channel accepts the page's origin, before any later refusal (a
 * daily limit), so the route lets that page, and only that page, read the answer.
 */
export async function prepareWebchat(
  ctx: PublicContext,
  input: WebchatMessage,
  origin: string | undefined,
  originAccepted: () => void = () => {},
): Promise<PreparedWebchat> {
  const channel = await repo.findChannelById(ctx.db, input.channelId);
  if (channel?.type !== 'webchat') throw new NotFoundError(`Web chat channel ${input.channelId} not found`);
  if (!originAllowed(channel, origin)) {
    throw new ForbiddenError("This page's origin is not allowed to use this web chat");
  }
  originAccepted();
  let visitorToken = input.visitorToken;
  let visitor = visitorToken ? await repo.findVisitor(ctx.db, channel.id, sha256Hex(visitorToken)) : undefined;
  if (!visitor || !visitorToken) {
    // A first message, or a token this channel does not know (another channel's, a forgotten one): a new visitor.
    visitorToken = `wct_${randomBytes(32).toString('base64url')}`;
    visitor = { id: newId('webchatVisitor') };
    await repo.insertVisitor(ctx.db, { id: visitor.id, channelId: channel.id, tokenHash: sha256Hex(visitorToken) });
  }
  const key = `webchat:${visitor.id}:${input.clientMessageId ?? randomBytes(12).toString('base64url')}`;
  const base = { channel, visitorId: visitor.id, visitorToken, key, content: input.content };
  if (input.clientMessageId) {
    const earlier = await repo.findDelivery(ctx.db, channel.id, key);
    if (earlier?.reply && earlier.conversationId) {
      return { ...base, replay: { reply: earlier.reply, visitorToken, conversationId: earlier.conversationId } };
    }
    if (earlier) throw new ConflictError('This message is still being answered; retry in a moment');
  }
  const now = new Date();
  const { webchatDailyPerVisitor, webchatDailyPerChannel } = ctx.deps.config.channels;
  const retry = secondsToMidnight(now);
  if (!(await repo.countDaily(ctx.db, channel.id, visitor.id, utcDay(now), webchatDailyPerVisitor))) {
    throw new TooManyRequestsError(retry, 'You have sent the most messages allowed today; come back tomorrow');
  }
  if (!(await repo.countDaily(ctx.db, channel.id, '*', utcDay(now), webchatDailyPerChannel))) {
    throw new TooManyRequestsError(retry, 'This chat has answered the most messages allowed today');
  }
  const fresh = await repo.insertDelivery(ctx.db, {
    channelId: channel.id,
    key,
    accountId: channel.accountId,
    chatId: visitor.id,
    senderId: visitor.id,
    payload: { content: input.content },
  });
  if (!fresh) throw new ConflictError('This message is still being answered; retry in a moment');
  return base;
}

/**
 * Runs the agent for a prepared message in the visitor's conversation and stores the reply on the delivery. A
 * failure removes the claim, so the same `clientMessageId` may be tried again.
 */
export async function answerWebchat(
  ctx: PublicContext,
  prepared: PreparedWebchat,
  opts: { signal: AbortSignal; onConversation?: (conversationId: string) => void | Promise<void> },
): Promise<WebchatReply> {
  if (prepared.replay) {
    await opts.onConversation?.(prepared.replay.conversationId);
    return prepared.replay;
  }
  const { channel, visitorId } = prepared;
  const agentCtx = channelAgentContext(ctx.deps, ctx.log, channel);
  try {
    const chat = await repo.touchChat(ctx.db, channel.id, visitorId, true);
    const outcome = await askChannelAgent(agentCtx, channel, chat, prepared.content, {
      signal: opts.signal,
      endUserId: `webchat:${visitorId}`,
      allowedToolGroups: VISITOR_GROUPS,
      ...(opts.onConversation ? { onConversation: opts.onConversation } : {}),
    });
    await repo.updateDelivery(ctx.db, channel.id, prepared.key, {
      status: 'replied',
      reply: outcome.content,
      conversationId: outcome.conversationId,
    });
    return { reply: outcome.content, visitorToken: prepared.visitorToken, conversationId: outcome.conversationId };
  } catch (err) {
    await repo.deleteDelivery(ctx.db, channel.id, prepared.key).catch(() => {});
    throw err;
  }
}
