import { bigint, index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';

/** One row per balance change, written in the same transaction as the balance update. */
export const creditTransactions = pgTable(
  'credit_transactions',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    /** Signed: positive adds credits, negative spends them. */
    amount: bigint('amount', { mode: 'number' }).notNull(),
    balanceAfter: bigint('balance_after', { mode: 'number' }).notNull(),
    type: text('type').notNull(),
    description: text('description').notNull().default(''),
    model: text('model'),
    promptTokens: integer('prompt_tokens'),
    completionTokens: integer('completion_tokens'),
    requestId: text('request_id'),
    idempotencyKey: text('idempotency_key'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    index('credit_tx_account_created_idx').on(t.accountId, t.createdAt),
    uniqueIndex('credit_tx_idempotency_idx').on(t.idempotencyKey),
  ],
);

export type CreditTransactionRow = typeof creditTransactions.$inferSelect;

/**
 * Credits set aside for a request in flight (its worst-case cost). Settling deletes the hold and records the
 * real cost; holds of a crashed instance expire and are released, so no credit is lost.
 */
export const creditHolds = pgTable(
  'credit_holds',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [index('credit_holds_expires_idx').on(t.expiresAt), index('credit_holds_account_idx').on(t.accountId)],
);
