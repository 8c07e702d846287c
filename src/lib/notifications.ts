import type { Database } from '../db/client.ts';

/**
 * In-process fan-out of the database's notifications: one LISTEN per process (PostgreSQL's LISTEN/NOTIFY reach
 * every instance on the database; PGlite's stay in this one, which is the only one), delivered to the
 * subscribers of a topic. A notification carries only its topic (a conversation id): subscribers read what
 * changed from the database, so nothing is lost when a notification is.
 */
export const NOTIFY_CHANNEL = 'sb_events';

export class NotificationHub {
  private readonly topics = new Map<string, Set<() => void>>();
  private listening: Promise<() => Promise<void>> | undefined;

  constructor(private readonly database: Pick<Database, 'listen'>) {}

  /** Calls `onNotify` whenever `topic` is notified; answers the function that stops it. */
  async subscribe(topic: string, onNotify: () => void): Promise<() => void> {
    const set = this.topics.get(topic) ?? new Set();
    set.add(onNotify);
    this.topics.set(topic, set);
    this.listening ??= this.database.listen(NOTIFY_CHANNEL, (payload) => {
      for (const cb of this.topics.get(payload) ?? []) cb();
    });
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

  async close(): Promise<void> {
    const stop = this.listening;
    this.listening = undefined;
    this.topics.clear();
    await (await stop?.catch(() => undefined))?.();
  }
}
