import { TtlCache } from './ttl-cache.ts';

/**
 * Values read per account and key, kept per instance for `ttlMs` (0: off), evicted by account after a committed
 * change: the agent configuration and active-connections caches. Every eviction bumps a generation, so a read
 * that overlapped one does not store what it read (it may be older than the change). `undefined` is never kept.
 */
export class AccountCache<V> {
  private readonly cache: TtlCache<string, { accountId: string; value: V }>;
  private generation = 0;

  constructor(ttlMs: number) {
    this.cache = new TtlCache(ttlMs);
  }

  /** The account's value under `key`, from the cache or from `load()` (then kept for the TTL). */
  async get<T extends V>(accountId: string, key: string, load: () => Promise<T>): Promise<T> {
    const k = `${accountId}\n${key}`;
    const hit = this.cache.get(k);
    if (hit) return hit.value as T;
    const generation = this.generation;
    const value = await load();
    if (value !== undefined && generation === this.generation) this.cache.set(k, { accountId, value });
    return value;
  }

  /** Drops the account's entries (every account's for `undefined`). */
  evict(accountId: string | undefined): void {
    this.generation++;
    if (accountId === undefined) this.cache.clear();
    else this.cache.deleteWhere((e) => e.accountId === accountId);
  }
}
