import type { Deps } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { ConnectionRow } from '../../db/schema/index.ts';
import { BadGatewayError, BadRequestError, NotFoundError } from '../../lib/errors.ts';
import {
  type CatalogProvider,
  hasOAuth,
  type ProviderDefinition,
  providerCatalog,
  providerCredentials,
  withFieldDefaults,
} from '../providers/index.ts';
import { connectionsChanged } from './active-cache.ts';
import { connectionEvent } from './events.ts';
import { refreshTokens, TokenEndpointError } from './provider-oauth.ts';
import * as repo from './repo.ts';
import { connectionSettings } from './settings.ts';

/**
 * The token lifecycle. Every use gets a token valid beyond the provider's refresh buffer. However many
 * callers race, one upstream refresh happens: callers in this process share one promise, and instances on
 * PostgreSQL serialize on the connection's row lock (`SELECT ... FOR UPDATE`), re-read the row and refresh
 * only if it still needs it (PGlite serves one process: see refreshOnce). The new tokens and the status are
 * written in one statement after the provider answered, so a crash mid-refresh leaves the old row intact
 * (nothing half-written).
 *
 * Failure policy: `invalid_grant` (the grant is dead) makes the connection `revoked` with `canRefresh:
 * false` and no refresh is tried again; other failures (5xx, timeouts, 429, other refusals) are counted and
 * after `PROVIDER_REFRESH_MAX_FAILURES` in a row (default 3) the connection is `error`; before that it is
 * `expired` if the token has expired, else unchanged. A later success makes it `active` again.
 */

/** Tokens are sealed with the row id as associated data: a ciphertext moved to another row does not open. */
export function seal(deps: Pick<Deps, 'keyRing'>, rowId: string, plaintext: string): string {
  return deps.keyRing.encrypt(plaintext, rowId);
}

export function openAccessToken(
  deps: Pick<Deps, 'keyRing'>,
  row: Pick<ConnectionRow, 'id' | 'accessTokenEnc'>,
): string {
  return deps.keyRing.decrypt(row.accessTokenEnc, row.id);
}

export function openRefreshToken(
  deps: Pick<Deps, 'keyRing'>,
  row: Pick<ConnectionRow, 'id' | 'refreshTokenEnc'>,
): string | undefined {
  return row.refreshTokenEnc ? deps.keyRing.decrypt(row.refreshTokenEnc, row.id) : undefined;
}

export function catalogEntry(deps: Pick<Deps, 'config'>, providerId: string): CatalogProvider | undefined {
  return providerCatalog(deps.config).get(providerId);
}

/** The provider of an existing connection; a provider since removed from the catalog makes it unusable. */
export function providerOf(
  deps: Pick<Deps, 'config'>,
  row: Pick<ConnectionRow, 'id' | 'providerId'>,
): ProviderDefinition {
  const entry = catalogEntry(deps, row.providerId);
  if (!entry) {
    throw new BadRequestError(`Connection ${row.id}: provider ${row.providerId} is no longer in the catalog`);
  }
  return entry.definition;
}

/** True when the token expires within the provider's refresh buffer and a refresh may be tried. */
export function needsRefresh(row: ConnectionRow, def: Pick<ProviderDefinition, 'oauth'>, now = Date.now()): boolean {
  if (!row.canRefresh || !row.refreshTokenEnc || row.status === 'revoked' || !row.expiresAt) return false;
  if (!def.oauth) return false;
  return row.expiresAt.getTime() - def.oauth.refreshBufferSeconds * 1000 <= now;
}

export interface RefreshOptions {
  /** Refresh even when the token is not near expiry (`PUT /connections/:id/refresh`, a provider 401). */
  force: boolean;
  /** Skip when the stored token is no longer this ciphertext: someone refreshed since it was read. */
  unlessTokenChangedFrom?: string | undefined;
}

/**
 * Refreshes in flight, by database, not by app (so not in `Deps`): on PGlite it stands in for the row lock, which
 * belongs to the database, so apps of one process over one database must share it.
 */
const inflight = new WeakMap<Deps['database'], Map<string, Promise<ConnectionRow>>>();

/**
 * Refreshes a connection's tokens if (still) needed and answers the row as it now is, whatever happened
 * (the status says). One upstream call per connection however many callers race.
 */
export function refreshConnectionRow(
  deps: Deps,
  accountId: string,
  connectionId: string,
  opts: RefreshOptions,
): Promise<ConnectionRow> {
  let mine = inflight.get(deps.database);
  if (!mine) {
    mine = new Map();
    inflight.set(deps.database, mine);
  }
  const running = mine.get(connectionId);
  if (running) return running;
  const started = refreshOnce(deps, accountId, connectionId, opts).finally(() => {
    mine.delete(connectionId);
    connectionsChanged(deps, accountId);
  });
  mine.set(connectionId, started);
  return started;
}

/**
 * PostgreSQL: instances serialize on the row lock, held across the provider call in one transaction.
 * PGlite: it runs one transaction at a time for the whole process, so holding one across the provider call
 * would stall every other request for as long as the provider takes (up to PROVIDER_TOKEN_TIMEOUT_MS). It
 * also serves one process only (the data directory's pid lock), where `inflight` already makes one upstream
 * call; the outcome is written afterwards, and only if the row still holds the token that was read.
 */
