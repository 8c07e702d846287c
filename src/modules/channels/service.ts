import { randomBytes } from 'node:crypto';
import { delegatedContext, delegationOf, intersectDelegations, readDelegation } from '../../access/delegation.ts';
import type { Scope } from '../../access/scopes.ts';
import { type Deps, requireScope, type ServiceContext } from '../../context.ts';
import type {
  ChannelChatRow,
  ChannelLinkRow,
  ChannelPublicConfig,
  MessagingChannelRow,
} from '../../db/schema/index.ts';
import { BadGatewayError, ConflictError, isUniqueViolation, NotFoundError, ValidationError } from '../../lib/errors.ts';
import { newId, sha256Hex } from '../../lib/ids.ts';
import type { Logger } from '../../lib/logger.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import {
  type AgentDeletionHook,
  type ChatOptions,
  type ChatOutcome,
  chatWithAgent,
  existingAgentId,
} from '../agents/index.ts';
import * as repo from './repo.ts';
import {
  type Channel,
  type CreateChannel,
  type Delivery,
  type LinkCode,
  TelegramConfig,
  type UpdateChannel,
  WebchatConfig,
  WhatsappConfig,
} from './schema.ts';
import { getMe, TelegramError, telegramCall } from './telegram.ts';

/**
 * Messaging channels (SPEC §4, scope `messaging-channels`): an agent answering on Telegram, WhatsApp or a web
 * chat widget. Secret config fields are sealed with the key ring (the row id bound) and only reported as set;
 * the values the platforms present back to us (Telegram's secret_token, WhatsApp's verify token) are stored
 * as hashes. A bot or phone number serves one channel in the whole service.
 *
 * The agent answers with the restriction set (scopes, provider permissions, knowledge-base limit) of whoever
 * last created or changed the channel, narrowed for a linked person by that of whoever made their link code,
 * and never with more than a chat needs (`agents-use`): a limited token cannot widen itself through a channel.
 */

const SCOPE = 'messaging-channels' as const;
const LINK_CODE_TTL_MS = 15 * 60 * 1000;
/** What an answer acts with, cut to what the channel's writer held; also the scopes of rows kept before that. */
const ANSWER_SCOPES: readonly Scope[] = ['agents-use'];

/**
 * The context a channel's agent answers in: the channel writer's restriction set, and for a linked person
 * also that of whoever made their link code (a web chat's anonymous visitors have no link).
 */
export function channelAgentContext(
  deps: Deps,
  log: Logger,
  channel: Pick<MessagingChannelRow, 'accountId' | 'runAs'>,
  link?: Pick<ChannelLinkRow, 'runAs'>,
): ServiceContext {
  const own = readDelegation(channel.runAs, ANSWER_SCOPES);
  const delegation = link ? intersectDelegations(own, readDelegation(link.runAs, ANSWER_SCOPES)) : own;
  return delegatedContext(deps, channel.accountId, log, delegation, ANSWER_SCOPES);
}

export interface ChannelSecrets {
  botToken?: string;
  accessToken?: string;
  appSecret?: string;
}

export function openSecrets(deps: Pick<Deps, 'keyRing'>, row: MessagingChannelRow): ChannelSecrets {
  if (!row.secretsEnc) return {};
  return JSON.parse(deps.keyRing.decrypt(row.secretsEnc, row.id)) as ChannelSecrets;
}

function sealSecrets(deps: Pick<Deps, 'keyRing'>, id: string, secrets: ChannelSecrets): string {
  return deps.keyRing.encrypt(JSON.stringify(secrets), id);
}

export function telegramWebhookUrl(deps: Deps): string {
  return `${deps.config.baseUrl}/api/v1/messaging-channels/telegram/webhook`;
}
export function whatsappWebhookUrl(deps: Deps): string {
  return `${deps.config.baseUrl}/api/v1/messaging-channels/whatsapp/webhook`;
}

