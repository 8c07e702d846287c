import { bigint, index, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';
import { ts } from './columns.ts';

/**
 * The activity log (modules/activity): one row per tool call made for the account, agent run and connection
 * event. Who acted is kept as the token's kind and ids (a PAT's or an OAuth app's name is looked up when read);
 * `args_summary`, `result_summary` and `error` are redacted and cut short before they are written.
 * `activity.purge` deletes rows older than ACTIVITY_RETENTION_DAYS.
 */
export const activity = pgTable(
  'activity',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    /** `tool-call`, `agent-run` or `connection`. */
    kind: text('kind').notNull(),
    /** The path it came through: `api`, `mcp`, `use-agent`, `agent-chat`, `task`, `channel`, `system`. */
    via: text('via').notNull(),
    actorKind: text('actor_kind').notNull(),
    tokenId: text('token_id'),
    clientId: text('client_id'),
    agentId: text('agent_id'),
    agentName: text('agent_name'),
    connectionId: text('connection_id'),
    providerId: text('provider_id'),
    /** The tool's name, or the connection event (`created`, `refreshed`, `expired`, `error`, `revoked`). */
    tool: text('tool'),
    mode: text('mode'),
    /** `ok`, `error`, `refused` (a permission) or `blocked` (a prompt injection). */
    status: text('status').notNull(),
    durationMs: integer('duration_ms'),
    credits: bigint('credits', { mode: 'number' }).notNull().default(0),
    argsSummary: text('args_summary'),
    resultSummary: text('result_summary'),
    error: text('error'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    index('activity_account_created_idx').on(t.accountId, t.createdAt),
    index('activity_created_idx').on(t.createdAt),
  ],
);

export type ActivityRow = typeof activity.$inferSelect;
