import type { Deps } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { ConnectionRow } from '../../db/schema/index.ts';
import { AccountCache } from '../../lib/account-cache.ts';
import * as repo from './repo.ts';

/**
 * An account's active connections, kept per instance for `AUTH_CACHE_TTL_MS` (0: off), the same bound as
 * resolved tokens: MCP's list-connections and every use-agent read them, and on the embedded database the
 * query costs more than the rest of such a request. A change made through this instance (connect, refresh,
 * a refused token, delete, the expiry sweep) evicts at once, after its commit; other instances follow within
 * the TTL. Only the list is cached: running a tool reads its connection afresh, so a connection revoked
 * elsewhere fails there, not silently.
 */
export class ActiveConnectionsCache extends AccountCache<readonly ConnectionRow[]> {}

declare module '../../context.ts' {
  interface AreaState {
    /** Each account's active connections, kept `AUTH_CACHE_TTL_MS` (see `ActiveConnectionsCache`). */
    activeConnectionsCache: ActiveConnectionsCache;
  }
}

/** The account's connections with status `active` (shared rows: read, never modify), one provider's if given. */
export async function activeConnectionRows(
  deps: Deps,
  db: Executor,
  accountId: string,
  providerId?: string,
): Promise<readonly ConnectionRow[]> {
  const rows = await deps.areas.activeConnectionsCache.get(accountId, '', () =>
    repo.listActiveConnections(db, accountId),
  );
  return providerId === undefined ? rows : rows.filter((r) => r.providerId === providerId);
}

/** Call after a committed change to an account's connections (`undefined`: any account's). */
export function connectionsChanged(deps: Deps, accountId: string | undefined): void {
  deps.areas.activeConnectionsCache.evict(accountId);
}
