import type { Db } from '../../db/client.ts';
import type { BackgroundTasks } from '../../lib/background.ts';
import {
  CreditsExhaustedError,
  DATABASE_RETRY_AFTER_SECONDS,
  databaseUnavailable,
  isDatabaseUnavailable,
  ServiceUnavailableError,
} from '../../lib/errors.ts';
import { WriteSchedule } from '../../lib/group-commit.ts';
import { newId } from '../../lib/ids.ts';
import type { Logger } from '../../lib/logger.ts';
import type { ChargeJournal } from './journal.ts';
import * as repo from './repo.ts';

/**
 * The credits of one instance: leases taken from account balances, the holds served from them in memory, and
 * the group commit that writes their charges.
 *
 * A lease is a row of `credit_holds` (account, amount, expires_at) owned by this instance. Its amount is what
 * the instance took from the balance and has neither charged (in a written ledger row) nor given back; so at
 * every commit `balance + Σ lease amounts == Σ ledger`, and once leases are given back the balance equals the
 * ledger. A request holds its worst case from the lease's free credits (amount less what is held); when they
 * do not cover it, one statement takes more from the balance, admitted while the balance plus this lease's
 * free credits is above zero, which is the rule a single hold always followed: however many requests run on
 * however many instances, an account goes below zero by at most one request's worst case.
 *
 * A lease starts at one request's hold; when several requests of the account are in flight it is sized from
 * the account's recent rate (about `LEASE_RATE_SECONDS` of it), bounded by `LEASE_MAX_CREDITS` and by half of
 * what is available. A lease of one request goes back with that request's charge; a larger one after
 * `LEASE_IDLE_MS` without requests, and every lease on shutdown. A crashed instance's leases are given back
 * once they expire (`LEASE_TTL_MS`, renewed while the instance lives): by the next take on the account, or by
 * the `credits.release-expired-holds` job.
 *
 * What users see (`creditBalance`, `X-Credits-Remaining`) is the *total*: the stored balance plus every lease's
 * amount, which takes and returns leave unchanged (they move credits between the two), so only charges and
 * additions change it. Takes and batches answer it; each lease keeps it in memory less the charges settled since
 * (`Lease.total`), which is what an answer tells; a read subtracts the charges not written yet (shownBalance).
 */
export const LEASE_TTL_MS = 2 * 60 * 1000;
export const LEASE_IDLE_MS = 1000;
export const LEASE_MAX_CREDITS = 1_000_000;
export const LEASE_RATE_SECONDS = 1;
/**
 * Requests of an account within about a second from which one at a time still get a sized lease: a client
 * sending one request after another is served from memory from its second request on; a lone request leases its
 * own hold and gives it back with its charge.
 */
export const LEASE_BUSY_RATE = 2;
/**
 * Group commit: charges wait at most this long for others to share their write, and batches start at least
 * this far apart (WriteSchedule). Longer than the window of conversation writes on PostgreSQL
 * (GROUP_COMMIT_WINDOW_MS, 5 ms there, which other instances must see soon): no one reads a charge at once. At
 * 940 requests a second on PostgreSQL (200 ms upstream, 200 concurrent) batches that followed each other as soon
 * as one committed were 14.6 per 100 requests and cost the database 180 µs of CPU a request on the same two
 * cores; one a window, its statement planned once per connection, 70 µs. A crash loses at most this window's
 * charges and the batch being written, never credits...
 */
export const BATCH_WINDOW_MS = 20;
/** ...and a batch holds at most this many (the rest go in the next one, at once). */
export const BATCH_MAX = 1000;
/** Charges kept unwritten at most (CREDITS_BACKLOG_MAX's default), see CreditBank.hold. */
export const BACKLOG_MAX = 10_000;
/** While the database is unreachable a batch is tried again this often at most (backing off from 50 ms). */
export const RETRY_MAX_MS = 1000;

