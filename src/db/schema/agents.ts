import { sql } from 'drizzle-orm';
import {
  bigserial,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  real,
  text,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';
import { bytea, GIN_SEARCHED, ts, tsvector } from './columns.ts';

/** SPEC §2 Agent `usageLimits`; every field optional (absent: no limit). */
export interface AgentUsageLimits {
  dailyMessagesPerUser?: number | undefined;
  monthlyCreditsCap?: number | undefined;
  limitReachedMessage?: string | undefined;
}

/** An account's agent (SPEC §2). One per account may be its default (partial unique index). */
export const agents = pgTable(
  'agents',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    llm: text('llm').notNull(),
    personality: text('personality').notNull().default(''),
    description: text('description').notNull().default(''),
    temperature: real('temperature').notNull().default(0.7),
    firstPrompt: text('first_prompt').notNull().default(''),
    enabledBuiltInTools: text('enabled_built_in_tools').array().notNull(),
    billingAccountType: text('billing_account_type').notNull().default('owner'),
    usageLimits: jsonb('usage_limits').$type<AgentUsageLimits>().notNull().default({}),
    isDefault: boolean('is_default').notNull().default(false),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('agents_account_created_idx').on(t.accountId, t.createdAt),
    uniqueIndex('agents_account_default_idx').on(t.accountId).where(sql`${t.isDefault}`),
  ],
);

/** A conversation with an agent, of one end user (`owner` for the account's own chats). */
export const conversations = pgTable(
  'conversations',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    endUserId: text('end_user_id').notNull(),
    title: text('title').notNull().default(''),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    lastActivityAt: ts('last_activity_at').notNull().defaultNow(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('conversations_agent_activity_idx').on(t.agentId, t.lastActivityAt)],
);

export type MessageRole = 'system' | 'user' | 'assistant' | 'tool';

/** Every message of a conversation in order (`seq`): what users, the agent and its tools said. */
export const messages = pgTable(
  'messages',
  {
    id: text('id').primaryKey(),
    seq: bigserial('seq', { mode: 'number' }).notNull(),
    conversationId: text('conversation_id')
      .notNull()
      .references(() => conversations.id, { onDelete: 'cascade' }),
    role: text('role').$type<MessageRole>().notNull(),
    content: text('content'),
    /** An assistant message's tool calls, in OpenAI's shape. */
    toolCalls:
      jsonb('tool_calls').$type<{ id: string; type: 'function'; function: { name: string; arguments: string } }[]>(),
    /** A tool message: the call it answers and the tool's name. */
    toolCallId: text('tool_call_id'),
    toolName: text('tool_name'),
    /** Set on the assistant message that marks a failed turn (content null): why the agent did not answer. */
    error: text('error'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('messages_conversation_seq_idx').on(t.conversationId, t.seq)],
);

/**
 * A chat turn being answered: its lease is renewed while the run lives, so a row whose lease ran out belongs to
 * an instance that died, and the turn is marked failed (`agents.fail-orphaned-runs`). Gone once the run ends.
 */
export const conversationRuns = pgTable(
  'conversation_runs',
  {
    id: text('id').primaryKey(),
    conversationId: text('conversation_id')
      .notNull()
      .references(() => conversations.id, { onDelete: 'cascade' }),
    leaseExpiresAt: ts('lease_expires_at').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('conversation_runs_lease_idx').on(t.leaseExpiresAt)],
);

/** What happened in a conversation, in order (`id`), for its SSE stream and its replay (`Last-Event-ID`). */
export const conversationEvents = pgTable(
  'conversation_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    conversationId: text('conversation_id')
      .notNull()
      .references(() => conversations.id, { onDelete: 'cascade' }),
    type: text('type').notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('conversation_events_conversation_idx').on(t.conversationId, t.id)],
);

/**
 * What an agent remembers of an end user across conversations: short facts, searched by full text (`search`,
 * written by the repo) and trigram similarity.
 */
export const agentMemories = pgTable(
  'agent_memories',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    endUserId: text('end_user_id').notNull(),
    content: text('content').notNull(),
    search: tsvector('search'),
    /** The conversation it was learnt in, if any. */
    conversationId: text('conversation_id'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('agent_memories_agent_user_idx').on(t.agentId, t.endUserId, t.updatedAt),
    index('agent_memories_search_idx').using('gin', t.search).with(GIN_SEARCHED),
    index('agent_memories_content_trgm_idx').using('gin', t.content.op('gin_trgm_ops')).with(GIN_SEARCHED),
  ],
);

/** A file uploaded for agent chat; stored in the database so every instance serves it. */
export const chatFiles = pgTable(
  'chat_files',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    filename: text('filename').notNull(),
    mimeType: text('mime_type').notNull(),
    kind: text('kind').notNull(),
    size: integer('size').notNull(),
    bytes: bytea('bytes').notNull(),
    /** The text read from it (documents); null for images. */
    text: text('text'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('chat_files_account_idx').on(t.accountId, t.createdAt)],
);

/** Messages per agent, end user and UTC day: one atomic counter row each (`dailyMessagesPerUser`). */
export const agentDailyUsage = pgTable(
  'agent_daily_usage',
  {
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    endUserId: text('end_user_id').notNull(),
    day: text('day').notNull(),
    messages: integer('messages').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.endUserId, t.day] })],
);

/** Credits an agent spent per calendar month (UTC), against `monthlyCreditsCap`. */
export const agentMonthlySpend = pgTable(
  'agent_monthly_spend',
  {
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    month: text('month').notNull(),
    credits: integer('credits').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.month] })],
);

export type AgentRow = typeof agents.$inferSelect;
export type ConversationRow = typeof conversations.$inferSelect;
export type MessageRow = typeof messages.$inferSelect;
export type ConversationEventRow = typeof conversationEvents.$inferSelect;
export type ConversationRunRow = typeof conversationRuns.$inferSelect;
export type AgentMemoryRow = typeof agentMemories.$inferSelect;
export type ChatFileRow = typeof chatFiles.$inferSelect;
