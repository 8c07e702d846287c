/**
 * A lease: credits an instance took from an account's balance into a `credit_holds` row it owns, to serve holds
 * from in memory (docs/concepts.md, "Credit leases and group commit"). Its amount is what was taken and neither
 * charged nor given back, so at every commit `balance + Σ lease amounts == Σ ledger`.
 */

/** A lease lives this long unless renewed: a crashed instance's leases come back once it passes. */
export const LEASE_TTL_MS = 2 * 60 * 1000;
/** A sized lease goes back after this long without requests. */
export const LEASE_IDLE_MS = 1000;
/** A lease takes at most this many credits, whatever the rate. */
export const LEASE_MAX_CREDITS = 1_000_000;
/** A sized lease takes about this many seconds of the account's recent rate. */
export const LEASE_RATE_SECONDS = 1;
/**
 * Requests of an account within about a second from which one at a time still get a sized lease: a client
 * sending one request after another is served from memory from its second request on; a lone request leases its
 * own hold and gives it back with its charge.
 */
export const LEASE_BUSY_RATE = 2;

export interface Lease {
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

/** A lease with nothing granted or held yet: a new one, or (recovering a journal) an old one to close. */
export function newLease(id: string, accountId: string, lastUsed: number, closeWanted: boolean): Lease {
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

/** Admissions per account over the last second, for sizing leases. */
export class RecentRate {
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

/**
 * What a take on the lease path asks for: while requests overlap or follow each other (LEASE_BUSY_RATE within
 * about a second), the account's recent rate, capped; otherwise one request's hold.
 */
export function takeSize(lease: Lease, need: number, recent: { credits: number; count: number }): number {
  const sized = lease.holds > 0 || recent.count >= LEASE_BUSY_RATE;
  return sized ? Math.max(need, Math.min(LEASE_MAX_CREDITS, recent.credits * LEASE_RATE_SECONDS)) : need;
}

/** What an early top-up asks for: the account's recent rate, at least the last take, capped. */
export function topUpSize(lease: Lease, recentCredits: number): number {
  return Math.min(LEASE_MAX_CREDITS, Math.max(recentCredits * LEASE_RATE_SECONDS, lease.topped));
}

/**
 * What a take wrote, in memory: the row grew by `take - free`, and `take` credits were free after it. Its total
 * is taken when the take read a known set of this lease's charges (`clean`; a new lease's always: it has none).
 */
export function applyTake(lease: Lease, taken: { take: number; total: number }, free: number, clean: boolean): void {
  lease.granted += taken.take - free;
  lease.topped = taken.take;
  if (clean) lease.total = taken.total - lease.unwritten;
}
