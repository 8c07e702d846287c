import type { Deps } from '../../context.ts';
import type { ChannelChatRow, ChannelDeliveryRow, ChannelLinkRow, MessagingChannelRow } from '../../db/schema/index.ts';
import type { JobContext } from '../../jobs/definition.ts';
import { errorText } from '../../jobs/queue.ts';
import { AppError } from '../../lib/errors.ts';
import * as repo from './repo.ts';
import { askChannelAgent, type ChannelSecrets, channelAgentContext, linkCodeHash, openSecrets } from './service.ts';

/**
 * What a channel does with one delivery, whatever the platform: an inbound message runs the agent (or links
 * its sender, or tells an unknown sender how to link, at most hourly) and the reply is sent in parts; an
 * outbound push is sent as it is. Every step is recorded on the delivery row, so a job run again after a crash
 * neither runs the agent twice once it answered nor sends a part twice once it was sent.
 */

export interface InboundMessage {
  chatId: string;
  senderId: string;
  senderName: string;
  text: string;
  /** A group chat: answered only when `addressed` (mentioned or replied to). */
  isGroup: boolean;
  addressed: boolean;
  /** A link code the sender presented (`/start CODE`, `link CODE`). */
  linkCode?: string | undefined;
  /** The platform's id of the message (WhatsApp marks it read). */
  messageId?: string | undefined;
}

export interface Platform {
  /** The message of an update, or undefined for updates a channel ignores (statuses, stickers, edits). */
  parse(channel: MessagingChannelRow, payload: Record<string, unknown>): InboundMessage | undefined;
  /** The most characters of one message. */
  maxChars: number;
  split(text: string): string[];
  /** Sends one part; throws on failure (the job retries what is left). */
  send(deps: Deps, channel: MessagingChannelRow, secrets: ChannelSecrets, chatId: string, text: string): Promise<void>;
  /** Shows that the agent is working (best effort); `once`: the platform's indicator lasts until the reply. */
  typing?(deps: Deps, channel: MessagingChannelRow, secrets: ChannelSecrets, msg: InboundMessage): Promise<void>;
  typingOnce?: boolean;
  /** Why the chat cannot be written to now (WhatsApp's 24-hour window), if it cannot. */
  cannotSend?(chat: ChannelChatRow | undefined, now: Date): string | undefined;
  /** How to link, told to an unknown sender. */
  linkHint: string;
}

export const LINKED_REPLY = 'Your account is now linked. Send a message to talk to the agent.';
export const BAD_CODE_REPLY = 'That link code is not valid or has expired. Ask for a new one in your account.';
const TYPING_EVERY_MS = 4000;

/** A client-side refusal (no credits, a limit, a deleted agent) is final; anything else is retried. */
const isFinal = (err: unknown) => err instanceof AppError && err.statusCode < 500;

export async function processDelivery(
  deps: Deps,
  platform: Platform,
  channel: MessagingChannelRow,
  delivery: ChannelDeliveryRow,
  job: JobContext,
): Promise<{ status: string }> {
  const db = deps.database.db;
  const done = ['replied', 'ignored', 'unlinked', 'failed'];
  if (done.includes(delivery.status)) return { status: delivery.status };
  const secrets = openSecrets(deps, channel);
  const update = (patch: Parameters<typeof repo.updateDelivery>[3]) =>
    repo.updateDelivery(db, channel.id, delivery.key, patch);
  try {
    let reply = delivery.reply;
    let chatId = delivery.chatId ?? '';
    // The chat's row, read once: from the inbound message on a first run, before sending on a resumed one.
    let chat: ChannelChatRow | undefined;
    if (delivery.status === 'received') {
      const msg = platform.parse(channel, delivery.payload);
      if (!msg || (msg.isGroup && !msg.addressed)) {
        await update({ status: 'ignored' });
        return { status: 'ignored' };
      }
      chatId = msg.chatId;
      const touched = await repo.touchChat(db, channel.id, msg.chatId, true);
      chat = touched;
      if (msg.linkCode !== undefined) {
        const code = await repo.consumeLinkCode(db, channel.id, linkCodeHash(channel.id, msg.linkCode));
        if (code) {
          await repo.upsertLink(db, {
            channelId: channel.id,
            externalUserId: msg.senderId,
            chatId: msg.chatId,
            displayName: msg.senderName.slice(0, 200),
            runAs: code.runAs,
          });
        }
        reply = code ? LINKED_REPLY : BAD_CODE_REPLY;
      } else {
        const link = await repo.findLink(db, channel.id, msg.senderId);
        if (!link) {
          if (!(await repo.claimHint(db, channel.id, msg.chatId))) {
            await update({ status: 'unlinked' });
            return { status: 'unlinked' };
          }
          reply = platform.linkHint;
        } else {
          const run = await runAgent(deps, platform, channel, secrets, msg, touched, link, job);
          reply = run.content;
          await update({ conversationId: run.conversationId });
        }
      }
      await update({ status: 'answered', reply, chatId });
    }
    const parts = platform.split(reply ?? '');
    const why = platform.cannotSend?.(chat ?? (await repo.findChat(db, channel.id, chatId)), new Date());
    if (why) {
      await update({ status: 'failed', error: why });
      return { status: 'failed' };
    }
    for (let i = delivery.sentParts; i < parts.length; i++) {
      await platform.send(deps, channel, secrets, chatId, parts[i] ?? '');
      await update({ sentParts: i + 1 });
    }
    await update({ status: 'replied', error: null });
    return { status: 'replied' };
  } catch (err) {
    if (isFinal(err)) {
      await update({ status: 'failed', error: errorText(err) });
      return { status: 'failed' };
    }
    await update({ error: errorText(err) });
    throw err;
  }
}

/**
 * Runs the agent in the chat's conversation (a new one if it was deleted), with the typing indicator on, as the
 * channel's writer narrowed by whoever linked this person.
 */
async function runAgent(
  deps: Deps,
  platform: Platform,
  channel: MessagingChannelRow,
  secrets: ChannelSecrets,
  msg: InboundMessage,
  chat: ChannelChatRow,
  link: ChannelLinkRow,
  job: JobContext,
): Promise<{ content: string; conversationId: string }> {
  const ctx = channelAgentContext(deps, job.log, channel, link);
  const typing = () => platform.typing?.(deps, channel, secrets, msg).catch(() => {});
  await typing();
  const timer = platform.typingOnce ? undefined : setInterval(() => void typing(), TYPING_EVERY_MS);
  try {
    return await askChannelAgent(ctx, channel, chat, msg.text, {
      signal: job.signal,
      endUserId: `${channel.type}:${msg.senderId}`,
    });
  } finally {
    clearInterval(timer);
  }
}

const lastSend = new Map<string, number>();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Paces sends in this process: at least `intervalMs` between two messages to one chat and `botIntervalMs`
 * between two of one bot (Telegram: about one a second per chat, 30 a second per bot).
 */
export async function pace(
  channelId: string,
  chatId: string,
  intervalMs: number,
  botIntervalMs: number,
): Promise<void> {
  for (const [key, gap] of [
    [`${channelId}:${chatId}`, intervalMs],
    [channelId, botIntervalMs],
  ] as const) {
    const wait = (lastSend.get(key) ?? 0) + gap - Date.now();
    if (wait > 0) await sleep(wait);
    lastSend.set(key, Date.now());
  }
  if (lastSend.size > 10_000) lastSend.clear();
}
