import type { Redis } from 'ioredis';
import { countSignInAttempts } from '../../access/repo.ts';
import type { PublicContext } from '../../context.ts';
import { TooManyRequestsError } from '../../lib/errors.ts';
import { sha256Hex } from '../../lib/ids.ts';

/**
 * SPEC §8's sign-in limit, one budget for every way in: `POST /auth/authenticate`, the sign-in page and the
 * OAuth sign-in all count here (their routes' own limiters count per route), per client address and per
 * account (the e-mail tried, whether or not it exists, so the answer says nothing about it).
 *
 * The counters are shared by every instance behind the balancer: in Redis when `REDIS_URL` is set (as the other
 * limits), else in the database. A Redis outage does not open the door: the attempt is counted in the database.
 * Keys are hashed, so neither store keeps the e-mails tried in the clear.
 */
interface Window {
  count: number;
  /** When the window ends, in ms since the epoch. */
  resetAt: number;
}

const REDIS_PREFIX = 'sb:signin:';

/** Counts one attempt per key in Redis (one round trip); undefined when Redis does not answer. */
async function countInRedis(redis: Redis, keys: readonly string[], windowMs: number): Promise<Window[] | undefined> {
  const tx = redis.multi();
  for (const key of keys) {
    // The window starts with the first attempt: its expiry is set once, and INCR keeps it.
    tx.set(REDIS_PREFIX + key, 0, 'PX', windowMs, 'NX')
      .incr(REDIS_PREFIX + key)
      .pttl(REDIS_PREFIX + key);
  }
  const replies = await tx.exec().catch(() => null);
  if (!replies || replies.some(([err]) => err)) return undefined;
  const now = Date.now();
  return keys.map((_, i) => {
    const ttl = Number(replies[i * 3 + 2]?.[1]);
    return { count: Number(replies[i * 3 + 1]?.[1]), resetAt: now + (ttl > 0 ? ttl : windowMs) };
  });
}

/** Counts one sign-in attempt; 429 once the address or the account has used `RATE_LIMIT_AUTH` in the window. */
export async function countSignInAttempt(ctx: PublicContext, email: string): Promise<void> {
  const { enabled, auth: max, windowMs } = ctx.deps.config.rateLimits;
  if (!enabled) return;
  const keys = [`ip:${ctx.ip}`, `acct:${email.trim().toLowerCase()}`].map(sha256Hex);
  const windows =
    (ctx.deps.redis && (await countInRedis(ctx.deps.redis, keys, windowMs))) ??
    (await countSignInAttempts(ctx.db, keys, windowMs)).map((w) => ({
      count: w.count,
      resetAt: w.resetAt.getTime(),
    }));
  const now = Date.now();
  let retryAfterMs = 0;
  for (const window of windows) {
    if (window.count > max) retryAfterMs = Math.max(retryAfterMs, window.resetAt - now, 1000);
  }
  if (retryAfterMs > 0)
    throw new TooManyRequestsError(retryAfterMs / 1000, 'Too many sign-in attempts; try again later');
}
