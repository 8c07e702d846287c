import type { Logger } from '../../lib/logger.ts';
import { PidJournal } from '../../lib/pid-journal.ts';
import type { LeaseCharge } from './repo.ts';

/** The journal's folder under DATA_DIR: one file a process, `<pid>.jsonl`, one charge a line. */
export const JOURNAL_DIR = 'credit-journal';

function parse(line: string): LeaseCharge | undefined {
  try {
    const c = JSON.parse(line) as LeaseCharge & { at: string };
    if (typeof c.id !== 'string' || typeof c.leaseId !== 'string' || typeof c.accountId !== 'string') return undefined;
    if (!Number.isSafeInteger(c.cost) || c.cost < 0) return undefined;
    return { ...c, at: new Date(c.at) };
  } catch {
    return undefined; // a line cut short by a crash: its charge was never answered as kept
  }
}

const lines = (charges: readonly LeaseCharge[]) => charges.map((c) => `${JSON.stringify(c)}\n`).join('');

/**
 * The charges a credit bank could not write while the database was unreachable, on disk (a PidJournal), so that
 * a crash during an outage loses none (issue 39). Written only then: the file exists while charges are kept, and
 * is replaced by what is still kept after each batch written, removed once none is. Each charge keeps the id of
 * its ledger row, so a charge written and still journaled (a crash between the two) is written once when the
 * journal is replayed (credits_write_lease_batch skips ids in the ledger).
 */
export class ChargeJournal {
  private readonly journal: PidJournal<LeaseCharge>;

  constructor(dataDir: string, log: Logger) {
    this.journal = new PidJournal({
      dataDir,
      folder: JOURNAL_DIR,
      parse,
      log,
      failure: 'credits: the charge journal cannot be written; kept charges are in memory only',
    });
  }

  /** Replaces the journal by these charges; none removes it. */
  write(charges: readonly LeaseCharge[]): void {
    this.journal.replace(lines(charges));
  }

  /** Adds one charge. */
  append(charge: LeaseCharge): void {
    this.journal.append(lines([charge]));
  }

  /**
   * The charges of the journals no running process owns (this process's own, left by an app closed during an
   * outage, included), and their files, to remove once the charges are journaled again or written.
   */
  recover(): { charges: LeaseCharge[]; files: string[] } {
    const { items, files } = this.journal.recover();
    return { charges: items, files };
  }

  /** Removes journals recovered from (not this process's own: `write` replaced it). */
  forget(files: readonly string[]): void {
    this.journal.forget(files);
  }
}