export function widgetSnippet(deps: Deps, channelId: string): string {
  return `<script src="${deps.config.baseUrl}/webchat/widget.js" data-channel-id="${channelId}" async></script>`;
}

/** The API's view of a channel; `links` are its linked people (read by the caller: one read for a whole list). */
function toChannel(ctx: ServiceContext, row: MessagingChannelRow, links: ChannelLinkRow[]): Channel {
  const secrets = openSecrets(ctx.deps, row);
  const c = row.config;
  const config: Channel['config'] =
    row.type === 'telegram'
      ? { botUsername: c.botUsername ?? '', botId: c.botId ?? '', botTokenSet: Boolean(secrets.botToken) }
      : row.type === 'whatsapp'
        ? {
            phoneNumberId: c.phoneNumberId ?? '',
            accessTokenSet: Boolean(secrets.accessToken),
            verifyTokenSet: Boolean(row.webhookSecretHash),
            appSecretSet: Boolean(secrets.appSecret),
          }
        : { allowedOrigins: c.allowedOrigins ?? [] };
  return {
    id: row.id,
    accountId: row.accountId,
    type: row.type,
    agentId: row.agentId,
    config,
    ...(row.type === 'telegram' ? { webhookUrl: telegramWebhookUrl(ctx.deps) } : {}),
    ...(row.type === 'whatsapp' ? { webhookUrl: whatsappWebhookUrl(ctx.deps) } : {}),
    ...(row.type === 'webchat' ? { widgetSnippet: widgetSnippet(ctx.deps, row.id) } : {}),
    linkedUsers: links.map((l) => ({
      externalUserId: l.externalUserId,
      displayName: l.displayName,
      linkedAt: l.createdAt.toISOString(),
    })),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** One channel with its linked people (a web chat links nobody: no read). */
async function withLinks(ctx: ServiceContext, row: MessagingChannelRow): Promise<Channel> {
  return toChannel(ctx, row, row.type === 'webchat' ? [] : await repo.linksOf(ctx.db, row.id));
}

/** The caller's channel or 404. */
export async function ownedChannel(ctx: ServiceContext, channelId: string): Promise<MessagingChannelRow> {
  requireScope(ctx, SCOPE);
  const row = await repo.findChannel(ctx.db, ctx.accountId, channelId);
  if (!row) throw new NotFoundError(`Messaging channel ${channelId} not found`);
  return row;
}

/** The caller's agent by id or `default` (404 otherwise): the channel scope alone may name it. */
async function agentIdOf(ctx: ServiceContext, agentId: string): Promise<string> {
  const id = await existingAgentId(ctx, agentId);
  if (!id) throw new NotFoundError(`Agent ${agentId} not found`);
  return id;
}

function configError(field: string, message: string): ValidationError {
  return new ValidationError(message, [{ field: `body.config.${field}`, message }]);
}

/** Asks Telegram who the bot is: 422 for a token it refuses, 502 when it cannot be reached. */
async function checkBot(deps: Deps, botToken: string) {
  try {
    const bot = await getMe(deps.config.channels, botToken);
    if (!bot) throw configError('botToken', 'Telegram refused the bot token (check it with @BotFather)');
    return bot;
  } catch (err) {
    if (err instanceof TelegramError) throw new BadGatewayError(`Could not reach Telegram: ${err.message}`);
    throw err;
  }
}

/** Registers the channel's webhook with its secret; a refusal is a 502 naming Telegram's reason. */
async function setTelegramWebhook(deps: Deps, botToken: string, secret: string): Promise<void> {
  try {
    await telegramCall(deps.config.channels, botToken, 'setWebhook', {
      url: telegramWebhookUrl(deps),
      secret_token: secret,
      allowed_updates: ['message'],
    });
  } catch (err) {
    if (err instanceof TelegramError) throw new BadGatewayError(`Telegram refused the webhook: ${err.message}`);
    throw err;
  }
}

async function deleteTelegramWebhook(ctx: ServiceContext, botToken: string): Promise<void> {
  try {
    await telegramCall(ctx.deps.config.channels, botToken, 'deleteWebhook', {});
  } catch (err) {
    // The channel goes anyway: a bot whose token was revoked cannot be told.
    ctx.log.warn({ err: (err as Error).message }, 'telegram deleteWebhook failed');
  }
}

const conflict = (what: string) => new ConflictError(`This ${what} is already attached to another messaging channel`);

export async function createChannel(ctx: ServiceContext, input: CreateChannel): Promise<Channel> {
  requireScope(ctx, SCOPE);
  const agentId = await agentIdOf(ctx, input.agentId);
  const id = newId('messagingChannel');
  const base = { id, accountId: ctx.accountId, agentId, type: input.type, runAs: delegationOf(ctx.actor) };
  if (input.type === 'telegram') {
    const { botToken } = input.config;
    const bot = await checkBot(ctx.deps, botToken);
    const secret = randomBytes(32).toString('base64url');
    // The row is written first: its unique (type, bot id) claims the bot, so two racing creations never both
    // register a webhook.
    const row = await insertOrConflict(
      {
        ...base,
        config: { botId: String(bot.id), botUsername: bot.username },
        secretsEnc: sealSecrets(ctx.deps, id, { botToken }),
        externalId: String(bot.id),
        webhookSecretHash: sha256Hex(secret),
      },
      ctx,
      'bot',
    );
    try {
      await setTelegramWebhook(ctx.deps, botToken, secret);
    } catch (err) {
      await repo.deleteChannel(ctx.db, ctx.accountId, id);
      throw err;
    }
    return toChannel(ctx, row, []);
  }
  if (input.type === 'whatsapp') {
    const c = input.config;
    const row = await insertOrConflict(
      {
        ...base,
        config: { phoneNumberId: c.phoneNumberId },
        secretsEnc: sealSecrets(ctx.deps, id, {
          accessToken: c.accessToken,
          ...(c.appSecret ? { appSecret: c.appSecret } : {}),
        }),
        externalId: c.phoneNumberId,
        webhookSecretHash: sha256Hex(c.verifyToken),
      },
      ctx,
      'phone number',
    );
    return toChannel(ctx, row, []);
  }
  const row = await repo.insertChannel(ctx.db, {
    ...base,
    config: { allowedOrigins: input.config.allowedOrigins ?? [] },
  });
  return toChannel(ctx, row, []);
}

async function insertOrConflict(
  row: Parameters<typeof repo.insertChannel>[1],
  ctx: ServiceContext,
  what: string,
): Promise<MessagingChannelRow> {
  try {
    return await repo.insertChannel(ctx.db, row);
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(what);
    throw err;
  }
}

export async function listChannels(
  ctx: ServiceContext,
  p: { page: number; limit: number; sortOrder: 'asc' | 'desc' },
): Promise<Page<Channel>> {
  requireScope(ctx, SCOPE);
  const { rows, total } = await repo.listChannels(ctx.db, ctx.accountId, p);
  const links = await repo.linksOfChannels(
    ctx.db,
    rows.filter((r) => r.type !== 'webchat').map((r) => r.id),
  );
  return toPage(
    rows.map((r) => toChannel(ctx, r, links.get(r.id) ?? [])),
    total,
    p,
  );
}

export async function getChannel(ctx: ServiceContext, channelId: string): Promise<Channel> {
  return withLinks(ctx, await ownedChannel(ctx, channelId));
}

function parseConfig<T>(
  schema: {
    safeParse(
      v: unknown,
    ): { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
  },
  value: unknown,
): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new ValidationError(
    'Invalid config',
    parsed.error.issues.map((i) => ({
      field: ['body', 'config', ...i.path.map(String)].join('.'),
      message: i.message,
    })),
  );
}

/**
 * Changes the agent and/or config fields of the channel's type (a partial config: fields not given stay). A new
 * Telegram bot token is checked and the webhook moved to it with a new secret; a new WhatsApp phone number must
 * not serve another channel.
 */
export async function updateChannel(ctx: ServiceContext, channelId: string, input: UpdateChannel): Promise<Channel> {
  const row = await ownedChannel(ctx, channelId);
  // Whoever changes the channel is who it answers for from now on.
  const patch: Parameters<typeof repo.updateChannel>[3] = { runAs: delegationOf(ctx.actor) };
  if (input.agentId !== undefined) patch.agentId = await agentIdOf(ctx, input.agentId);
  if (input.config !== undefined) {
    const secrets = openSecrets(ctx.deps, row);
    if (row.type === 'telegram') {
      const c = parseConfig(TelegramConfig.partial(), input.config);
      if (c.botToken && c.botToken !== secrets.botToken) {
        const bot = await checkBot(ctx.deps, c.botToken);
        const other = await repo.findChannelByExternalId(ctx.db, 'telegram', String(bot.id));
        if (other && other.id !== row.id) throw conflict('bot');
        const secret = randomBytes(32).toString('base64url');
        await setTelegramWebhook(ctx.deps, c.botToken, secret);
        if (secrets.botToken && row.externalId !== String(bot.id)) await deleteTelegramWebhook(ctx, secrets.botToken);
        Object.assign(patch, {
          config: { botId: String(bot.id), botUsername: bot.username } satisfies ChannelPublicConfig,
          secretsEnc: sealSecrets(ctx.deps, row.id, { botToken: c.botToken }),
          externalId: String(bot.id),
          webhookSecretHash: sha256Hex(secret),
        });
      }
    } else if (row.type === 'whatsapp') {
      const c = parseConfig(WhatsappConfig.partial(), input.config);
      if (c.phoneNumberId)
        Object.assign(patch, { config: { phoneNumberId: c.phoneNumberId }, externalId: c.phoneNumberId });
      if (c.verifyToken) patch.webhookSecretHash = sha256Hex(c.verifyToken);
      if (c.accessToken || c.appSecret) {
        patch.secretsEnc = sealSecrets(ctx.deps, row.id, {
          ...secrets,
          ...(c.accessToken ? { accessToken: c.accessToken } : {}),
          ...(c.appSecret ? { appSecret: c.appSecret } : {}),
        });
      }
    } else {
      const c = parseConfig(WebchatConfig, input.config);
      if (c.allowedOrigins) patch.config = { allowedOrigins: c.allowedOrigins };
    }
  }
  let updated: MessagingChannelRow | undefined;
  try {
    updated = await repo.updateChannel(ctx.db, ctx.accountId, row.id, patch);
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(row.type === 'telegram' ? 'bot' : 'phone number');
    throw err;
  }
  if (!updated) throw new NotFoundError(`Messaging channel ${channelId} not found`);
  return withLinks(ctx, updated);
}

/** Deletes the channel (its chats, links and deliveries with it); a Telegram bot's webhook is removed first. */
export async function deleteChannel(ctx: ServiceContext, channelId: string): Promise<void> {
  const row = await ownedChannel(ctx, channelId);
  if (row.type === 'telegram') {
    const { botToken } = openSecrets(ctx.deps, row);
    if (botToken) await deleteTelegramWebhook(ctx, botToken);
  }
  if (!(await repo.deleteChannel(ctx.db, ctx.accountId, row.id))) {
    throw new NotFoundError(`Messaging channel ${channelId} not found`);
  }
}

/**
 * Before an agent is deleted (its channels go with it by cascade): its Telegram bots are told to stop sending
 * us updates, as deleting the channel itself does. A failure is logged and does not stop the deletion.
 */
export async function releaseChannelsOfAgent(ctx: ServiceContext, agentId: string): Promise<void> {
  for (const row of await repo.channelsOfAgent(ctx.db, ctx.accountId, agentId)) {
    if (row.type !== 'telegram') continue;
    const { botToken } = openSecrets(ctx.deps, row);
    if (botToken) await deleteTelegramWebhook(ctx, botToken);
  }
}

/** Deleting an agent first releases its channels' Telegram webhooks. */
export const channelAgentDeletion: AgentDeletionHook = { before: releaseChannelsOfAgent };

const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/** Normalizes a code as a user may type it back (case, spaces). */
export function linkCodeHash(channelId: string, code: string): string {
  return sha256Hex(`${channelId}:${code.trim().toUpperCase()}`);
}

/**
 * A single-use code (15 minutes) that ties the external user who sends it to this account: on Telegram through
 * the deep link `t.me/<bot>?start=CODE`, on WhatsApp by sending `link CODE` to the number. The code keeps the
 * caller's restriction set: the person linked by it acts with no more than its maker could.
 */
export async function createLinkCode(ctx: ServiceContext, channelId: string): Promise<LinkCode> {
  const row = await ownedChannel(ctx, channelId);
  if (row.type === 'webchat') {
    throw new ValidationError('Web chat visitors are anonymous: only Telegram and WhatsApp channels link accounts', [
      { field: 'channelId', message: 'a webchat channel' },
    ]);
  }
  const bytes = randomBytes(10);
  const code = [...bytes].map((b) => CODE_ALPHABET[b % CODE_ALPHABET.length]).join('');
  const expiresAt = new Date(Date.now() + LINK_CODE_TTL_MS);
  await repo.insertLinkCode(ctx.db, {
    codeHash: linkCodeHash(row.id, code),
    channelId: row.id,
    expiresAt,
    runAs: delegationOf(ctx.actor),
  });
  if (row.type === 'telegram') {
    const link = `https://t.me/${row.config.botUsername ?? ''}?start=${code}`;
    return {
      code,
      expiresAt: expiresAt.toISOString(),
      link,
      instructions: `Open ${link} in Telegram and press Start within 15 minutes.`,
    };
  }
  return {
    code,
    expiresAt: expiresAt.toISOString(),
    instructions: `Send "link ${code}" to the WhatsApp number of this channel within 15 minutes.`,
  };
}

/** Removes the tie of one external user (or of all): they are unknown senders again. */
export async function unlinkAccount(
  ctx: ServiceContext,
  channelId: string,
  externalUserId: string | undefined,
): Promise<{ unlinked: number }> {
  const row = await ownedChannel(ctx, channelId);
  return { unlinked: await repo.deleteLinks(ctx.db, row.id, externalUserId) };
}

/** The channel's recent deliveries, newest first: what came in, what was answered, and why one failed. */
export async function listDeliveries(ctx: ServiceContext, channelId: string, limit: number): Promise<Delivery[]> {
  const row = await ownedChannel(ctx, channelId);
  return (await repo.recentDeliveries(ctx.db, row.id, limit)).map((d) => ({
    key: d.key,
    direction: d.direction,
    chatId: d.chatId,
    senderId: d.senderId,
    status: d.status,
    error: d.error,
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
  }));
}

/**
 * Runs the channel's agent on one message in the conversation the chat keeps (`chat.conversationId`), and
 * makes the chat keep the conversation the answer came in: when the owner deleted the old one, a new one.
 */
export async function askChannelAgent(
  ctx: ServiceContext,
  channel: MessagingChannelRow,
  chat: Pick<ChannelChatRow, 'chatId' | 'conversationId'>,
  content: string,
  opts: ChatOptions,
): Promise<ChatOutcome> {
  const ask = (conversationId: string | null) =>
    chatWithAgent(
      ctx,
      channel.agentId,
      { messages: [{ role: 'user', content }], ...(conversationId ? { conversationId } : {}) },
      { via: 'channel', ...opts },
    );
  let outcome: ChatOutcome;
  try {
    outcome = await ask(chat.conversationId);
  } catch (err) {
    if (!(err instanceof NotFoundError) || !chat.conversationId) throw err;
    outcome = await ask(null);
  }
  if (outcome.conversationId !== chat.conversationId) {
    await repo.setChatConversation(ctx.db, channel.id, chat.chatId, outcome.conversationId);
  }
  return outcome;
}
