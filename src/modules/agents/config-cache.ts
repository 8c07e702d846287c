import type { Deps } from '../../context.ts';
import { AccountCache } from '../../lib/account-cache.ts';

/**
 * What a chat reads of an agent's configuration (the agent row, its linked tools), kept per instance for
 * `AUTH_CACHE_TTL_MS` (0: off), the bound resolved tokens and active connections already have: on the embedded
 * database each read costs more than the rest of a chat's own work. A change made through this instance (an
 * agent created, updated, made default or deleted; a tool linked, unlinked, changed or deleted) evicts the
 * account's entries at once, after its commit; other instances follow within the TTL.
 */
export class AgentConfigCache extends AccountCache<unknown> {}

declare module '../../context.ts' {
  interface AreaState {
    /** The agent rows and linked tools chats read, kept `AUTH_CACHE_TTL_MS` (see `AgentConfigCache`). */
    agentConfigCache: AgentConfigCache;
  }
}

/** `load()` once per TTL for the account and key (`undefined` is never kept: a missing agent is read again). */
export function cachedAgentConfig<T>(deps: Deps, accountId: string, key: string, load: () => Promise<T>): Promise<T> {
  return deps.areas.agentConfigCache.get(accountId, key, load);
}

/** Call after a committed change to an account's agents or their tools. */
export function agentConfigChanged(deps: Deps, accountId: string): void {
  deps.areas.agentConfigCache.evict(accountId);
}
