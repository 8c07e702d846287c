import type { Redis } from 'ioredis';
import type { Logger } from './logger.ts';

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
 * The Redis client the rate limits share counters through, when `REDIS_URL` is set and the limits are on (nothing
 * else uses Redis). Commands fail at once while Redis is away (no offline queue): each user of the client says
 * what it does then. Start-up waits for the client up to the connect timeout, then goes on without it.
 */
export async function openRedis(
  config: { redisUrl: string | undefined; rateLimits: { enabled: boolean } },
  log: Logger,
): Promise<Redis | undefined> {
  if (!config.redisUrl || !config.rateLimits.enabled) return undefined;
  // Loaded only when configured: most single-instance deployments never need the client.
  const redis = new (await import('ioredis')).Redis(config.redisUrl, {
    connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
  });
  // The client reconnects for ever and reports every failed attempt: say it once when Redis goes away and once
  // when it is back, not every two seconds.
  let down = false;
  const wentDown = (err?: Error) => {
    if (down) return;
    down = true;
    log.warn(
      { err: err?.message },
      'Redis is not reachable: rate limits are not enforced until it is (the sign-in limit counts in the database)',
    );
  };
  redis.on('error', wentDown);
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    log.info('Redis is reachable again: rate limits are enforced');
  });
  // Shared counters from the first request: until the client is ready its commands fail, and the limits with
  // them (fail open).
  if (!(await ready(redis, REDIS_CONNECT_TIMEOUT_MS))) wentDown();
  return redis;
}
