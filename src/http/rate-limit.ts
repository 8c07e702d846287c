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

const REDIS_CONNECT_TIMEOUT_MS = 2000;

/** Resolves true once the client is ready, false on its first error or after `timeoutMs`. */
function ready(redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
      resolve(ok);
    };
    const onReady = () => done(true);
    const onError = () => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    redis.once('ready', onReady);
    redis.once('error', onError);
  });
}

/**
 * SPEC §8 limits. Counters live in memory, or in Redis when `REDIS_URL` is set so that instances share them.
 * A Redis outage fails open (requests pass) rather than taking the API down.
 */
export async function registerRateLimit(app: FastifyInstance, config: Config): Promise<Redis | undefined> {
  const { rateLimits } = config;
  if (!rateLimits.enabled) return undefined;
  const redis = config.redisUrl
    ? // Loaded only when configured: most single-instance deployments never need the client.
      new (await import('ioredis')).Redis(config.redisUrl, {
        connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
      })
    : undefined;
  // The client reconnects for ever and reports every failed attempt: say it once when Redis goes away and once
  // when it is back, not every two seconds.
  let down = false;
  const wentDown = (err?: Error) => {
    if (down) return;
    down = true;
    app.log.warn({ err: err?.message }, 'Redis is not reachable: rate limits are not enforced until it is');
  };
  redis?.on('error', wentDown);
  redis?.on('ready', () => {
    if (!down) return;
    down = false;
    app.log.info('Redis is reachable again: rate limits are enforced');
  });
  // Shared counters from the first request: until the client is ready its commands fail, and the limits with
  // them (fail open). Start-up waits for it up to the connect timeout, then goes on (Redis down: fail open).
  if (redis && !(await ready(redis, REDIS_CONNECT_TIMEOUT_MS))) wentDown();
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
  return redis;
}
