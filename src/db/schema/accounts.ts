import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const accounts = pgTable(
  'accounts',
  {
    id: text('id').primaryKey(),
    email: text('email').notNull(),
    name: text('name').notNull(),
    avatar: text('avatar'),
    passwordHash: text('password_hash'),
    creditBalance: bigint('credit_balance', { mode: 'number' }).notNull().default(0),
    allowWhitelabel: boolean('allow_whitelabel').notNull().default(false),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('accounts_email_lower_idx').on(sql`lower(${t.email})`)],
);

export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    userAgent: text('user_agent'),
    expiresAt: ts('expires_at').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('sessions_token_hash_idx').on(t.tokenHash),
    index('sessions_account_idx').on(t.accountId),
    // The sweep of expired sessions.
    index('sessions_expires_idx').on(t.expiresAt),
  ],
);

export const personalAccessTokens = pgTable(
  'personal_access_tokens',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    tokenHash: text('token_hash').notNull(),
    /** First characters of the token, shown in lists so a user can tell tokens apart. */
    tokenPrefix: text('token_prefix').notNull(),
    scopes: text('scopes').array().notNull(),
    providerPermissions: jsonb('provider_permissions').$type<Record<string, 'read' | 'read-write'>>().notNull(),
    defaultProviderPermission: text('default_provider_permission').$type<'read' | 'read-write'>().notNull(),
    /** Knowledge bases the token may touch; null means every base of the account. */
    knowledgeBaseIds: text('knowledge_base_ids').array(),
    expiresAt: ts('expires_at').notNull(),
    lastUsedAt: ts('last_used_at'),
    revokedAt: ts('revoked_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('pats_token_hash_idx').on(t.tokenHash), index('pats_account_idx').on(t.accountId)],
);

export type AccountRow = typeof accounts.$inferSelect;
/**
 * SPEC §8's sign-in budget when Redis is not configured: one fixed window per key, shared by every instance.
 * The key is the SHA-256 of `ip:<address>` or `acct:<e-mail>`, so the e-mails tried are not kept in the clear.
 * Rows past `reset_at` are spent; `auth.sweep-expired` deletes them.
 */
export const signInAttempts = pgTable(
  'sign_in_attempts',
  {
    key: text('key').primaryKey(),
    count: integer('count').notNull(),
    resetAt: ts('reset_at').notNull(),
  },
  (t) => [index('sign_in_attempts_reset_idx').on(t.resetAt)],
);

export type SessionRow = typeof sessions.$inferSelect;
export type PersonalAccessTokenRow = typeof personalAccessTokens.$inferSelect;
