import type { PublicContext } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { ChannelType, MessagingChannelRow } from '../../db/schema/index.ts';
import { BadRequestError, ForbiddenError, UnauthorizedError } from '../../lib/errors.ts';
import { sha256Hex } from '../../lib/ids.ts';
import { jsonBodyProblem } from '../../lib/json.ts';
import { hasNul, NUL_MESSAGE } from '../../lib/text.ts';
import { enqueueChannelJob } from './jobs.ts';
import * as repo from './repo.ts';
import { openSecrets } from './service.ts';
import { messagesOf, validSignature } from './whatsapp.ts';

/**
 * The platforms' side: webhooks find their channel by the secret they present (compared in constant time),
 * record the update once under the platform's id and queue its handling in the same transaction, then answer
 * at once. A duplicate (the same update again, even concurrently on another instance) finds the key taken.
 */

/** The channel of `type` whose stored hash matches the presented secret's, compared in constant time. */
export async function channelBySecret(
  db: Executor,
  type: ChannelType,
  presented: string | undefined,
): Promise<MessagingChannelRow | undefined> {
  if (!presented) return undefined;
  // Looked up by the secret's hash, never by the secret: the comparison leaks nothing about a stored secret.
  return (await repo.findChannelsBySecretHash(db, type, sha256Hex(presented)))[0];
}

/** Records one delivery and queues its job, once per key. Answers whether it was new. */
export async function recordDelivery(
  db: Executor,
  channel: MessagingChannelRow,
  key: string,
  payload: Record<string, unknown>,
  fields: {
    chatId?: string | null;
    senderId?: string | null;
    direction?: 'in' | 'out';
    reply?: string;
    status?: 'received' | 'answered';
  } = {},
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const fresh = await repo.insertDelivery(tx, {
      channelId: channel.id,
      key,
      accountId: channel.accountId,
      payload,
      chatId: fields.chatId ?? null,
      senderId: fields.senderId ?? null,
      direction: fields.direction ?? 'in',
      reply: fields.reply ?? null,
      status: fields.status ?? 'received',
    });
    if (fresh) {
      await enqueueChannelJob(
        tx,
        'channels.deliver',
        { channelId: channel.id, key },
        { accountId: channel.accountId, dedupeKey: `channels.deliver:${channel.id}:${key}` },
      );
    }
    return fresh;
  });
}

/** POST /messaging-channels/telegram/webhook: 401 for a wrong or missing secret token; duplicates are no-ops. */
export async function receiveTelegramUpdate(
  ctx: PublicContext,
  secretToken: string | undefined,
  update: unknown,
): Promise<{ ok: true; duplicate: boolean }> {
  const channel = await channelBySecret(ctx.db, 'telegram', secretToken);
  if (!channel) throw new UnauthorizedError('Invalid X-Telegram-Bot-Api-Secret-Token');
  const u = update as { update_id?: unknown; message?: { chat?: { id?: unknown }; from?: { id?: unknown } } } | null;
  if (!u || typeof u !== 'object' || !Number.isSafeInteger(u.update_id)) {
    throw new BadRequestError('An update must carry an integer update_id');
  }
  const chatId = u.message?.chat?.id;
  const senderId = u.message?.from?.id;
  const fresh = await recordDelivery(ctx.db, channel, `update:${String(u.update_id)}`, u as Record<string, unknown>, {
    chatId: chatId === undefined ? null : String(chatId),
    senderId: senderId === undefined ? null : String(senderId),
  });
  return { ok: true, duplicate: !fresh };
}

/**
 * GET /messaging-channels/whatsapp/webhook: Meta's verification handshake. The channel is found by the verify
 * token (`hub.verify_token`); the answer is `hub.challenge` as plain text. A wrong token or mode: 403.
 */
export async function verifyWhatsappWebhook(
  ctx: PublicContext,
  query: {
    'hub.mode'?: string | undefined;
    'hub.verify_token'?: string | undefined;
    'hub.challenge'?: string | undefined;
  },
): Promise<string> {
  const channel = await channelBySecret(ctx.db, 'whatsapp', query['hub.verify_token']);
  if (query['hub.mode'] !== 'subscribe' || !channel) {
    throw new ForbiddenError('Wrong hub.mode or hub.verify_token');
  }
  return query['hub.challenge'] ?? '';
}

/**
 * POST /messaging-channels/whatsapp/webhook: each phone number's channel checks X-Hub-Signature-256 over the
 * raw bytes with its `appSecret` (or WHATSAPP_APP_SECRET; with neither, the delivery is refused) before
 * anything is written; a bad or missing signature is 401. Messages are recorded once per message id;
 * status-only deliveries and unknown numbers are acknowledged and ignored.
 */
export async function receiveWhatsappDelivery(
  ctx: PublicContext,
  raw: Buffer,
  signature: string | undefined,
): Promise<{ ok: true; received: number; duplicates: number }> {
  let payload: unknown;
  try {
    // JSON.parse itself is iterative: any depth parses. Nothing walks the value before the signature is checked.
    payload = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new BadRequestError('The body must be JSON');
  }
  const globalSecret = ctx.deps.config.channels.whatsappAppSecret;
  const messages = messagesOf(payload);
  const channels = new Map<string, MessagingChannelRow>();
  for (const id of new Set(messages.map((m) => m.phoneNumberId))) {
    const channel = await repo.findChannelByExternalId(ctx.db, 'whatsapp', id);
    if (!channel) continue;
    const secret = openSecrets(ctx.deps, channel).appSecret ?? globalSecret;
    if (!secret) throw new UnauthorizedError('No app secret is configured to verify this delivery');
    if (!validSignature(raw, signature, secret)) throw new UnauthorizedError('Invalid X-Hub-Signature-256');
    channels.set(id, channel);
  }
  // Nothing of ours in it (a status update, another number): still refuse a forgery when we can tell.
  if (channels.size === 0 && globalSecret && !validSignature(raw, signature, globalSecret)) {
    throw new UnauthorizedError('Invalid X-Hub-Signature-256');
  }
  // This route parses its own body (for the signature): the JSON rules of every other route apply here too,
  // once the sender is known (the walks are iterative; a forgery never gets this far when it can be told).
  const problem = jsonBodyProblem(payload);
  if (problem) throw new BadRequestError(problem);
  if (hasNul(payload)) throw new BadRequestError(NUL_MESSAGE);
  let received = 0;
  let duplicates = 0;
  for (const m of messages) {
    const channel = channels.get(m.phoneNumberId);
    if (!channel) continue;
    const fresh = await recordDelivery(
      ctx.db,
      channel,
      `message:${m.id}`,
      { message: m.message, name: m.name },
      { chatId: m.from, senderId: m.from },
    );
    if (fresh) received++;
    else duplicates++;
  }
  return { ok: true, received, duplicates };
}
