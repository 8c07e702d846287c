import { index, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export interface ClientBranding {
  /** A data URI of an image (PNG, JPEG, GIF, WEBP or SVG), at most 100 KB. */
  logo?: string | undefined;
  description?: string | undefined;
  /** `#rgb` or `#rrggbb`. */
  brandColor?: string | undefined;
}

/**
 * OAuth clients: those an account creates through `/auth-clients` (with an owner) and those registered
 * dynamically (RFC 7591, no owner, always `third-party`). The secret is sealed with the key ring, the row id
 * bound as associated data; the authorization server needs it in clear to check `client_secret_*`.
 */
export const authClients = pgTable(
  'auth_clients',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    type: text('type').$type<'public' | 'confidential'>().notNull(),
    roles: text('roles').array().notNull(),
    redirectUris: text('redirect_uris').array().notNull(),
    allowedScopes: text('allowed_scopes').array().notNull(),
    branding: jsonb('branding').$type<ClientBranding>().notNull(),
    secretCiphertext: text('secret_ciphertext'),
    /** Further RFC 7591 metadata of a dynamically registered client (application_type, logo_uri ...). */
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull(),
    registeredVia: text('registered_via').$type<'api' | 'dynamic' | 'metadata-document'>().notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('auth_clients_account_idx').on(t.accountId, t.createdAt)],
);

/**
 * Everything the authorization server stores (codes, refresh tokens, grants, browser sessions, interactions).
 * Rows are keyed by the SHA-256 of the artifact's id: a refresh token or code never sits here in clear.
 */
export const oauthArtifacts = pgTable(
  'oauth_artifacts',
  {
    model: text('model').notNull(),
    idHash: text('id_hash').notNull(),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    /** In clear: grant ids are not secrets, and revocation and the authorized-apps page look them up. */
    grantId: text('grant_id'),
    uidHash: text('uid_hash'),
    // Deleting an account or a client deletes its grants, sessions and tokens with it.
    accountId: text('account_id').references(() => accounts.id, { onDelete: 'cascade' }),
    clientId: text('client_id').references(() => authClients.id, { onDelete: 'cascade' }),
    expiresAt: ts('expires_at'),
    consumedAt: ts('consumed_at'),
    /**
     * Grant rows: the knowledge bases the user limited this app to on the consent screen (an extension, like a
     * PAT's `knowledge_base_ids`); null means every base of the account. Ours, not oidc-provider's: its adapter
     * never writes this column, so the grant's own saves keep it.
     */
    knowledgeBaseIds: text('knowledge_base_ids').array(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.model, t.idHash] }),
    index('oauth_artifacts_grant_idx').on(t.grantId),
    index('oauth_artifacts_uid_idx').on(t.uidHash),
    index('oauth_artifacts_account_idx').on(t.accountId, t.model),
    index('oauth_artifacts_client_idx').on(t.clientId),
    index('oauth_artifacts_expires_idx').on(t.expiresAt),
  ],
);

/**
 * Signing keys (RS256) and the cookie-signing secret, sealed with the key ring. The newest active signing
 * key signs; a retired one stays published until every token it signed has expired.
 */
export const oauthKeys = pgTable('oauth_keys', {
  id: text('id').primaryKey(),
  use: text('use').$type<'sig' | 'cookie'>().notNull(),
  secretCiphertext: text('secret_ciphertext').notNull(),
  publicJwk: jsonb('public_jwk').$type<Record<string, unknown>>(),
  createdAt: ts('created_at').notNull().defaultNow(),
  retiredAt: ts('retired_at'),
});

export type AuthClientRow = typeof authClients.$inferSelect;
export type OAuthArtifactRow = typeof oauthArtifacts.$inferSelect;
export type OAuthKeyRow = typeof oauthKeys.$inferSelect;
