/**
 * A map whose entries expire, bounded in size (the oldest entry goes first): the per-instance caches of the
 * hot path (resolved tokens, active connections). A TTL of 0 turns it off: nothing is stored.
 */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; until: number }>();

  constructor(
    readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get enabled(): boolean {
    return this.ttlMs > 0;
  }

  get(key: K, now = Date.now()): V | undefined {
    return this.entry(key, now)?.value;
  }

  /** The live entry with the time it expires at (ms since the epoch). */
  entry(key: K, now = Date.now()): { readonly value: V; readonly until: number } | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.until <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return hit;
  }

  /** Stores until `until` (default: the TTL from now). */
  set(key: K, value: V, until = Date.now() + this.ttlMs): void {
    if (!this.enabled) return;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { value, until });
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  /** Deletes every entry whose value matches. */
  deleteWhere(match: (value: V) => boolean): void {
    for (const [key, { value }] of this.entries) if (match(value)) this.entries.delete(key);
  }
}
