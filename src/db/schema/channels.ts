import { index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';
import { agents } from './agents.ts';
import { type StoredDelegation, ts } from './columns.ts';

export type ChannelType = 'telegram' | 'whatsapp' | 'webchat';

/** The public part of a channel's config (secrets live sealed in `secretsEnc`). */
export interface ChannelPublicConfig {
  /** telegram: the bot's id and username, read from getMe. */
  botId?: string;
  botUsername?: string;
  /** whatsapp: the Cloud API phone number id. */
  phoneNumberId?: string;
  /** webchat: browser origins allowed to post; empty: any origin. */
  allowedOrigins?: string[];
}

/** A messaging channel (SPEC §2): an agent put in front of people on Telegram, WhatsApp or a web chat widget. */
export const messagingChannels = pgTable(
  'messaging_channels',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    type: text('type').$type<ChannelType>().notNull(),
    config: jsonb('config').$type<ChannelPublicConfig>().notNull().default({}),
    /** Sealed JSON of the secret config fields (botToken, accessToken, appSecret), the row id bound as AAD. */
    secretsEnc: text('secrets_enc'),
    /** The platform's identity of the channel (Telegram bot id, WhatsApp phone number id): one channel each. */
    externalId: text('external_id'),
    /** SHA-256 of what the platform presents to find the channel (Telegram secret_token, WhatsApp verifyToken). */
    webhookSecretHash: text('webhook_secret_hash'),
    /**
     * The restriction set of whoever last created or changed the channel (auth/delegation.ts): its agent answers
     * with it. Null on channels made before it was kept (read as the narrowest set).
     */
    runAs: jsonb('run_as').$type<StoredDelegation>(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('messaging_channels_account_idx').on(t.accountId, t.createdAt),
    index('messaging_channels_agent_idx').on(t.agentId),
    uniqueIndex('messaging_channels_external_idx').on(t.type, t.externalId),
    index('messaging_channels_webhook_idx').on(t.webhookSecretHash),
  ],
);

export type DeliveryStatus = 'received' | 'answered' | 'replied' | 'ignored' | 'unlinked' | 'failed';

/**
 * One inbound update (or outbound push) of a channel, keyed by the platform's id: the primary key makes a
 * duplicate delivery (even a concurrent one, on another instance) a no-op. It also carries the reply across a
 * crash: once the agent answered, a retried job only sends what is left.
 */
export const channelDeliveries = pgTable(
  'channel_deliveries',
  {
    channelId: text('channel_id')
      .notNull()
      .references(() => messagingChannels.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    accountId: text('account_id').notNull(),
    /** `in` (an update from the platform) or `out` (a push, e.g. a scheduled task's result). */
    direction: text('direction').$type<'in' | 'out'>().notNull().default('in'),
    chatId: text('chat_id'),
    senderId: text('sender_id'),
    /** The platform's update as received (inbound) or the text to push (outbound). */
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull().default({}),
    status: text('status').$type<DeliveryStatus>().notNull().default('received'),
    reply: text('reply'),
    /** Reply parts already sent (a retry sends the rest). */
    sentParts: integer('sent_parts').notNull().default(0),
    conversationId: text('conversation_id'),
    error: text('error'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.channelId, t.key] }),
    index('channel_deliveries_recent_idx').on(t.channelId, t.createdAt),
  ],
);

/** An external chat of a channel: its conversation, its last inbound message (WhatsApp's 24-hour window). */
export const channelChats = pgTable(
  'channel_chats',
  {
    channelId: text('channel_id')
      .notNull()
      .references(() => messagingChannels.id, { onDelete: 'cascade' }),
    chatId: text('chat_id').notNull(),
    conversationId: text('conversation_id'),
    lastInboundAt: ts('last_inbound_at'),
    /** When the how-to-link hint was last sent here (at most hourly). */
    lastHintAt: ts('last_hint_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.channelId, t.chatId] })],
);

/** External users tied to the channel's account by a link code. */
export const channelLinks = pgTable(
  'channel_links',
  {
    channelId: text('channel_id')
      .notNull()
      .references(() => messagingChannels.id, { onDelete: 'cascade' }),
    externalUserId: text('external_user_id').notNull(),
    /** Where the user talks to the bot privately (pushes go there). */
    chatId: text('chat_id').notNull(),
    displayName: text('display_name').notNull().default(''),
    /**
     * The restriction set of whoever made the link code this person used: they act with it and the channel's
     * together. Null on links made before it was kept (read as the narrowest set).
     */
    runAs: jsonb('run_as').$type<StoredDelegation>(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.channelId, t.externalUserId] })],
);

/** Single-use link codes, stored as hashes. */
export const channelLinkCodes = pgTable('channel_link_codes', {
  codeHash: text('code_hash').primaryKey(),
  channelId: text('channel_id')
    .notNull()
    .references(() => messagingChannels.id, { onDelete: 'cascade' }),
  expiresAt: ts('expires_at').notNull(),
  usedAt: ts('used_at'),
  /** The restriction set of whoever made the code, handed to the link it makes. */
  runAs: jsonb('run_as').$type<StoredDelegation>(),
  createdAt: ts('created_at').notNull().defaultNow(),
});

/** Web chat visitors: the token a visitor's browser holds is stored only as its SHA-256. */
export const webchatVisitors = pgTable(
  'webchat_visitors',
  {
    id: text('id').primaryKey(),
    channelId: text('channel_id')
      .notNull()
      .references(() => messagingChannels.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('webchat_visitors_token_idx').on(t.tokenHash)],
);

/** Daily counters of a channel (`*` for the channel itself, or a visitor id): one atomic row each. */
export const channelDailyUsage = pgTable(
  'channel_daily_usage',
  {
    channelId: text('channel_id')
      .notNull()
      .references(() => messagingChannels.id, { onDelete: 'cascade' }),
    subject: text('subject').notNull(),
    day: text('day').notNull(),
    count: integer('count').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.channelId, t.subject, t.day] })],
);

export type MessagingChannelRow = typeof messagingChannels.$inferSelect;
export type ChannelDeliveryRow = typeof channelDeliveries.$inferSelect;
export type ChannelChatRow = typeof channelChats.$inferSelect;
export type ChannelLinkRow = typeof channelLinks.$inferSelect;
