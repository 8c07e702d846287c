import type { Actor } from '../lib/context.ts';
import { TtlCache } from '../lib/ttl-cache.ts';

/**
 * Resolved bearer tokens, kept for a few seconds so the hot path skips a database round trip. Revoking,
 * signing out or deleting an account evicts at once on this instance; other instances notice within the
 * TTL (`AUTH_CACHE_TTL_MS`, 0 turns the cache off). Keys are token hashes, never tokens.
 */
export class ActorCache {
  private readonly cache: TtlCache<string, Actor>;

  constructor(ttlMs: number, maxEntries?: number) {
    this.cache = new TtlCache(ttlMs, maxEntries);
  }

  get(tokenHash: string, now = Date.now()): Actor | undefined {
    return this.cache.get(tokenHash, now);
  }

  /** Caches until the TTL or the token's own expiry, whichever comes first. */
  set(tokenHash: string, actor: Actor, tokenExpiresAt: number, now = Date.now()): void {
    this.cache.set(tokenHash, actor, Math.min(now + this.cache.ttlMs, tokenExpiresAt));
  }

  /** Evicts every cached token of a token id (one revoked token) or of an account (deleted). */
  evict(match: { tokenId?: string; accountId?: string }): void {
    this.cache.deleteWhere((actor) => actor.tokenId === match.tokenId || actor.accountId === match.accountId);
  }
}
