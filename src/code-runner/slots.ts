import { TooManyRequestsError } from '../lib/errors.ts';

/**
 * At most `size` runs at once; up to `maxWaiting` more wait in order, each at most `waitMs`. Past either bound
 * the caller gets a 429 at once (TooManyRequestsError with Retry-After) instead of hanging.
 */
export class Slots {
  private active = 0;
  private readonly waiting: Array<{ grant: () => void; fail: (err: Error) => void; timer: NodeJS.Timeout }> = [];

  constructor(
    private readonly size: number,
    private readonly maxWaiting: number,
    private readonly waitMs: number,
    private readonly label: string,
  ) {}

  get busy(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves when a slot is free; the answer releases it (once). */
  acquire(): Promise<() => void> {
    if (this.active < this.size) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    if (this.waiting.length >= this.maxWaiting) {
      return Promise.reject(
        new TooManyRequestsError(
          5,
          `The ${this.label} sandbox is busy: ${this.size} runs are running and ${this.waiting.length} waiting (the most allowed); retry later`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      const entry = {
        grant: () => {
          clearTimeout(entry.timer);
          resolve(this.releaser());
        },
        fail: (err: Error) => {
          clearTimeout(entry.timer);
          reject(err);
        },
        timer: setTimeout(() => {
          const at = this.waiting.indexOf(entry);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(
            new TooManyRequestsError(
              5,
              `The ${this.label} sandbox stayed busy for ${Math.round(this.waitMs / 1000)} s; retry later`,
            ),
          );
        }, this.waitMs),
      };
      this.waiting.push(entry);
    });
  }

  /** Refuses everything waiting (shutdown). */
  rejectWaiting(err: Error): void {
    for (const entry of this.waiting.splice(0)) entry.fail(err);
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiting.shift();
      if (next) next.grant();
      else this.active--;
    };
  }
}
