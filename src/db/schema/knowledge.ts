import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import {
  PAGE_TYPES,
  type PageType,
  RELATIONSHIP_TYPES,
  type RelationshipType,
  SOURCE_STATUSES,
  SOURCE_TYPES,
  type SourceStatus,
  type SourceType,
} from '../values.ts';
import { accounts } from './accounts.ts';
import { conversations } from './agents.ts';
import { GIN_SEARCHED, ts, tsvector } from './columns.ts';

export {
  PAGE_TYPES,
  type PageType,
  RELATIONSHIP_TYPES,
  type RelationshipType,
  SOURCE_STATUSES,
  SOURCE_TYPES,
  type SourceStatus,
  type SourceType,
};

export interface Relationship {
  targetSlug: string;
  type: RelationshipType;
}
/** Who wrote a page's latest version: the compiler never overwrites `user`. */
export type CompiledBy = 'compiler' | 'user';

/** A wiki of an account. Exactly one per account is the default (partial unique index). */
export const knowledgeBases = pgTable(
  'knowledge_bases',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    customInstructions: text('custom_instructions').notNull().default(''),
    maxPagesLimit: integer('max_pages_limit').notNull().default(500),
    isDefault: boolean('is_default').notNull().default(false),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('knowledge_bases_account_name_idx').on(t.accountId, sql`lower(${t.name})`),
    uniqueIndex('knowledge_bases_account_default_idx').on(t.accountId).where(sql`${t.isDefault}`),
  ],
);

