import type { Actor } from '../lib/context.ts';
import { TtlCache } from '../lib/ttl-cache.ts';

/**
 * Resolved bearer tokens, kept for a few seconds so the hot path skips a database round trip. Revoking,
 * signing out or deleting an account evicts at once on this instance; other instances notice within the
 * TTL (`AUTH_CACHE_TTL_MS`, 0 turns the cache off). Keys are token hashes, never tokens.
 */
export class ActorCache {
  private readonly cache: TtlCache<string, Actor>;
  /** Lookups in flight by token hash: concurrent misses of one token share one database read. */
  private readonly loading = new Map<string, Promise<Actor>>();
  /** Bumped by every eviction: a lookup that started before one does not cache what it read. */
  private generation = 0;

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

  /**
   * The cached actor, or the one `load` reads, cached until the TTL or `expiresAt`. When the entry of a busy
   * token expires, every request of it misses at once: they wait for one read (and one `lastUsedAt` touch)
   * instead of each making its own, which queued hundreds of queries behind the pool every TTL.
   */
  resolve(tokenHash: string, load: () => Promise<{ actor: Actor; expiresAt: Date }>): Promise<Actor> {
    const cached = this.cache.get(tokenHash);
    if (cached) return Promise.resolve(cached);
    if (!this.cache.enabled) return load().then((r) => r.actor);
    let loading = this.loading.get(tokenHash);
    if (!loading) {
      const generation = this.generation;
      loading = load().then(
        ({ actor, expiresAt }) => {
          if (this.loading.get(tokenHash) === loading) this.loading.delete(tokenHash);
          if (generation === this.generation) this.set(tokenHash, actor, expiresAt.getTime());
          return actor;
        },
        (err: unknown) => {
          if (this.loading.get(tokenHash) === loading) this.loading.delete(tokenHash);
          throw err;
        },
      );
      this.loading.set(tokenHash, loading);
    }
    return loading;
  }

  /** Evicts every cached token of a token id (one revoked token) or of an account (deleted). */
  evict(match: { tokenId?: string; accountId?: string }): void {
    this.cache.deleteWhere((actor) => actor.tokenId === match.tokenId || actor.accountId === match.accountId);
    // Reads in flight may predate the change: later requests read again, and nothing they answer is cached.
    this.loading.clear();
    this.generation++;
  }
}
