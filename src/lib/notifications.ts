import type { Logger } from './logger.ts';

/**
 * In-process fan-out of the database's notifications: one LISTEN per process (PostgreSQL's LISTEN/NOTIFY reach
 * every instance on the database; PGlite's stay in this one, which is the only one), delivered to the
 * subscribers of a topic. A notification carries only its topic (a conversation id): subscribers read what
 * changed from the database, so nothing is lost when a notification is. When the listening connection drops
 * (a database outage), it is made again for as long as the process lives; meanwhile `listenerDown` is true
 * (`/readyz` says so), and once it is back every subscriber is woken to re-read what it missed. The outage and
 * the recovery are logged once each.
 */
export const NOTIFY_CHANNEL = 'sb_events';

/** What the hub listens through: the database's LISTEN (src/db/client.ts `Database.listen`). */
export interface NotificationSource {
  listen(
    channel: string,
    onPayload: (payload: string) => void,
    watch?: { onLost?(err: Error | undefined): void; onRestored?(): void },
  ): Promise<() => Promise<void>>;
}

export class NotificationHub {
  private readonly topics = new Map<string, Set<() => void>>();
  private listening: Promise<() => Promise<void>> | undefined;
  private lostAt: number | undefined;

  constructor(
    private readonly database: NotificationSource,
    private readonly log: Pick<Logger, 'warn' | 'info'>,
  ) {}

  /** Whether notifications go unheard now: the listening connection dropped and is being made again. */
  get listenerDown(): boolean {
    return this.lostAt !== undefined;
  }

  /** Calls `onNotify` whenever `topic` is notified; answers the function that stops it. */
  async subscribe(topic: string, onNotify: () => void): Promise<() => void> {
    const set = this.topics.get(topic) ?? new Set();
    set.add(onNotify);
    this.topics.set(topic, set);
    this.listening ??= this.database.listen(
      NOTIFY_CHANNEL,
      (payload) => {
        for (const cb of this.topics.get(payload) ?? []) cb();
      },
      { onLost: (err) => this.lost(err), onRestored: () => this.restored() },
    );
    try {
      await this.listening;
    } catch (err) {
      this.listening = undefined;
      set.delete(onNotify);
      throw err;
    }
    return () => {
      set.delete(onNotify);
      if (set.size === 0) this.topics.delete(topic);
    };
  }

  private lost(err: Error | undefined): void {
    this.lostAt = Date.now();
    this.log.warn(
      { err, subscribers: this.count() },
      'Notification listener lost its database connection; reconnecting',
    );
  }

  /** Back: every subscriber re-reads from the store what came while notifications went unheard. */
  private restored(): void {
    const downMs = Date.now() - (this.lostAt ?? Date.now());
    this.lostAt = undefined;
    this.log.info(
      { downMs, subscribers: this.count() },
      'Notification listener reconnected; subscribers re-read what they missed',
    );
    for (const set of [...this.topics.values()]) for (const cb of [...set]) cb();
  }

  private count(): number {
    let n = 0;
    for (const set of this.topics.values()) n += set.size;
    return n;
  }

  async close(): Promise<void> {
    const stop = this.listening;
    this.listening = undefined;
    this.topics.clear();
    await (await stop?.catch(() => undefined))?.();
  }
}
