import { boolean, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { CONNECTION_STATUSES, type ConnectionStatus } from '../values.ts';
import { accounts } from './accounts.ts';

export { CONNECTION_STATUSES, type ConnectionStatus };

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** Who the user is at the provider (SPEC §2 Connection.metadata, less what the catalog adds). */
export interface ConnectionMetadata {
  displayName: string;
  email?: string | undefined;
  avatar?: string | undefined;
}

/**
 * A user's link to an external service. Tokens are sealed with the key ring, the row id (and the column)
 * bound as associated data, so a ciphertext copied into another row does not open. `vars` are the
 * connection variables provider URLs use (a subdomain, Salesforce's instance URL, a discovered cloud id).
 */
export const connections = pgTable(
  'connections',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    providerId: text('provider_id').notNull(),
    providerUserId: text('provider_user_id').notNull(),
    scopes: text('scopes').array().notNull(),
    status: text('status').$type<ConnectionStatus>().notNull(),
    /** When the access token expires; null for tokens that do not. */
    expiresAt: ts('expires_at'),
    canRefresh: boolean('can_refresh').notNull(),
    /** `oauth`: tokens from the provider's OAuth flow; `api_key`: a token the user pasted (sent as the provider file's `apiKey.auth` says). */
    authType: text('auth_type').$type<'oauth' | 'api_key'>().notNull().default('oauth'),
    metadata: jsonb('metadata').$type<ConnectionMetadata>().notNull(),
    vars: jsonb('vars').$type<Record<string, string>>().notNull(),
    accessTokenEnc: text('access_token_enc').notNull(),
    refreshTokenEnc: text('refresh_token_enc'),
    /** Consecutive failed refreshes (5xx, timeouts); reset by a success. */
    refreshFailures: integer('refresh_failures').notNull().default(0),
    lastError: text('last_error'),
    /** The last successful refresh: a forced refresh started before it has nothing left to do. */
    refreshedAt: ts('refreshed_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('connections_account_provider_user_idx').on(t.accountId, t.providerId, t.providerUserId),
    index('connections_account_created_idx').on(t.accountId, t.createdAt),
    index('connections_expires_idx').on(t.expiresAt),
  ],
);

/**
 * An authorization started by `POST /connections/initiate`, keyed by the SHA-256 of its `state`: single
 * use (`used_at`), bound to the account, expiring after 10 minutes. The PKCE verifier is sealed (the hash
 * as associated data).
 */
export const oauthStates = pgTable(
  'oauth_states',
  {
    stateHash: text('state_hash').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    providerId: text('provider_id').notNull(),
    codeVerifierEnc: text('code_verifier_enc').notNull(),
    redirectUrl: text('redirect_url').notNull(),
    /** Connection variables and authorization options given at initiation (`providerParams`). */
    params: jsonb('params').$type<Record<string, unknown>>().notNull(),
    /**
     * SHA-256 of the nonce in the cookie of the browser that opened the authorization URL (set then, once):
     * the callback completes only in that browser, so a state cannot be carried into someone else's.
     */
    browserBindingHash: text('browser_binding_hash'),
    expiresAt: ts('expires_at').notNull(),
    usedAt: ts('used_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('oauth_states_expires_idx').on(t.expiresAt)],
);

/**
 * Tokens waiting for the fields a provider needs after OAuth (a subdomain ...). Keyed by the SHA-256 of
 * the unguessable pending id; the whole token answer is sealed in `payload_enc`. Single use, expiring.
 */
export const pendingConnections = pgTable(
  'pending_connections',
  {
    idHash: text('id_hash').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    providerId: text('provider_id').notNull(),
    payloadEnc: text('payload_enc').notNull(),
    redirectUrl: text('redirect_url').notNull(),
    expiresAt: ts('expires_at').notNull(),
    usedAt: ts('used_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('pending_connections_expires_idx').on(t.expiresAt)],
);

export type ConnectionRow = typeof connections.$inferSelect;
export type OAuthStateRow = typeof oauthStates.$inferSelect;
export type PendingConnectionRow = typeof pendingConnections.$inferSelect;
