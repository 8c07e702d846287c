import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';
import { type StoredDelegation, ts } from './columns.ts';

export const MCP_TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const;
export type McpTaskStatus = (typeof MCP_TASK_STATUSES)[number];

/**
 * A task-augmented MCP `tools/call` (protocol 2025-11-25 tasks): its state, its result once terminal, and the
 * progress notifications queued for `tasks/result`. Any instance answers the polls; the one that accepted the
 * call runs it. Rows are gone after `expires_at` (created + ttl), whatever their status (mcp.tasks-cleanup).
 */
export const mcpTasks = pgTable(
  'mcp_tasks',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    /** The session, PAT or OAuth grant that created it (the grant stays the same across refreshes). */
    tokenId: text('token_id').notNull(),
    /** The creating token's restriction set (auth/delegation.ts): a poll needs a token allowed at least as much. */
    runAs: jsonb('run_as').$type<StoredDelegation>().notNull(),
    toolName: text('tool_name').notNull(),
    status: text('status').$type<McpTaskStatus>().notNull().default('working'),
    statusMessage: text('status_message'),
    /** The CallToolResult, once completed or failed. */
    result: jsonb('result').$type<Record<string, unknown>>(),
    /** JSON-RPC notifications (progress) waiting for a `tasks/result` stream, oldest first. */
    messages: jsonb('messages').$type<Record<string, unknown>[]>().notNull().default([]),
    ttlMs: integer('ttl_ms').notNull(),
    pollIntervalMs: integer('poll_interval_ms').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [
    index('mcp_tasks_account_created_idx').on(t.accountId, t.createdAt),
    index('mcp_tasks_expires_idx').on(t.expiresAt),
    // The sweep that fails live tasks no instance has touched for a while.
    index('mcp_tasks_live_updated_idx').on(t.updatedAt).where(sql`status IN ('working', 'input_required')`),
  ],
);

export type McpTaskRow = typeof mcpTasks.$inferSelect;
