import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../db/client.ts';

const PROBE_INTERVAL_MS = 1000;

/**
 * What this instance knows of the database's reachability. Once a request finds the database unreachable,
 * later requests answer 503 at once, before auth and rate limits (app.ts): an outage is never the client's
 * fault, so it must not spend the client's budget (issue 39: accounts were locked out with 429 for a minute
 * after a 10 s outage). A ping is tried at once and then every second; the first that answers ends it.
 */
export class DatabaseOutage {
  private downSince: number | undefined;
  private closed = false;

  constructor(
    private readonly database: Pick<Database, 'ping'>,
    private readonly log: FastifyBaseLogger,
  ) {}

  get down(): boolean {
    return this.downSince !== undefined;
  }

  /** A request met an unreachable database: hold requests back until a ping answers. */
  report(): void {
    if (this.down || this.closed) return;
    this.downSince = Date.now();
    this.log.warn('The database is unreachable: requests answer 503 until it answers again');
    void this.probe();
  }

  /**
   * Something else found the database answering (`/readyz`'s own ping): the outage ends now, not at the probe's
   * next turn, so an instance a balancer puts back in its pool on a 200 from `/readyz` serves at once.
   */
  answered(): void {
    if (this.down) this.recovered();
  }

  close(): void {
    this.closed = true;
    this.downSince = undefined;
  }

  private async probe(): Promise<void> {
    while (this.down && !this.closed) {
      try {
        await this.database.ping();
        if (this.down) this.recovered();
        return;
      } catch {
        await new Promise((r) => setTimeout(r, PROBE_INTERVAL_MS).unref());
      }
    }
  }

  private recovered(): void {
    const downMs = Date.now() - (this.downSince ?? Date.now());
    this.downSince = undefined;
    this.log.info({ downMs }, 'The database answers again');
  }
}
