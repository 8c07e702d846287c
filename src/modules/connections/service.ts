import { requireFirstPartyOrWhitelabel } from '../../access/oauth/policy.ts';
import type { Config } from '../../config.ts';
import type { PublicContext, ServiceContext } from '../../context.ts';
import { requireScope } from '../../context.ts';
import type { ConnectionRow } from '../../db/schema/index.ts';
import { BadRequestError, NotFoundError } from '../../lib/errors.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import { redactSecrets } from '../../lib/redact.ts';
import { recordConnectionEvent } from '../activity/index.ts';
import type { FinalizeField, ProviderDefinition } from '../providers/index.ts';
import {
  type CatalogProvider,
  connectFields,
  fillBaseUrl,
  hasOAuth,
  logoPath,
  providerCatalog,
  providerCredentials,
  URL_PLACEHOLDER,
  withFieldDefaults,
} from '../providers/index.ts';
import { activeConnectionRows, connectionsChanged } from './active-cache.ts';
import { connectionFilterOf } from './filter.ts';
import { revokeAtProvider } from './provider-oauth.ts';
import * as repo from './repo.ts';
import type { Connection, ListConnectionsQuery } from './schema.ts';
import { connectionSettings } from './settings.ts';
import { openAccessToken, openRefreshToken, providerOf, refreshConnectionRow } from './tokens.ts';

/**
 * Connections (SPEC §3): listing, reading, refreshing and deleting them. Connecting one (initiate, callback,
 * pending fields, finalize, a pasted token) is connect.service.ts; the checks of what callers give, connect-checks.ts.
 */

/** How long an authorization (state + PKCE verifier) and a pending connection stay usable. */
export const AUTHORIZATION_TTL_MS = 10 * 60 * 1000;