interface Lease {
  id: string;
  accountId: string;
  /** The row's amount once every queued charge is written. */
  granted: number;
  /** Worst cases of the requests in flight. */
  held: number;
  holds: number;
  /** Sized for a rate, not one request: kept while idle for LEASE_IDLE_MS. */
  sized: boolean;
  /** Its free credits right after its last take: below half of that, it is topped up early. */
  topped: number;
  /**
   * The account's balance as users see it (readTotal: the stored balance plus every lease's unspent credits, on
   * every instance) as this instance's last clean write on the account answered it, less this instance's charges
   * since: the `X-Credits-Remaining` of the next answer, once its own cost is taken off.
   */
  total: number;
  /** Costs of its charges settled and in no batch yet. */
  unwritten: number;
  /** The batch (CreditBank.batchSeq) that last carried its charges. */
  chargedSeq: number;
  lastUsed: number;
  /** A take in flight for this account: others wait for it rather than take too. */
  taking?: Promise<unknown> | undefined;
  /** Give it back in the next batch (once no request holds from it). */
  closeWanted: boolean;
  /** Resolves once an idle sized lease is given back or used again. */
  idle?: (() => void) | undefined;
}

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

/**
 * What the callers of `settle` wait on: one for all the charges queued between two batches (not a promise and a
 * callback a charge), settled once the last of them is written, or at the first failure.
 */
interface Settling {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
  /** Its charges not written yet. */
  left: number;
}

interface Queued {
  charge: repo.LeaseCharge;
  lease: Lease;
  settling: Settling;
}

/** Admissions per account over the last second, for sizing leases. */
class RecentRate {
  private readonly windows = new Map<
    string,
    { start: number; credits: number; previous: number; count: number; previousCount: number }
  >();

  add(accountId: string, credits: number, now: number): void {
    let w = this.windows.get(accountId);
    if (!w || now - w.start >= 2000) {
      w = { start: now, credits: 0, previous: 0, count: 0, previousCount: 0 };
      this.windows.set(accountId, w);
    } else if (now - w.start >= 1000) {
      w.previous = w.credits;
      w.previousCount = w.count;
      w.credits = 0;
      w.count = 0;
      w.start = now;
    }
    w.credits += credits;
    w.count++;
    if (this.windows.size > 10_000) this.windows.clear();
  }

  /** Credits and requests admitted in about the last second. */
  of(accountId: string, now: number): { credits: number; count: number } {
    const w = this.windows.get(accountId);
    if (!w || now - w.start >= 2000) return { credits: 0, count: 0 };
    if (now - w.start >= 1000) return { credits: w.credits, count: w.count };
    return { credits: Math.max(w.credits, w.previous), count: Math.max(w.count, w.previousCount) };
  }
}

/** A bank's write counters before it wrote anything. */
export function noWrites(): { takes: number; batches: number; charges: number; waits: number } {
  return { takes: 0, batches: 0, charges: 0, waits: 0 };
}

export class CreditBank {
  /**
   * Writes so far: lease takes and batches (after the answer), the charges batches wrote, and the requests
   * that waited on a take (a write on their path).
   */
  readonly stats = noWrites();
  private readonly leases = new Map<string, Lease>();
  private queue: Queued[] = [];
  /** What charges queued now wait on (a batch starting takes it: later ones get the next). */
  private settling: Settling | undefined;
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
  /** Since when the database has been unreachable to a batch (undefined: it answers). */
  private keptSince: number | undefined;
  /** The charges not written yet are in the journal (the database was unreachable); new ones are appended. */
  private journaling = false;
  /** Shutting down: a batch the database does not take is journaled and left to the next start. */
  private closing = false;
  /** Shutting down with the database unreachable: what is queued is journaled, not tried again. */
  private leftForNextStart = false;
  private readonly journal: ChargeJournal | undefined;
  private readonly backlogMax: number;

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
    this.journal = opts.journal;
    this.backlogMax = opts.backlogMax ?? BACKLOG_MAX;
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

