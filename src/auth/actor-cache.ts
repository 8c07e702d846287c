import type { Actor } from '../lib/context.ts';

/**
 * Resolved bearer tokens, kept for a few seconds so the hot path skips a database round trip. Revoking,
 * signing out or deleting an account evicts at once on this instance; other instances notice within the
 * TTL (`AUTH_CACHE_TTL_MS`, 0 turns the cache off). Keys are token hashes, never tokens.
 */
export class ActorCache {
  private readonly entries = new Map<string, { actor: Actor; until: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(tokenHash: string, now = Date.now()): Actor | undefined {
    if (this.ttlMs <= 0) return undefined;
    const hit = this.entries.get(tokenHash);
    if (!hit) return undefined;
    if (hit.until <= now) {
      this.entries.delete(tokenHash);
      return undefined;
    }
    return hit.actor;
  }

  /** Caches until the TTL or the token's own expiry, whichever comes first. */
  set(tokenHash: string, actor: Actor, tokenExpiresAt: number, now = Date.now()): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(tokenHash, { actor, until: Math.min(now + this.ttlMs, tokenExpiresAt) });
  }

  /** Evicts every cached token of a token id (one revoked token) or of an account (deleted). */
  evict(match: { tokenId?: string; accountId?: string }): void {
    for (const [key, { actor }] of this.entries) {
      if (actor.tokenId === match.tokenId || actor.accountId === match.accountId) this.entries.delete(key);
    }
  }
}
