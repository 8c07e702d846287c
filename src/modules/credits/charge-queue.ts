import type { Lease } from './lease.ts';
import type { LeaseCharge } from './repo.ts';

/**
 * What the callers of `settle` wait on: one for all the charges queued between two batches (not a promise and a
 * callback a charge), settled once the last of them is written, or at the first failure.
 */
class Settling {
  readonly promise: Promise<void>;
  private resolve: () => void = () => {};
  private reject: (err: unknown) => void = () => {};
  /** Its charges not written yet. */
  left = 0;

  constructor() {
    this.promise = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /** One of its charges is written (or left in the journal for the next start): the last resolves it. */
  done(): void {
    if (--this.left === 0) this.resolve();
  }

  fail(err: unknown): void {
    this.reject(err);
  }
}

export interface Queued {
  charge: LeaseCharge;
  lease: Lease;
  settling: Settling;
}

/** The charges a credit bank settled in memory and has not put in a batch yet, in order. */
export class ChargeQueue {
  private items: Queued[] = [];
  /** What charges queued now wait on (a batch starting takes it: later ones get the next). */
  private settling: Settling | undefined;

  get length(): number {
    return this.items.length;
  }

  /** Queues a charge of `lease`; answers the promise of its write. */
  push(lease: Lease, charge: LeaseCharge): Promise<void> {
    this.settling ??= new Settling();
    this.settling.left++;
    this.items.push({ lease, charge, settling: this.settling });
    return this.settling.promise;
  }

  /** The next batch: at most `max` charges, the first queued; those queued from now on wait on the batch after. */
  next(max: number): Queued[] {
    this.settling = undefined;
    return this.items.splice(0, max);
  }

  /** Everything queued, taken out. */
  drain(): Queued[] {
    return this.items.splice(0);
  }

  charges(): LeaseCharge[] {
    return this.items.map((q) => q.charge);
  }

  leases(): Set<Lease> {
    return new Set(this.items.map((q) => q.lease));
  }
}
