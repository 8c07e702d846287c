import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import { TooManyRequestsError } from '../lib/errors.ts';

/** Per account when the caller is known, else per client address (as TRUST_PROXY lets us see it). */
export function rateLimitKey(req: FastifyRequest): string {
  return req.actor ? `acct:${req.actor.accountId}` : `ip:${req.ip}`;
}

/** Per client address, whoever is signed in: for anonymous endpoints such as sign-in and registration. */
export function ipKey(req: FastifyRequest): string {
  return `ip:${req.ip}`;
}

/**
 * SPEC §8 limits. Counters live in memory, or in Redis (`redis`, opened by lib/redis.ts when `REDIS_URL` is set)
 * so that instances share them. A Redis outage fails open (requests pass) rather than taking the API down.
 */
export async function registerRateLimit(app: FastifyInstance, config: Config, redis: Redis | undefined): Promise<void> {
  const { rateLimits } = config;
  if (!rateLimits.enabled) return;
  await app.register(rateLimit, {
    global: true,
    max: rateLimits.global,
    timeWindow: rateLimits.windowMs,
    keyGenerator: rateLimitKey,
    redis,
    nameSpace: 'sb:rl:',
    skipOnError: true,
    errorResponseBuilder: (_req, ctx) =>
      new TooManyRequestsError(
        ctx.ttl / 1000,
        `Rate limit exceeded (${ctx.max} requests per window); retry in ${ctx.after}`,
      ),
  });
}