  /**
   * Admits a request by holding `amount` (its worst case); 402 when the balance is exhausted. 503 (with
   * Retry-After) while `backlogMax` charges wait unwritten, counting those of the requests in flight: the database
   * has been unreachable that long, and a charge is never dropped to make room.
   */
  async hold(accountId: string, amount: number): Promise<BankHold> {
    if (this.queue.length + this.writingCount + this.inFlight >= this.backlogMax) {
      throw new ServiceUnavailableError(
        'Charges cannot be recorded now (the database is unreachable); retry shortly',
        DATABASE_RETRY_AFTER_SECONDS,
      );
    }
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
        if (this.keptSince !== undefined) throw databaseUnavailable();
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
    // Sized from the rate while requests overlap or follow each other (LEASE_BUSY_RATE within about a second);
    // otherwise a lease is one request's hold.
    const recent = this.rate.of(accountId, now);
    const want =
      lease.holds > 0 || recent.count >= LEASE_BUSY_RATE
        ? Math.min(LEASE_MAX_CREDITS, Math.max(need, recent.credits * LEASE_RATE_SECONDS))
        : need;
    const seen = this.sight(lease);
    const taking = repo.takeLease(this.db, {
      id: lease.id,
      accountId,
      need,
      want: Math.max(want, need),
      free,
      expiresAt: new Date(now + LEASE_TTL_MS),
    });
    lease.taking = taking;
    this.stats.takes++;
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
      throw new CreditsExhaustedError('Insufficient credits: the balance is exhausted; add credits to continue');
    }
    this.applyTake(lease, taken, free, seen);
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
    const rate = this.rate.of(lease.accountId, now).credits * LEASE_RATE_SECONDS;
    const seen = this.sight(lease);
    const taking = repo.takeLease(this.db, {
      id: lease.id,
      accountId: lease.accountId,
      need: free,
      want: Math.min(LEASE_MAX_CREDITS, Math.max(rate, lease.topped)),
      free,
      expiresAt: new Date(now + LEASE_TTL_MS),
    });
    lease.taking = taking;
    this.stats.takes++;
    taking
      .then((taken) => {
        if (taken) this.applyTake(lease, taken, free, seen);
      })
      .catch((err: unknown) => this.log.warn({ err }, 'credits: topping a lease up early failed'))
      .finally(() => {
        lease.taking = undefined;
      });
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

