import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/client.ts';
import { countJobs } from '../jobs/queue.ts';
import { creditStats } from '../modules/credits/service.ts';

/** Prometheus metrics at /metrics: requests and latency by route, the database pool, jobs, process figures. */
export function registerMetrics(app: FastifyInstance, database: Database): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const labelNames = ['method', 'route', 'status_code'] as const;
  type Label = (typeof labelNames)[number];
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
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

  // The series of each (method, route, status), made once: prom-client otherwise hashes the labels of every
  // request twice, on the hot path.
  const series = new Map<string, { count: Counter.Internal; time: Histogram.Internal<Label> }>();
  // A callback hook, not an async one: an async hook costs each request a promise.
  app.addHook('onResponse', (req, reply, done) => {
    // The route pattern, never the raw URL: ids and tokens stay out of labels.
    const route = req.routeOptions.url ?? 'unmatched';
    const key = `${req.method} ${reply.statusCode} ${route}`;
    let s = series.get(key);
    if (!s) {
      const labels = { method: req.method, route, status_code: String(reply.statusCode) };
      s = { count: requests.labels(labels), time: duration.labels(labels) };
      series.set(key, s);
    }
    s.count.inc();
    s.time.observe(reply.elapsedTime / 1000);
    done();
  });

  app.get('/metrics', { schema: { hide: true }, config: { auth: 'public', rateLimit: false } }, async (_req, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });
}
