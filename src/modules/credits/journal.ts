import { appendFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../lib/logger.ts';
import type { LeaseCharge } from './repo.ts';

/** The journal's folder under DATA_DIR: one file a process, `<pid>.jsonl`, one charge a line. */
export const JOURNAL_DIR = 'credit-journal';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

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

/**
 * The charges a credit bank could not write while the database was unreachable, on disk, so that a crash during
 * an outage loses none (issue 39). Written only then: the file exists while charges are kept, and is replaced by
 * what is still kept after each batch written, removed once none is. Each charge keeps the id of its ledger row,
 * so a charge written and still journaled (a crash between the two) is written once when the journal is replayed
 * (credits_write_lease_batch skips ids in the ledger). A process crash loses nothing; a power cut may lose the
 * last lines the operating system had not written out.
 */
export class ChargeJournal {
  private readonly dir: string;
  private readonly file: string;
  /** Logged once: a DATA_DIR that cannot be written leaves the charges in memory only. */
  private failed = false;

  constructor(
    dataDir: string,
    private readonly log: Logger,
  ) {
    this.dir = join(dataDir, JOURNAL_DIR);
    this.file = join(this.dir, `${process.pid}.jsonl`);
  }

  /** Replaces the journal by these charges; none removes it. */
  write(charges: readonly LeaseCharge[]): void {
    this.attempt(() => {
      if (!charges.length) {
        rmSync(this.file, { force: true });
        return;
      }
      mkdirSync(this.dir, { recursive: true });
      const tmp = `${this.file}.tmp`;
      writeFileSync(tmp, charges.map((c) => `${JSON.stringify(c)}\n`).join(''));
      renameSync(tmp, this.file);
    });
  }

  /** Adds one charge. */
  append(charge: LeaseCharge): void {
    this.attempt(() => appendFileSync(this.file, `${JSON.stringify(charge)}\n`));
  }

  /**
   * The charges of the journals no running process owns (this process's own, left by an app closed during an
   * outage, included), and their files, to remove once the charges are journaled again or written.
   */
  recover(): { charges: LeaseCharge[]; files: string[] } {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return { charges: [], files: [] };
    }
    const charges: LeaseCharge[] = [];
    const files: string[] = [];
    for (const name of names) {
      const pid = Number(/^(\d+)\.jsonl$/.exec(name)?.[1]);
      if (!pid || (pid !== process.pid && isAlive(pid))) continue; // another instance's, on a shared DATA_DIR
      const file = join(this.dir, name);
      files.push(file);
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        const charge = line ? parse(line) : undefined;
        if (charge) charges.push(charge);
      }
    }
    return { charges, files };
  }

  /** Removes journals recovered from (not this process's own: `write` replaced it). */
  forget(files: readonly string[]): void {
    for (const file of files) if (file !== this.file) this.attempt(() => rmSync(file, { force: true }));
  }

  private attempt(fn: () => void): void {
    try {
      fn();
      this.failed = false;
    } catch (err) {
      if (this.failed) return;
      this.failed = true;
      this.log.error(
        { err, dir: this.dir },
        'credits: the charge journal cannot be written; kept charges are in memory only',
      );
    }
  }
}
