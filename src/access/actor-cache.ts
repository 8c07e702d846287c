import type { Actor } from '../context.ts';
import { TtlCache } from '../lib/ttl-cache.ts';

/** The last part of an entry's life in which a request reads its token again in the background. */
export const REFRESH_AHEAD = 0.2;

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
   * The cached actor, or the one `load` reads, cached until the TTL or `expiresAt`. Concurrent misses of a
   * token wait for one read (and one `lastUsedAt` touch) instead of each making its own, which queued hundreds
   * of queries behind the pool every TTL. A token in use is read again ahead of time, in the last
   * REFRESH_AHEAD of its entry's life, while the entry still answers: a busy token's requests never wait on the
   * read, and the entry still lives no longer than the TTL. A refresh that fails (the token was revoked
   * elsewhere) drops the entry, so the next request reads afresh and is refused. A cached actor is answered as
   * it is, not wrapped in a promise: the request guard then admits the request at once.
   */
  resolve(
    tokenHash: string,
    load: () => Promise<{ actor: Actor; expiresAt: Date }>,
    now = Date.now(),
  ): Actor | Promise<Actor> {
    const cached = this.cache.entry(tokenHash, now);
    if (cached) {
      if (cached.until - now < this.cache.ttlMs * REFRESH_AHEAD && !this.loading.has(tokenHash)) {
        this.load(tokenHash, load).catch(() => {
          if (this.cache.get(tokenHash) === cached.value) this.cache.delete(tokenHash);
        });
      }
      return cached.value;
    }
    if (!this.cache.enabled) return load().then((r) => r.actor);
    return this.load(tokenHash, load);
  }

  /** One read of a token at a time; what it reads is cached unless an eviction overtook it. */
  private load(tokenHash: string, load: () => Promise<{ actor: Actor; expiresAt: Date }>): Promise<Actor> {
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
