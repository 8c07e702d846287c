import type { PublicContext } from '../../lib/context.ts';
import { TooManyRequestsError } from '../../lib/errors.ts';
import { TtlCache } from '../../lib/ttl-cache.ts';

/**
 * SPEC §8's sign-in limit, one budget for every way in: `POST /auth/authenticate`, the sign-in page and the
 * OAuth sign-in all count here (their routes' own limiters count per route), per client address and per
 * account (the e-mail tried, whether or not it exists, so the answer says nothing about it). Counters live in
 * the instance's memory.
 */
interface Window {
  count: number;
  resetAt: number;
}

const budgets = new WeakMap<PublicContext['deps'], TtlCache<string, Window>>();

/** Counts one sign-in attempt; 429 once the address or the account has used `RATE_LIMIT_AUTH` in the window. */
export function countSignInAttempt(ctx: PublicContext, email: string): void {
  const { enabled, auth: max, windowMs } = ctx.deps.config.rateLimits;
  if (!enabled) return;
  let windows = budgets.get(ctx.deps);
  if (!windows) {
    windows = new TtlCache<string, Window>(windowMs, 100_000);
    budgets.set(ctx.deps, windows);
  }
  const now = Date.now();
  let retryAfterMs = 0;
  for (const key of [`ip:${ctx.ip}`, `acct:${email.trim().toLowerCase()}`]) {
    const window = windows.get(key, now) ?? { count: 0, resetAt: now + windowMs };
    window.count += 1;
    windows.set(key, window, window.resetAt);
    if (window.count > max) retryAfterMs = Math.max(retryAfterMs, window.resetAt - now);
  }
  if (retryAfterMs > 0)
    throw new TooManyRequestsError(retryAfterMs / 1000, 'Too many sign-in attempts; try again later');
}