  /**
   * What a take wrote, in memory: the row grew by `take - free`, and `take` credits were free after it. Its total
   * is taken when it read a known set of this lease's charges (a new lease's always: it has none).
   */
  private applyTake(
    lease: Lease,
    taken: { take: number; total: number },
    free: number,
    seen: number | undefined,
  ): void {
    lease.granted += taken.take - free;
    lease.topped = taken.take;
    if (this.clean(lease, seen)) lease.total = taken.total - lease.unwritten;
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
    const settling = this.settling ?? this.newSettling();
    settling.left++;
    const queued: Queued = {
      lease,
      charge: {
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
      },
      settling,
    };
    this.queue.push(queued);
    if (this.journaling) this.journal?.append(queued.charge);
    this.schedule.queued(this.queue.length);
    return { remaining: lease.total, written: settling.promise };
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
        if (this.keptSince !== undefined) throw databaseUnavailable();
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

  /** What the charges queued from now until the next batch starts wait on. */
  private newSettling(): Settling {
    let resolve = () => {};
    let reject: (err: unknown) => void = () => {};
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.settling = { promise, resolve, reject, left: 0 };
    return this.settling;
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
    if (this.leftForNextStart) {
      // Shutting down with the database unreachable: what is queued is in the journal already, and the leases are
      // left to expire (or to the next start, which gives back those its journal's charges name).
      for (const op of this.queue.splice(0)) if (--op.settling.left === 0) op.settling.resolve();
      for (const lease of this.leases.values()) this.endIdle(lease);
      this.leases.clear();
      return;
    }
    const now = Date.now();
    const ops = this.queue.splice(0, BATCH_MAX);
    this.settling = undefined;
    const seq = ++this.batchSeq;
    for (const op of ops) {
      op.lease.unwritten -= op.charge.cost;
      op.lease.chargedSeq = seq;
    }
    const pendingAfter = new Set(this.queue.map((q) => q.lease));
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
    let balances: Map<string, { balance: number; total: number }> | undefined;
    this.writingCount = ops.length;
    for (let attempt = 0; ; attempt++) {
      try {
        balances = await repo.writeLeaseBatch(this.db, batch);
        this.stats.batches++;
        this.stats.charges += ops.length;
        break;
      } catch (err) {
        // The database unreachable, the batch is kept (journaled) and tried again until it answers; written again,
        // a batch whose commit's answer was lost changes nothing (writeLeaseBatch). Any other failure is tried
        // three times more, and so is an outage while shutting down (the journal keeps it for the next start).
        const unreachable = isDatabaseUnavailable(err);
        if (unreachable) this.keep(ops, err);
        if (this.closing || this.closed ? attempt >= 2 : !unreachable && attempt >= 3) {
          this.giveUp(ops, err, unreachable && this.journal !== undefined);
          this.releaseReturning(updates);
          return;
        }
        await new Promise((r) => setTimeout(r, Math.min(RETRY_MAX_MS, 50 * 2 ** attempt)));
      }
    }
    this.writingCount = 0;
    this.releaseReturning(updates);
    if (this.keptSince !== undefined) {
      this.log.info(
        { downMs: Date.now() - this.keptSince, charges: ops.length + this.queue.length },
        'credits: the database answers again; the charges kept meanwhile are written',
      );
      this.keptSince = undefined;
    }
    if (this.journaling) this.rejournal();
    if (renew) this.lastRenewal = now;
    // What the batch answered counts every charge of its leases up to this batch; those settled since are not in it.
    for (const lease of updates.keys()) {
      const written = balances.get(lease.accountId);
      if (written !== undefined) lease.total = written.total - lease.unwritten;
    }
    for (const op of ops) if (--op.settling.left === 0) op.settling.resolve();
  }

  /**
   * The database did not take a batch: its charges, and those queued after it, are kept until it does, in memory
   * and in the journal (new ones are appended as they are settled). The outage is logged once.
   */
  private keep(ops: Queued[], err: unknown): void {
    if (this.keptSince === undefined) {
      this.keptSince = Date.now();
      this.log.warn(
        { err, charges: ops.length + this.queue.length, backlogMax: this.backlogMax },
        'credits: the database is unreachable; charges are kept until it answers',
      );
    }
    if (this.journal && !this.journaling) {
      this.journal.write([...ops, ...this.queue].map((q) => q.charge));
      this.journaling = true;
    }
  }

  /**
   * A batch is not tried again: shutting down with its charges journaled (the next start writes them), or a
   * failure other than an outage (the charges are lost, never credits: their leases' rows still hold them until
   * given back).
   */
  private giveUp(ops: Queued[], err: unknown, journaled: boolean): void {
    this.writingCount = 0;
    if (journaled) {
      this.leftForNextStart = true;
      this.log.warn(
        { charges: ops.length + this.queue.length },
        'credits: stopping with charges unwritten; they stay in the journal under DATA_DIR and the next start writes them',
      );
      for (const op of ops) if (--op.settling.left === 0) op.settling.resolve();
      return;
    }
    this.log.error({ err, charges: ops.length }, 'credits: a batch of charges could not be written');
    for (const op of ops) op.settling.reject(err);
    if (this.journaling) this.rejournal();
  }

  /** The journal holds what is queued now, and only that (nothing once the queue is empty). */
  private rejournal(): void {
    this.journal?.write(this.queue.map((q) => q.charge));
    this.journaling = this.queue.length > 0;
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
    if (!this.journal) return 0;
    const { charges, files } = this.journal.recover();
    if (!files.length) return 0;
    const leases = new Map<string, Lease>();
    const settling = this.settling ?? this.newSettling();
    settling.promise.catch(() => {}); // no caller waits on these: a batch given up is logged (giveUp)
    for (const charge of charges) {
      let lease = leases.get(charge.leaseId);
      if (!lease) {
        lease = newLease(charge.leaseId, charge.accountId, 0, true);
        leases.set(charge.leaseId, lease);
      }
      lease.unwritten += charge.cost;
      settling.left++;
      this.queue.push({ lease, charge, settling });
    }
    // This instance's own journal holds them before the old files go: a crash now loses none either.
    this.rejournal();
    this.journal.forget(files);
    if (charges.length)
      this.log.info({ charges: charges.length }, 'credits: writing the charges journaled before a stop');
    return charges.length;
  }

  /** Shutting down: a batch the database does not take is left in the journal rather than tried until it does. */
  stopping(): void {
    this.closing = true;
  }

  /** Shutdown: writes every charge and gives back the leases. Holds still in flight expire with their lease. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.ticker);
    await this.returnIdle();
    this.closed = true;
  }
}

/** A lease with nothing granted or held yet: a new one, or (recovering a journal) an old one to close. */
function newLease(id: string, accountId: string, lastUsed: number, closeWanted: boolean): Lease {
  return {
    id,
    accountId,
    granted: 0,
    held: 0,
    holds: 0,
    sized: false,
    topped: 0,
    total: 0,
    unwritten: 0,
    chargedSeq: 0,
    lastUsed,
    closeWanted,
  };
}