/** The account-level knowledge settings (SPEC §2 Knowledge config); made on first read. */
export const knowledgeConfig = pgTable('knowledge_config', {
  accountId: text('account_id')
    .primaryKey()
    .references(() => accounts.id, { onDelete: 'cascade' }),
  enabled: boolean('enabled').notNull().default(true),
  autoIngestConversations: boolean('auto_ingest_conversations').notNull().default(false),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

/**
 * A wiki page. `search` is the weighted tsvector (title A, aliases and tags B, content C) the repo writes with
 * every change; `source_ids` are the distinct sources that fed the page (its confidence); `backlink_count`
 * is recounted from `knowledge_links` after every write that moves a link.
 */
export const knowledgePages = pgTable(
  'knowledge_pages',
  {
    id: text('id').primaryKey(),
    kbId: text('kb_id')
      .notNull()
      .references(() => knowledgeBases.id, { onDelete: 'cascade' }),
    accountId: text('account_id').notNull(),
    slug: text('slug').notNull(),
    title: text('title').notNull(),
    content: text('content').notNull(),
    summary: text('summary').notNull().default(''),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    aliases: text('aliases').array().notNull().default(sql`'{}'::text[]`),
    pageType: text('page_type').$type<PageType>().notNull(),
    relationships: jsonb('relationships').$type<Relationship[]>().notNull().default([]),
    sourceIds: text('source_ids').array().notNull().default(sql`'{}'::text[]`),
    lastCompiledBy: text('last_compiled_by').$type<CompiledBy>().notNull(),
    version: integer('version').notNull().default(1),
    backlinkCount: integer('backlink_count').notNull().default(0),
    search: tsvector('search'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('knowledge_pages_kb_slug_idx').on(t.kbId, t.slug),
    index('knowledge_pages_search_idx').using('gin', t.search).with(GIN_SEARCHED),
    index('knowledge_pages_title_trgm_idx').using('gin', t.title.op('gin_trgm_ops')).with(GIN_SEARCHED),
    index('knowledge_pages_tags_idx').using('gin', t.tags).with(GIN_SEARCHED),
    index('knowledge_pages_kb_updated_idx').on(t.kbId, t.updatedAt),
  ],
);

/** Every version a page had, the current one included: who wrote it and from which source. */
export const knowledgePageVersions = pgTable(
  'knowledge_page_versions',
  {
    id: text('id').primaryKey(),
    pageId: text('page_id')
      .notNull()
      .references(() => knowledgePages.id, { onDelete: 'cascade' }),
    kbId: text('kb_id')
      .notNull()
      .references(() => knowledgeBases.id, { onDelete: 'cascade' }),
    version: integer('version').notNull(),
    title: text('title').notNull(),
    content: text('content').notNull(),
    tags: text('tags').array().notNull(),
    compiledBy: text('compiled_by').$type<CompiledBy>().notNull(),
    sourceId: text('source_id'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('knowledge_page_versions_page_version_idx').on(t.pageId, t.version)],
);

/** Outgoing links of a page: `[[wikilinks]]` in its content (`kind` = `link`) and its typed relationships. */
export const knowledgeLinks = pgTable(
  'knowledge_links',
  {
    kbId: text('kb_id')
      .notNull()
      .references(() => knowledgeBases.id, { onDelete: 'cascade' }),
    fromPageId: text('from_page_id')
      .notNull()
      .references(() => knowledgePages.id, { onDelete: 'cascade' }),
    toSlug: text('to_slug').notNull(),
    kind: text('kind').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.fromPageId, t.toSlug, t.kind] }),
    index('knowledge_links_target_idx').on(t.kbId, t.toSlug),
  ],
);

/** Material poured into a base; compiled into pages by the `knowledge.compile` job. */
export const knowledgeSources = pgTable(
  'knowledge_sources',
  {
    id: text('id').primaryKey(),
    kbId: text('kb_id')
      .notNull()
      .references(() => knowledgeBases.id, { onDelete: 'cascade' }),
    accountId: text('account_id').notNull(),
    type: text('type').$type<SourceType>().notNull(),
    name: text('name').notNull(),
    rawContent: text('raw_content'),
    url: text('url'),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    status: text('status').$type<SourceStatus>().notNull(),
    error: text('error'),
    /** SHA-256 of the text last compiled: an unchanged source is skipped. */
    compiledHash: text('compiled_hash'),
    compiledAt: ts('compiled_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('knowledge_sources_kb_created_idx').on(t.kbId, t.createdAt)],
);

/** What the compiler and lint did, newest first when read. */
export const knowledgeLogs = pgTable(
  'knowledge_logs',
  {
    id: text('id').primaryKey(),
    kbId: text('kb_id')
      .notNull()
      .references(() => knowledgeBases.id, { onDelete: 'cascade' }),
    kind: text('kind').$type<'compile' | 'lint' | 'edit'>().notNull(),
    level: text('level').$type<'info' | 'warn' | 'error'>().notNull(),
    message: text('message').notNull(),
    details: jsonb('details').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('knowledge_logs_kb_created_idx').on(t.kbId, t.createdAt)],
);

/**
 * Which agent conversations were captured as `conversation` sources (autoIngestConversations), and up to which
 * activity: a conversation active again after that is captured again, into the same source.
 */
export const knowledgeConversationTrackers = pgTable('knowledge_conversation_trackers', {
  conversationId: text('conversation_id')
    .primaryKey()
    .references(() => conversations.id, { onDelete: 'cascade' }),
  kbId: text('kb_id')
    .notNull()
    .references(() => knowledgeBases.id, { onDelete: 'cascade' }),
  sourceId: text('source_id').notNull(),
  capturedActivityAt: ts('captured_activity_at').notNull(),
  ingestedAt: ts('ingested_at').notNull().defaultNow(),
});

export type KnowledgeBaseRow = typeof knowledgeBases.$inferSelect;
export type KnowledgeConfigRow = typeof knowledgeConfig.$inferSelect;
export type KnowledgePageRow = typeof knowledgePages.$inferSelect;
export type KnowledgePageVersionRow = typeof knowledgePageVersions.$inferSelect;
export type KnowledgeSourceRow = typeof knowledgeSources.$inferSelect;
export type KnowledgeLogRow = typeof knowledgeLogs.$inferSelect;
