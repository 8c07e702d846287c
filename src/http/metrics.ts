import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, onResponseHookHandler } from 'fastify';
import { collectDefaultMetrics, Gauge, type Metric, Registry } from 'prom-client';
import type { Deps } from '../context.ts';
import type { Database } from '../db/client.ts';
import { countJobs } from '../jobs/queue.ts';
import { UnauthorizedError } from '../lib/errors.ts';

/** Prometheus metrics at /metrics: requests and latency by route, the database pool, jobs, process figures. */
/** This instance's credit writes so far (credits' `creditStats`, given by the app). */
export type CreditStats = (deps: Deps) => { takes: number; batches: number; charges: number; waits: number };

export function registerMetrics(
  app: FastifyInstance,
  database: Database,
  requests: RequestMetrics,
  creditStats: CreditStats,
): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  registry.registerMetric(requests.counter as unknown as Metric);
  registry.registerMetric(requests.histogram as unknown as Metric);
  new Gauge({
    name: 'db_pool_connections',
    help: 'Database pool connections by state',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const s = database.poolStats();
      this.set({ state: 'total' }, s.total);
      this.set({ state: 'idle' }, s.idle);
      this.set({ state: 'waiting' }, s.waiting);
    },
  });

  new Gauge({
    name: 'jobs',
    help: 'Background jobs by status (every instance reports the same shared table)',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      try {
        for (const [status, n] of Object.entries(await countJobs(database.db))) this.set({ status }, n);
      } catch {
        // The database is down: /readyz says so; the other metrics still answer.
        this.reset();
      }
    },
  });

  new Gauge({
    name: 'credit_writes',
    help: "This instance's credit writes: lease takes (on a request's path or ahead of it), batches and the charges they wrote",
    labelNames: ['kind'] as const,
    registers: [registry],
    collect() {
      const s = creditStats(app.deps);
      this.set({ kind: 'lease_takes' }, s.takes);
      this.set({ kind: 'batches' }, s.batches);
      this.set({ kind: 'charges' }, s.charges);
    },
  });

  new Gauge({
    name: 'credit_lease_waits',
    help: 'Requests of this instance that waited on a lease take (a database write on their path) before admission',
    registers: [registry],
    collect() {
      this.set(creditStats(app.deps).waits);
    },
  });

  const token = app.deps.config.metricsToken;
  app.get('/metrics', { schema: { hide: true }, config: { auth: 'public', rateLimit: false } }, async (req, reply) => {
    if (token !== undefined && !bearerMatches(req.headers.authorization, token)) throw new UnauthorizedError();
    reply.type(registry.contentType);
    return registry.metrics();
  });
}

/** Whether the header is `Bearer <token>`, compared in constant time (both hashed, so lengths do not leak). */
function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer (.+)$/.exec(header ?? '')?.[1];
  if (given === undefined) return false;
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(token));
}

/**
 * Counts every request for /metrics (`registerMetrics`): each route its own (its pattern, never the raw URL: ids and
 * tokens stay out of labels), requests no route matched as `unmatched`. Called before any route is added.
 */
export function countRequests(app: FastifyInstance): RequestMetrics {
  const requests = new RequestMetrics();
  app.addHook('onRoute', (route) => {
    const record = requests.route(route.url);
    const own = route.onResponse;
    const hook: onResponseHookHandler = (req, reply, done) => {
      record(req.method, reply.statusCode, reply.elapsedTime);
      done();
    };
    route.onResponse = own === undefined ? [hook] : [...(Array.isArray(own) ? own : [own]), hook];
  });
  const unmatched = requests.route('unmatched');
  // A callback hook, not an async one: an async hook costs each request a promise.
  app.addHook('onResponse', (req, reply, done) => {
    if (req.is404) unmatched(req.method, reply.statusCode, reply.elapsedTime);
    done();
  });
  return requests;
}

/** The latency buckets of `http_request_duration_seconds`, in seconds. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Series {
  method: string;
  status: number;
  labels: { method: string; route: string; status_code: string };
  count: number;
  /** Seconds. */
  sum: number;
  /** Requests by the first bucket that holds them (not cumulative); the last is over every bound (+Inf). */
  buckets: number[];
}

/**
 * `http_requests_total` and `http_request_duration_seconds` by method, route pattern and status, kept as plain
 * numbers on the request's path and turned into Prometheus values when /metrics is read: prom-client's own Counter
 * and Histogram check and hash a request's labels on every `inc` and `observe`, which showed in the gateway's CPU
 * profile (docs/gateway-speed.md).
 */
export class RequestMetrics {
  private readonly all: Series[] = [];

  /** Records requests of one route pattern: (method, status, milliseconds). */
  route(route: string): (method: string, status: number, ms: number) => void {
    let last: Series | undefined;
    const byKey = new Map<string, Series>();
    return (method, status, ms) => {
      let s = last;
      if (s?.method !== method || s.status !== status) {
        const key = `${method} ${status}`;
        s = byKey.get(key);
        if (!s) {
          s = {
            method,
            status,
            labels: { method, route, status_code: String(status) },
            count: 0,
            sum: 0,
            buckets: new Array<number>(LATENCY_BUCKETS.length + 1).fill(0),
          };
          byKey.set(key, s);
          this.all.push(s);
        }
        last = s;
      }
      const seconds = ms / 1000;
      s.count++;
      s.sum += seconds;
      let i = 0;
      while (i < LATENCY_BUCKETS.length && seconds > (LATENCY_BUCKETS[i] as number)) i++;
      s.buckets[i] = (s.buckets[i] ?? 0) + 1;
    };
  }

  /** The counter, as a prom-client registry reads a metric. */
  readonly counter = scraped('http_requests_total', 'HTTP requests', 'counter', this, () =>
    this.all.map((s) => ({ labels: s.labels, value: s.count })),
  );

  /** The histogram, as a prom-client registry reads a metric: cumulative buckets, then the sum and the count. */
  readonly histogram = scraped('http_request_duration_seconds', 'HTTP request latency', 'histogram', this, () =>
    this.all.flatMap((s) => {
      let below = 0;
      const bucket = (le: number | string, n: number) => {
        below += n;
        return { labels: { ...s.labels, le }, value: below, metricName: 'http_request_duration_seconds_bucket' };
      };
      return [
        ...LATENCY_BUCKETS.map((le, i) => bucket(le, s.buckets[i] ?? 0)),
        bucket('+Inf', s.buckets[LATENCY_BUCKETS.length] ?? 0),
        { labels: s.labels, value: s.sum, metricName: 'http_request_duration_seconds_sum' },
        { labels: s.labels, value: s.count, metricName: 'http_request_duration_seconds_count' },
      ];
    }),
  );

  /** Back to zero (prom-client's `registry.resetMetrics()`). */
  reset(): void {
    for (const s of this.all) {
      s.count = 0;
      s.sum = 0;
      s.buckets.fill(0);
    }
  }
}

/** A metric as a prom-client registry reads one (`get`, `reset`), its values made when /metrics is read. */
function scraped(
  name: string,
  help: string,
  type: 'counter' | 'histogram',
  owner: { reset(): void },
  values: () => Array<{ labels: Record<string, string | number>; value: number; metricName?: string }>,
) {
  return {
    name,
    help,
    type,
    aggregator: 'sum',
    get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
    reset: () => owner.reset(),
  };
}