export function toConnection(row: ConnectionRow, config: Pick<Config, 'providers'>): Connection {
  const def = providerCatalog(config).get(row.providerId)?.definition;
  const m = row.metadata;
  return {
    id: row.id,
    accountId: row.accountId,
    providerId: row.providerId,
    providerUserId: row.providerUserId,
    scopes: row.scopes,
    status: row.status,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    canRefresh: row.canRefresh,
    authType: row.authType,
    metadata: {
      displayName: m.displayName,
      ...(m.email ? { email: m.email } : {}),
      ...(m.avatar ? { avatar: m.avatar } : {}),
      providerName: def?.label ?? row.providerId,
      providerIcon: def?.logoUrl ?? logoPath(row.providerId),
    },
    lastError: row.status === 'active' ? null : row.lastError,
    ...(def ? hostOf(def, row) : {}),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/**
 * What the user gave when connecting (a subdomain, a shop, a region) and, when the API's base URL
 * is built from connection values, where its calls go (Salesforce's instance URL). Absent when there is none.
 */
function hostOf(def: ProviderDefinition, row: ConnectionRow): Pick<Connection, 'fields' | 'apiBaseUrl'> {
  const typed = row.authType === 'api_key' && def.apiKey ? def.apiKey.fields : def.finalizeFields;
  const fields = Object.fromEntries(
    typed.filter((f) => row.vars[f.name]).map((f) => [f.name, row.vars[f.name] as string]),
  );
  const template = row.authType === 'api_key' ? (def.apiKey?.baseUrl ?? def.api.baseUrl) : def.api.baseUrl;
  const out: Pick<Connection, 'fields' | 'apiBaseUrl'> = Object.keys(fields).length ? { fields } : {};
  if (urlVarNames(template).length === 0) return out;
  try {
    return { ...out, apiBaseUrl: fillBaseUrl(template, row.vars) };
  } catch {
    return out;
  }
}

export function catalogProvider(config: Pick<Config, 'providers'>, providerId: string): CatalogProvider {
  const entry = providerCatalog(config).get(providerId);
  if (!entry) throw new NotFoundError(`Provider ${providerId} not found`);
  return entry;
}

async function ownConnection(ctx: ServiceContext, connectionId: string): Promise<ConnectionRow> {
  const row = await repo.findConnection(ctx.db, ctx.accountId, connectionId);
  if (!row) throw new NotFoundError(`Connection ${connectionId} not found`);
  return row;
}

/** The callback URL registered with every provider. */
export function callbackUrl(config: Pick<Config, 'baseUrl'>): string {
  return `${config.baseUrl}/api/v1/connections/callback`;
}

// ---- list and get ----

/**
 * SPEC §4: list and get are for the first-party app (sessions, PATs) and white-label customers' clients;
 * third-party OAuth clients get 403 (auth/oauth/policy).
 */
export async function listConnections(ctx: ServiceContext, q: ListConnectionsQuery): Promise<Page<Connection>> {
  requireScope(ctx, 'connections');
  requireFirstPartyOrWhitelabel(ctx.actor);
  const conditions = connectionFilterOf(q);
  const { rows, total } = await repo.listConnections(ctx.db, ctx.accountId, conditions, q);
  return toPage(
    rows.map((r) => toConnection(r, ctx.deps.config)),
    total,
    q,
  );
}

export async function getConnection(ctx: ServiceContext, connectionId: string): Promise<Connection> {
  requireScope(ctx, 'connections');
  requireFirstPartyOrWhitelabel(ctx.actor);
  return toConnection(await ownConnection(ctx, connectionId), ctx.deps.config);
}

/**
 * The account's usable connections (status `active`), for `list-connections` and the agent. Open to every
 * caller that may use connections: REST (`connections`), MCP and agents.
 */
export async function listActiveConnections(ctx: ServiceContext): Promise<Connection[]> {
  requireScope(ctx, 'connections', 'universal-mcp-read', 'universal-mcp-read-write', 'agents-use', 'agents-all');
  const rows = await activeConnectionRows(ctx.deps, ctx.db, ctx.accountId);
  return rows.map((r) => toConnection(r, ctx.deps.config));
}

const urlVarNames = (template: string) => [...template.matchAll(URL_PLACEHOLDER)].map((m) => m[2] as string);

/** The fields the connect page asks before authorization (see `connectFields`). */
export function authorizationFields(ctx: Pick<PublicContext, 'deps'>, providerId: string): FinalizeField[] {
  return connectFields(catalogProvider(ctx.deps.config, providerId).definition);
}

// ---- refresh and delete ----

/** `PUT /connections/:id/refresh`: refreshes now; one upstream call however many callers race (row lock). */
export async function refreshConnection(ctx: ServiceContext, connectionId: string): Promise<Connection> {
  requireScope(ctx, 'connections');
  const row = await ownConnection(ctx, connectionId);
  const def = providerOf(ctx.deps, row);
  if (row.status === 'revoked') {
    throw new BadRequestError('A revoked connection must be reconnected: start again with POST /connections/initiate');
  }
  if (!row.canRefresh || !row.refreshTokenEnc) {
    throw new BadRequestError(`This ${def.label} connection has no refresh token; reconnect it to renew access`);
  }
  const updated = await refreshConnectionRow(ctx.deps, ctx.accountId, connectionId, { force: true });
  return toConnection(updated, ctx.deps.config);
}

/**
 * Deletes the connection, then revokes its token at the provider where the provider supports it, after
 * the answer: a revocation that fails is logged and never blocks or undoes the delete.
 */
export async function deleteConnection(ctx: ServiceContext, connectionId: string): Promise<void> {
  requireScope(ctx, 'connections');
  const row = await repo.deleteConnection(ctx.db, ctx.accountId, connectionId);
  if (!row) throw new NotFoundError(`Connection ${connectionId} not found`);
  connectionsChanged(ctx.deps, ctx.accountId);
  // Logged only: a deletion the user asked for is not a `connection.revoked` webhook (the API caller knows).
  void recordConnectionEvent(
    ctx.deps,
    ctx.accountId,
    { connectionId, providerId: row.providerId, event: 'revoked' },
    ctx,
  );
  ctx.log.info({ connectionId, providerId: row.providerId }, 'connection deleted');
  const deps = ctx.deps;
  const def = providerCatalog(deps.config).get(row.providerId)?.definition;
  // A pasted token was not granted to our OAuth client: only the user can delete it at the provider.
  if (!def || !hasOAuth(def) || !def.oauth.revocationUrl || row.authType === 'api_key') return;
  const log = ctx.log;
  deps.background.track(
    'provider token revocation',
    (async () => {
      try {
        await revokeAtProvider(
          def,
          providerCredentials(deps.config, def.id),
          { accessToken: openAccessToken(deps, row), refreshToken: openRefreshToken(deps, row) },
          withFieldDefaults(def, row.vars),
          connectionSettings(deps.config),
        );
        log.info({ connectionId, providerId: def.id }, 'provider token revoked');
      } catch (err) {
        log.warn(
          { connectionId, providerId: def.id, reason: redactSecrets((err as Error).message) },
          'provider token revocation failed; the connection is deleted anyway',
        );
      }
    })(),
  );
}
