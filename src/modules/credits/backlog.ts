import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable, ServiceUnavailableError } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import type { ChargeJournal } from './journal.ts';
import type { LeaseCharge } from './repo.ts';

/** Charges kept unwritten at most (CREDITS_BACKLOG_MAX's default), see ChargeBacklog.admit. */
export const BACKLOG_MAX = 10_000;
/** While the database is unreachable a batch is tried again this often at most (backing off from 50 ms). */
export const RETRY_MAX_MS = 1000;

/** How a batch's write ended: its result, or given up (its charges left in the journal, or lost). */
export type BatchOutcome<T> = { ok: true; value: T } | { ok: false; err: unknown; journaled: boolean };

/**
 * The credit bank's charges through a database outage (issue 39): a batch the database does not take is kept, in
 * memory and in the journal, and tried again until it answers; paid requests are refused once too many wait.
 */
export class ChargeBacklog {
  /** Since when the database has been unreachable to a batch (undefined: it answers). */
  private keptSince: number | undefined;
  /** The charges not written yet are in the journal (the database was unreachable); new ones are appended. */
  private journaling = false;
  /** Shutting down: a batch the database does not take is journaled and left to the next start. */
  private closing = false;
  /** Shutting down with the database unreachable: what is queued is journaled, not tried again. */
  private left = false;

  constructor(
    private readonly log: Logger,
    /** Where charges the database does not take are kept on disk until it does (none: in memory only). */
    private readonly journal: ChargeJournal | undefined,
    /** How many charges may wait unwritten before paid requests are refused (CREDITS_BACKLOG_MAX). */
    private readonly max = BACKLOG_MAX,
  ) {}

  /**
   * 503 (with Retry-After) while `waiting` (the charges unwritten, those of requests in flight counted) reaches the
   * bound: the database has been unreachable that long, and a charge is never dropped to make room.
   */
  admit(waiting: number): void {
    if (waiting >= this.max) {
      throw new ServiceUnavailableError(
        'Charges cannot be recorded now (the database is unreachable); retry shortly',
        DATABASE_RETRY_AFTER_SECONDS,
      );
    }
  }

  /** The database did not take the last batch: waiting on the one being written would wait out the outage. */
  get down(): boolean {
    return this.keptSince !== undefined;
  }

  /** Shutting down with the database unreachable: queued charges are in the journal, for the next start. */
  get leftForNextStart(): boolean {
    return this.left;
  }

  /** Shutting down: a batch the database does not take is left in the journal rather than tried until it does. */
  stopping(): void {
    this.closing = true;
  }

  /** A charge was settled: appended to the journal while it holds the charges kept. */
  settled(charge: LeaseCharge): void {
    if (this.journaling) this.journal?.append(charge);
  }

  /**
   * Writes one batch of `charges` with `write`. The database unreachable, the batch is kept (with `queued()`, the
   * charges behind it) and tried again until it answers; written again, a batch whose commit's answer was lost
   * changes nothing (writeLeaseBatch). Any other failure is tried three times more, and so is an outage while
   * shutting down (the journal keeps it for the next start).
   */
  async write<T>(
    charges: readonly LeaseCharge[],
    queued: () => LeaseCharge[],
    write: () => Promise<T>,
  ): Promise<BatchOutcome<T>> {
    for (let attempt = 0; ; attempt++) {
      try {
        const value = await write();
        this.answered(charges.length, queued());
        return { ok: true, value };
      } catch (err) {
        const unreachable = isDatabaseUnavailable(err);
        if (unreachable) this.keep([...charges, ...queued()], err);
        if (this.closing ? attempt >= 2 : !unreachable && attempt >= 3) {
          return this.giveUp(charges.length, queued(), err, unreachable && this.journal !== undefined);
        }
        await new Promise((r) => setTimeout(r, Math.min(RETRY_MAX_MS, 50 * 2 ** attempt)));
      }
    }
  }

  /**
   * Charges journaled on this DATA_DIR by an instance that stopped before the database took them: `take` queues
   * them, then this instance's journal holds the queue before the old files go (a crash now loses none either).
   */
  recover(take: (charges: LeaseCharge[]) => void, queued: () => LeaseCharge[]): number {
    if (!this.journal) return 0;
    const { charges, files } = this.journal.recover();
    if (!files.length) return 0;
    take(charges);
    this.rejournal(queued());
    this.journal.forget(files);
    if (charges.length)
      this.log.info({ charges: charges.length }, 'credits: writing the charges journaled before a stop');
    return charges.length;
  }

  /** The database did not take a batch: `kept` (it and what is queued) goes to the journal; the outage is logged once. */
  private keep(kept: LeaseCharge[], err: unknown): void {
    if (this.keptSince === undefined) {
      this.keptSince = Date.now();
      this.log.warn(
        { err, charges: kept.length, backlogMax: this.max },
        'credits: the database is unreachable; charges are kept until it answers',
      );
    }
    if (this.journal && !this.journaling) {
      this.journal.write(kept);
      this.journaling = true;
    }
  }

  /** A batch was written: the recovery is logged once, and the journal holds what is still queued. */
  private answered(written: number, queued: LeaseCharge[]): void {
    if (this.keptSince !== undefined) {
      this.log.info(
        { downMs: Date.now() - this.keptSince, charges: written + queued.length },
        'credits: the database answers again; the charges kept meanwhile are written',
      );
      this.keptSince = undefined;
    }
    if (this.journaling) this.rejournal(queued);
  }

  /**
   * A batch is not tried again: shutting down with its charges journaled (the next start writes them), or a
   * failure other than an outage (the charges are lost, never credits: their leases' rows still hold them until
   * given back).
   */
  private giveUp(count: number, queued: LeaseCharge[], err: unknown, journaled: boolean): BatchOutcome<never> {
    if (journaled) {
      this.left = true;
      this.log.warn(
        { charges: count + queued.length },
        'credits: stopping with charges unwritten; they stay in the journal under DATA_DIR and the next start writes them',
      );
      return { ok: false, err, journaled };
    }
    this.log.error({ err, charges: count }, 'credits: a batch of charges could not be written');
    if (this.journaling) this.rejournal(queued);
    return { ok: false, err, journaled };
  }

  /** The journal holds `queued`, and only that (nothing once it is empty). */
  private rejournal(queued: LeaseCharge[]): void {
    this.journal?.write(queued);
    this.journaling = queued.length > 0;
  }
}
