import type { Db } from '../../db/client.ts';
import type { BackgroundTasks } from '../../lib/background.ts';
import { CreditsExhaustedError, databaseUnavailable } from '../../lib/errors.ts';
import { WriteSchedule } from '../../lib/group-commit.ts';
import { newId } from '../../lib/ids.ts';
import type { Logger } from '../../lib/logger.ts';
import { ChargeBacklog } from './backlog.ts';
import { ChargeQueue } from './charge-queue.ts';
import type { ChargeJournal } from './journal.ts';
import {
  applyTake,
  LEASE_IDLE_MS,
  LEASE_TTL_MS,
  type Lease,
  newLease,
  RecentRate,
  takeSize,
  topUpSize,
} from './lease.ts';
import * as repo from './repo.ts';

/**
 * Group commit: charges wait at most this long for others to share their write, and batches start at least this
 * far apart (WriteSchedule). Longer than the conversation writes' window: no one reads a charge at once, and fewer
 * statements cost the database less CPU (docs/benchmarks.md, "Figures behind the code"). A crash loses at most this
 * window's charges and the batch being written, never credits...
 */
export const BATCH_WINDOW_MS = 20;
/** ...and a batch holds at most this many (the rest go in the next one, at once). */
export const BATCH_MAX = 1000;

export interface BankHold {
  accountId: string;
  amount: number;
  /** The balance users saw when the request was admitted (Lease.total), before its own cost. */
  balanceBefore: number;
  lease: Lease;
}

/** A charge settled in memory: the balance after it (as users see it) at once, and its write, later. */
export interface BankSettled {
  remaining: number;
  written: Promise<void>;
}

export interface BankCharge {
  type: repo.CreditTransactionType;
  cost: number;
  description: string;
  model: string | null;
  promptTokens: number | null;
  completionTokens: number | null;
  requestId: string | null;
}

/** A bank's write counters before it wrote anything. */
function noWrites(): { takes: number; batches: number; charges: number; waits: number } {
  return { takes: 0, batches: 0, charges: 0, waits: 0 };
}

/**
 * The credits of one instance: leases taken from account balances (lease.ts), the holds served from them in
 * memory, and the group commit that writes their charges (docs/concepts.md, "Credit leases and group commit").
 * What users see is the stored balance plus every lease's amount, so only charges and additions change it.
 */