function refreshOnce(
  deps: Deps,
  accountId: string,
  connectionId: string,
  opts: RefreshOptions,
): Promise<ConnectionRow> {
  const { db } = deps.database;
  if (deps.database.driver === 'pglite') {
    return (async () => {
      const row = await repo.findConnection(db, accountId, connectionId);
      if (!row) throw new NotFoundError(`Connection ${connectionId} not found`);
      return refreshRow(deps, db, row, opts, async (patch) => {
        const updated = await repo.updateConnectionIfToken(db, accountId, row.id, row.accessTokenEnc, patch);
        // Changed meanwhile (a reconnect, a delete): that state stands.
        return updated ?? (await repo.findConnection(db, accountId, row.id)) ?? row;
      });
    })();
  }
  return db.transaction(async (tx) => {
    const row = await repo.lockConnection(tx, accountId, connectionId);
    if (!row) throw new NotFoundError(`Connection ${connectionId} not found`);
    return refreshRow(
      deps,
      tx,
      row,
      opts,
      async (patch) => (await repo.updateConnection(tx, accountId, row.id, patch)) ?? row,
    );
  });
}

/** Refreshes `row` if it needs it and records the outcome through `write`; answers the row as it now is. */
async function refreshRow(
  deps: Deps,
  db: Executor,
  row: ConnectionRow,
  opts: RefreshOptions,
  write: (patch: repo.ConnectionPatch) => Promise<ConnectionRow>,
): Promise<ConnectionRow> {
  const settings = connectionSettings(deps.config);
  const def = catalogEntry(deps, row.providerId)?.definition;
  if (!def) return row;
  if (!opts.force && !needsRefresh(row, def)) return row;
  if (opts.unlessTokenChangedFrom !== undefined && row.accessTokenEnc !== opts.unlessTokenChangedFrom) return row;
  const refreshToken = openRefreshToken(deps, row);
  if (!row.canRefresh || !refreshToken || row.status === 'revoked') return row;

  const now = new Date();
  const creds = providerCredentials(deps.config, def.id);
  try {
    if (!creds || !hasOAuth(def)) {
      throw new TokenEndpointError('refused', `${def.label} is not configured on this server`);
    }
    const set = await refreshTokens(def, creds, { refreshToken, vars: withFieldDefaults(def, row.vars) }, settings);
    const updated = await write({
      accessTokenEnc: seal(deps, row.id, set.accessToken),
      refreshTokenEnc: set.refreshToken ? seal(deps, row.id, set.refreshToken) : row.refreshTokenEnc,
      expiresAt: set.expiresAt,
      scopes: set.scopes ?? row.scopes,
      vars: { ...row.vars, ...set.vars },
      status: 'active',
      refreshFailures: 0,
      lastError: null,
      refreshedAt: now,
    });
    deps.log.info({ connectionId: row.id, providerId: def.id }, 'connection token refreshed');
    await connectionEvent(deps, db, { before: row, after: updated, event: 'refreshed' });
    return updated;
  } catch (err) {
    if (!(err instanceof TokenEndpointError)) throw err;
    const failures = row.refreshFailures + 1;
    const expired = row.expiresAt !== null && row.expiresAt.getTime() <= now.getTime();
    const patch =
      err.kind === 'invalid_grant'
        ? { status: 'revoked' as const, canRefresh: false }
        : {
            status:
              failures >= settings.refreshMaxFailures
                ? ('error' as const)
                : expired
                  ? ('expired' as const)
                  : row.status,
          };
    deps.log.warn(
      { connectionId: row.id, providerId: def.id, kind: err.kind, failures, status: patch.status },
      'connection token refresh failed',
    );
    const updated = await write({ ...patch, refreshFailures: failures, lastError: err.message });
    await connectionEvent(deps, db, {
      before: row,
      after: updated,
      event: patch.status === 'revoked' || patch.status === 'expired' ? patch.status : 'error',
      error: `Refresh failed: ${err.message}`,
    });
    return updated;
  }
}

/** Refuses a connection that cannot serve a call now, saying what the user can do about it. */
export function assertUsable(row: ConnectionRow, def: Pick<ProviderDefinition, 'label'>, now = Date.now()): void {
  if (row.status === 'revoked') {
    throw new BadRequestError(
      `Connection ${row.id} (${def.label}) was revoked; reconnect it through POST /connections/initiate`,
    );
  }
  if (row.expiresAt && row.expiresAt.getTime() <= now) {
    if (!row.canRefresh) {
      throw new BadRequestError(
        `The ${def.label} token of connection ${row.id} expired and cannot be refreshed; reconnect it`,
      );
    }
    throw new BadGatewayError(
      `The ${def.label} token of connection ${row.id} expired and could not be refreshed${row.lastError ? `: ${row.lastError}` : ''}`,
    );
  }
}

export interface FreshToken {
  token: string;
  /** The sealed token as stored: lets a later 401 tell whether someone refreshed meanwhile. */
  sealed: string;
  row: ConnectionRow;
}

/** A token for one use: refreshed first when within the refresh buffer; refused when unusable. */
export async function freshAccessToken(deps: Deps, row: ConnectionRow): Promise<FreshToken> {
  const def = providerOf(deps, row);
  let current = row;
  if (needsRefresh(current, def)) {
    current = await refreshConnectionRow(deps, row.accountId, row.id, { force: false });
  }
  assertUsable(current, def);
  return { token: openAccessToken(deps, current), sealed: current.accessTokenEnc, row: current };
}
