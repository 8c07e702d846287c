import { type Benchmark, load, rssMb, signupWithPat, startBenchServer, startChild, stopChild } from './lib.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const WARMUP_SECONDS = 2;

/**
 * An authenticated read, `GET /api/v1/accounts/me` with a PAT (guard, rate limiter, token cache, one account
 * query, response schema, request log hook), against a bare fastify JSON route: what the service's layers cost
 * per request on this machine. Both run as their own process, one at a time, loaded from this one.
 * No budget in ARCHITECTURE.md: the figures are for watching regressions. BENCH_PROFILE=DIR writes the
 * server's CPU profile there.
 */
export const apiBenchmark: Benchmark = {
  name: 'api',
  summary: `GET /api/v1/accounts/me with a PAT beside a bare fastify route (${CONNECTIONS} connections, ${SECONDS} s each)`,
  async run() {
    const bare = await startChild('bench/bare-hello.js');
    let baseline: Awaited<ReturnType<typeof load>>;
    try {
      await load(`${bare.line}/hello`, { seconds: WARMUP_SECONDS, connections: CONNECTIONS });
      baseline = await load(`${bare.line}/hello`, { seconds: SECONDS, connections: CONNECTIONS });
    } finally {
      await stopChild(bare.child);
    }

    const pg = process.env.BENCH_DATABASE_URL;
    const server = await startBenchServer();
    try {
      const pat = await signupWithPat(server.url, ['account']);
      const me = { headers: { authorization: `Bearer ${pat}` }, connections: CONNECTIONS };
      await load(`${server.url}/api/v1/accounts/me`, { ...me, seconds: WARMUP_SECONDS });
      const measured = await load(`${server.url}/api/v1/accounts/me`, { ...me, seconds: SECONDS });
      const rss = rssMb(server.child.pid);
      return {
        title: `GET /api/v1/accounts/me (PAT) on ${pg ? 'PostgreSQL' : 'PGlite'}, ${CONNECTIONS} connections, ${SECONDS} s`,
        baseline: 'bare fastify',
        figures: [
          { name: 'throughput', unit: 'req/s', value: measured.rps, baseline: baseline.rps },
          { name: 'latency p50', unit: 'ms', value: measured.p50, baseline: baseline.p50 },
          { name: 'latency p99', unit: 'ms', value: measured.p99, baseline: baseline.p99 },
          { name: 'RSS after the load', unit: 'MB', value: rss },
        ],
        notes: [
          ...(measured.failures + baseline.failures
            ? [`failures (non-2xx, errors, timeouts): switchboard ${measured.failures}, bare ${baseline.failures}`]
            : []),
          'bare fastify: GET /hello answering {"hello":"world"}, no plugins; both servers run alone, in turn.',
        ],
      };
    } finally {
      await server.stop();
    }
  },
};