export class CreditBank {
  /**
   * Writes so far: lease takes and batches (after the answer), the charges batches wrote, and the requests
   * that waited on a take (a write on their path).
   */
  readonly stats = noWrites();
  private readonly leases = new Map<string, Lease>();
  private readonly queue = new ChargeQueue();
  private readonly rate = new RecentRate();
  private readonly schedule: WriteSchedule;
  private lastRenewal = Date.now();
  private readonly ticker: NodeJS.Timeout;
  private closed = false;
  /** Credits of leases the batch being written gives back, by account. */
  private readonly returning = new Map<string, number>();
  /** Batches started so far: the number of the one being written, if one is. */
  private batchSeq = 0;
  /** Requests holding credits now (each settles one charge). */
  private inFlight = 0;
  /** Charges of the batch being written. */
  private writingCount = 0;
  private readonly backlog: ChargeBacklog;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    /** Where an idle lease's return is tracked, so draining background work waits for it. */
    private readonly background?: BackgroundTasks,
    /** The clock the account rates are read with (tests pass their own). */
    private readonly clock: () => number = Date.now,
    /**
     * `journal`: where charges the database does not take are kept on disk until it does (none: in memory only);
     * `backlogMax`: how many charges may wait unwritten before paid requests are refused (CREDITS_BACKLOG_MAX).
     */
    opts: { journal?: ChargeJournal | undefined; backlogMax?: number } = {},
  ) {
    this.backlog = new ChargeBacklog(log, opts.journal, opts.backlogMax);
    this.schedule = new WriteSchedule({
      windowMs: BATCH_WINDOW_MS,
      max: BATCH_MAX,
      // A batch with no charges still gives back idle leases and renews live ones when that is due.
      writeOne: () => this.writeBatch(),
      more: () => this.queue.length > 0 || this.closable().length > 0,
      onError: (err) => log.error({ err }, 'credits: a batch failed'),
    });
    // Idle leases go back, live ones are renewed; unref'd: it never keeps a process alive.
    this.ticker = setInterval(() => this.tick(), Math.min(250, LEASE_IDLE_MS)).unref();
  }

  /**
   * Free credits this instance holds for the account (leased, not held by a request in flight), counting those
   * a batch being written gives back: until it commits, the stored balance is without them.
   */
  free(accountId: string): number {
    const lease = this.leases.get(accountId);
    return (lease ? lease.granted - lease.held : 0) + (this.returning.get(accountId) ?? 0);
  }

  /** Admits a request by holding `amount` (its worst case); 402 when the balance is exhausted, 503 (backlog.admit). */
  async hold(accountId: string, amount: number): Promise<BankHold> {
    this.backlog.admit(this.queue.length + this.writingCount + this.inFlight);
    const need = Math.max(0, Math.ceil(amount));
    const now = this.clock();
    this.rate.add(accountId, need, now);
    let waited = false;
    for (;;) {
      const lease = this.leases.get(accountId);
      if (lease && lease.granted - lease.held >= need) {
        const hold = this.admit(lease, need, now);
        this.topUpEarly(lease, now);
        return hold;
      }
      if (!waited) this.stats.waits++;
      waited = true;
      if (lease?.taking) {
        await lease.taking.catch(() => {});
        continue;
      }
      // A lease of the account is being given back: take once its credits are in the balance again.
      const batch = this.schedule.writing;
      if (batch && this.returning.has(accountId)) {
        if (this.backlog.down) throw databaseUnavailable();
        await batch.catch(() => {});
        continue;
      }
      return this.take(accountId, lease, need, now);
    }
  }

  private admit(lease: Lease, need: number, now: number): BankHold {
    const balanceBefore = lease.total;
    lease.held += need;
    lease.holds++;
    this.inFlight++;
    lease.lastUsed = now;
    lease.closeWanted = false;
    this.endIdle(lease);
    return { accountId: lease.accountId, amount: need, balanceBefore, lease };
  }

  private async take(accountId: string, current: Lease | undefined, need: number, now: number): Promise<BankHold> {
    const lease: Lease = current ?? newLease(newId('creditHold'), accountId, now, false);
    if (!current) this.leases.set(accountId, lease);
    const free = lease.granted - lease.held;
    const want = takeSize(lease, need, this.rate.of(accountId, now));
    const seen = this.sight(lease);
    const taking = this.startTake(lease, need, want, free, now);
    let taken: Awaited<typeof taking>;
    try {
      taken = await taking;
    } catch (err) {
      this.forgetIfEmpty(lease);
      throw err;
    } finally {
      lease.taking = undefined;
    }
    if (!taken) {
      this.forgetIfEmpty(lease);
      // Refused with a lease no request holds from: give its credits back before answering, so the balance
      // the caller reads next is whole (the refusal counted them already).
      if (lease.holds === 0 && this.leases.get(accountId) === lease) {
        lease.closeWanted = true;
        await this.flush();
      }
      throw new CreditsExhaustedError();
    }
    applyTake(lease, taken, free, this.clean(lease, seen));
    if (taken.take > need) lease.sized = true;
    return this.admit(lease, need, now);
  }

  /**
   * A sized lease whose free credits fell below half of what its last take left free is topped up in the
   * background, to the account's recent rate, before a request finds it short: a steady stream of requests
   * never waits on a take, and a growing one takes a few times larger each time. It asks for nothing beyond
   * what is free (`need` = free), so it never takes the balance below zero and never refuses anyone: a refusal
   * or a failure only means no top-up (a request then short of credits takes on its path, as without it).
   */
  private topUpEarly(lease: Lease, now: number): void {
    if (!lease.sized || lease.taking || this.closed) return;
    const free = lease.granted - lease.held;
    if (free * 2 >= lease.topped) return;
    const want = topUpSize(lease, this.rate.of(lease.accountId, now).credits);
    const seen = this.sight(lease);
    const taking = this.startTake(lease, free, want, free, now);
    taking
      .then((taken) => {
        if (taken) applyTake(lease, taken, free, this.clean(lease, seen));
      })
      .catch((err: unknown) => this.log.warn({ err }, 'credits: topping a lease up early failed'))
      .finally(() => {
        lease.taking = undefined;
      });
  }

  /** Takes `want` credits into the lease (at least `need`, or none), `free` of them free before: a write. */
  private startTake(lease: Lease, need: number, want: number, free: number, now: number) {
    const taking = repo.takeLease(this.db, {
      id: lease.id,
      accountId: lease.accountId,
      need,
      want,
      free,
      expiresAt: new Date(now + LEASE_TTL_MS),
    });
    lease.taking = taking;
    this.stats.takes++;
    return taking;
  }

  /**
   * What a write that starts now will see of the lease's charges: the batches begun so far, unless one carrying
   * its charges is being written (whether that commits before the write reads is unknown).
   */
  private sight(lease: Lease): number | undefined {
    return this.schedule.writing && lease.chargedSeq === this.batchSeq ? undefined : this.batchSeq;
  }

  /** Whether a write begun at `seen` (sight) read exactly the lease's charges of the batches then committed. */
  private clean(lease: Lease, seen: number | undefined): boolean {
    return seen !== undefined && lease.chargedSeq <= seen;
  }

  /** A lease nothing was taken into and nothing holds from: drop it from memory (no row was written). */
  private forgetIfEmpty(lease: Lease): void {
    if (lease.granted === 0 && lease.holds === 0 && this.leases.get(lease.accountId) === lease) {
      this.leases.delete(lease.accountId);
    }
  }

  /**
   * Replaces a hold by the real cost: one ledger row (when the cost is above zero), written in the next batch.
   * Resolves once it is committed; the caller's answer need not wait for that.
   */
  settle(hold: BankHold, charge: BankCharge): Promise<void> {
    return this.charge(hold, charge).written;
  }

  /** settle, answering also the balance after the charge (every charge settled here until now counted). */
  charge(hold: BankHold, charge: BankCharge): BankSettled {
    const { lease } = hold;
    lease.held -= hold.amount;
    lease.holds--;
    this.inFlight--;
    lease.granted -= charge.cost;
    lease.total -= charge.cost;
    lease.unwritten += charge.cost;
    lease.lastUsed = Date.now();
    if (lease.holds === 0 && !lease.sized) lease.closeWanted = true;
    if (lease.holds === 0 && lease.sized && !lease.idle && this.background) {
      this.background.track(
        'credit lease',
        new Promise<void>((resolve) => {
          lease.idle = resolve;
        }),
      );
    }
    const row: repo.LeaseCharge = {
      id: newId('creditTransaction'),
      leaseId: lease.id,
      accountId: lease.accountId,
      cost: charge.cost,
      type: charge.type,
      description: charge.description,
      model: charge.model,
      promptTokens: charge.promptTokens,
      completionTokens: charge.completionTokens,
      requestId: charge.requestId,
      at: new Date(),
    };
    const written = this.queue.push(lease, row);
    this.backlog.settled(row);
    this.schedule.queued(this.queue.length);
    return { remaining: lease.total, written };
  }

  /** The balance users see for the account as this instance knows it without reading (while it holds a lease). */
  known(accountId: string): number | undefined {
    return this.leases.get(accountId)?.total;
  }

  /**
   * The balance users see for the account: `read` (readTotal, the database's figure) less this instance's charges
   * answered and not written yet. A batch carrying the account's charges may commit while `read` runs, so that
   * the figure could count them twice or not at all: it waits for one being written, and reads again when one
   * started meanwhile (batches start a window apart, so a second read is rare and a third rarer).
   */
  async shownBalance(accountId: string, read: () => Promise<number | undefined>): Promise<number | undefined> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const lease = this.leases.get(accountId);
      const writing = this.schedule.writing;
      if (writing && (this.returning.has(accountId) || (lease && lease.chargedSeq === this.batchSeq))) {
        if (this.backlog.down) throw databaseUnavailable();
        await writing.catch(() => {});
        continue;
      }
      const seen = this.batchSeq;
      const total = await read();
      if (total === undefined) return undefined;
      const now = this.leases.get(accountId);
      if (now === lease && (!lease || lease.chargedSeq <= seen)) return total - (lease?.unwritten ?? 0);
    }
    // Still racing batches: write what is queued, then read the database's figure.
    await this.flush();
    const total = await read();
    return total === undefined ? undefined : total - (this.leases.get(accountId)?.unwritten ?? 0);
  }

  private tick(): void {
    const now = Date.now();
    let due = false;
    for (const lease of this.leases.values()) {
      if (lease.holds === 0 && !lease.taking && now - lease.lastUsed >= LEASE_IDLE_MS) {
        lease.closeWanted = true;
        due = true;
      }
    }
    if (now - this.lastRenewal >= LEASE_TTL_MS / 3 && this.leases.size) due = true;
    if (due) this.schedule.soon();
  }

  /** Writes everything queued now, in batches of at most BATCH_MAX, and what arrives meanwhile. */
  flush(): Promise<void> {
    return this.schedule.flush();
  }

  private closable(): Lease[] {
    return [...this.leases.values()].filter((l) => l.closeWanted && l.holds === 0 && !l.taking);
  }

  private async writeBatch(): Promise<void> {
    if (this.backlog.leftForNextStart) {
      // Shutting down with the database unreachable: what is queued is in the journal already, and the leases are
      // left to expire (or to the next start, which gives back those its journal's charges name).
      for (const op of this.queue.drain()) op.settling.done();
      for (const lease of this.leases.values()) this.endIdle(lease);
      this.leases.clear();
      return;
    }
    const now = Date.now();
    const ops = this.queue.next(BATCH_MAX);
    const seq = ++this.batchSeq;
    for (const op of ops) {
      op.lease.unwritten -= op.charge.cost;
      op.lease.chargedSeq = seq;
    }
    const pendingAfter = this.queue.leases();
    const updates = new Map<Lease, repo.LeaseUpdate>();
    const update = (lease: Lease) => {
      let u = updates.get(lease);
      if (!u) {
        u = { leaseId: lease.id, accountId: lease.accountId, charged: 0, close: false };
        updates.set(lease, u);
      }
      return u;
    };
    for (const op of ops) update(op.lease).charged += op.charge.cost;
    for (const lease of this.closable()) if (!pendingAfter.has(lease)) update(lease);
    const renew = now - this.lastRenewal >= LEASE_TTL_MS / 3;
    if (renew) for (const lease of this.leases.values()) update(lease);
    // Leases given back leave memory now: a request arriving meanwhile takes a new one.
    for (const [lease, u] of updates) {
      if (lease.closeWanted && lease.holds === 0 && !lease.taking && !pendingAfter.has(lease)) {
        u.close = true;
        if (this.leases.get(lease.accountId) === lease) this.leases.delete(lease.accountId);
        this.returning.set(lease.accountId, (this.returning.get(lease.accountId) ?? 0) + lease.granted - lease.held);
      }
    }
    if (!updates.size) return;
    const batch = {
      charges: ops.map((o) => o.charge),
      leases: [...updates.values()],
      expiresAt: new Date(now + LEASE_TTL_MS),
    };
    this.writingCount = ops.length;
    const queued = () => this.queue.charges();
    const outcome = await this.backlog.write(batch.charges, queued, () => repo.writeLeaseBatch(this.db, batch));
    this.writingCount = 0;
    this.releaseReturning(updates);
    if (!outcome.ok) {
      // Left in the journal for the next start, the charges are settled; else lost (never credits: see giveUp).
      for (const op of ops) {
        if (outcome.journaled) op.settling.done();
        else op.settling.fail(outcome.err);
      }
      return;
    }
    this.stats.batches++;
    this.stats.charges += ops.length;
    if (renew) this.lastRenewal = now;
    // What the batch answered counts every charge of its leases up to this batch; those settled since are not in it.
    for (const lease of updates.keys()) {
      const written = outcome.value.get(lease.accountId);
      if (written !== undefined) lease.total = written.total - lease.unwritten;
    }
    for (const op of ops) op.settling.done();
  }

  /** The batch is written (or given up): what its leases gave back is in the stored balance now. */
  private releaseReturning(updates: Map<Lease, repo.LeaseUpdate>): void {
    for (const [lease, u] of updates) {
      if (!u.close) continue;
      this.returning.delete(u.accountId);
      this.endIdle(lease);
    }
  }

  private endIdle(lease: Lease): void {
    lease.idle?.();
    lease.idle = undefined;
  }

  /** Resolves once no take is in flight (a top-up ahead of need included). */
  async takesDone(): Promise<void> {
    await Promise.all([...this.leases.values()].map((lease) => lease.taking?.catch(() => {})));
  }

  /** Writes what is queued and gives back every lease no request holds from (tests, and shutdown). */
  async returnIdle(): Promise<void> {
    // A top-up still in flight would leave its credits in a row nothing gives back until it expires.
    await this.takesDone();
    await this.flush();
    for (const lease of this.leases.values()) if (lease.holds === 0) lease.closeWanted = true;
    await this.flush();
  }

  /**
   * Charges journaled on this DATA_DIR by an instance that stopped before the database took them (issue 39):
   * queued to be written now, each once (the ledger skips ids it has), their old leases given back with them (a
   * lease swept back meanwhile is charged from the balance: the ledger stays exact). Answers how many.
   */
  recover(): number {
    return this.backlog.recover(
      (charges) => {
        const leases = new Map<string, Lease>();
        for (const charge of charges) {
          let lease = leases.get(charge.leaseId);
          if (!lease) {
            lease = newLease(charge.leaseId, charge.accountId, 0, true);
            leases.set(charge.leaseId, lease);
          }
          lease.unwritten += charge.cost;
          // No caller waits on these: a batch given up is logged.
          this.queue.push(lease, charge).catch(() => {});
        }
      },
      () => this.queue.charges(),
    );
  }

  /** Shutting down: a batch the database does not take is left in the journal rather than tried until it does. */
  stopping(): void {
    this.backlog.stopping();
  }

  /** Shutdown: writes every charge and gives back the leases. Holds still in flight expire with their lease. */
  async close(): Promise<void> {
    this.backlog.stopping();
    clearInterval(this.ticker);
    await this.returnIdle();
    this.closed = true;
  }
}
