import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import type { ServerProcess } from '../test/server-process.ts';
import {
  type BenchResult,
  type Figure,
  median,
  signupWithPat,
  startBenchServer,
  startChild,
  stopChild,
} from './lib.ts';
import { chatBody, gatewayEnv, load, type Result } from './llm-gateway.ts';

/**
 * This checkout's LLM gateway against another checkout's (BENCH_BASE_DIR, say a `git worktree` of main whose
 * node_modules links to this checkout's: with its own, two copies of vitest load in one process), both running at once under the same load, their rounds interleaved (A B, then B A, ...) so that
 * a change in the shared machine's load falls on both: what a change to the hot path saves, to within a few µs of
 * CPU per request where separate runs of `llm-gateway` differ by 10%. The instant upstream, 50 concurrent
 * (BENCH_LEVELS' first level), JSON and streamed (BENCH_MODES), BENCH_ROUNDS rounds (default 6) of
 * BENCH_DURATION_MS each; PostgreSQL with BENCH_DATABASE_URL. Medians of the rounds. BENCH_TRACING=1 turns
 * OpenTelemetry tracing on for this checkout's server alone, exporting to a loopback OTLP sink that answers 200:
 * with BENCH_BASE_DIR a checkout of the same commit, what tracing costs when on.
 */
const ROUNDS = Math.max(2, Number(process.env.BENCH_ROUNDS ?? 6));
const CONCURRENCY = Number((process.env.BENCH_LEVELS ?? '50').split(',')[0]);
const MODES = (process.env.BENCH_MODES ?? 'json,stream').split(',');
const TRACING = process.env.BENCH_TRACING === '1';

/** An OTLP/HTTP receiver that reads each export and answers 200, counting the requests. */
async function startOtlpSink(): Promise<{ server: Server; url: string; exports: () => number }> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, exports: () => count };
}

interface Side {
  name: string;
  server: ServerProcess;
  pat: string;
  results: Record<string, Result[]>;
}

export async function gatewayAbBenchmark(): Promise<BenchResult> {
  const baseDir = process.env.BENCH_BASE_DIR;
  if (!baseDir) throw new Error('gateway-ab needs BENCH_BASE_DIR: the path of the checkout to compare with');
  const upstream = await startChild('bench/llm-upstream.js');
  const env = gatewayEnv(upstream.line);
  const sink = TRACING ? await startOtlpSink() : undefined;
  const sides: Side[] = [];
  try {
    // The base checkout's own server launcher, so that its code (bundled from its src/) is what runs.
    const base = (await import(resolve(baseDir, 'bench/lib.ts'))) as { startBenchServer: typeof startBenchServer };
    for (const [name, start] of [
      ['this checkout', startBenchServer],
      ['base', base.startBenchServer],
    ] as const) {
      const traced: Record<string, string> =
        sink && name === 'this checkout' ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : {};
      const server = await start({ ...env, ...traced });
      sides.push({ name, server, pat: await signupWithPat(server.url, ['llm-all']), results: {} });
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of MODES) {
        const body = chatBody('bench-instant', mode === 'stream');
        for (const side of round % 2 ? [...sides].reverse() : sides) {
          const result = await load(
            new URL(side.server.url).origin,
            '/api/v1/chat/completions',
            { authorization: `Bearer ${side.pat}` },
            body,
            CONCURRENCY,
            mode === 'stream',
            side.server.child.pid,
          );
          side.results[mode] = [...(side.results[mode] ?? []), result];
        }
      }
    }
    const [mine, theirs] = sides as [Side, Side];
    const figures: Figure[] = MODES.flatMap((mode) => {
      const of = (side: Side, f: (r: Result) => number) => median((side.results[mode] ?? []).map(f));
      return [
        {
          name: `${mode}: CPU µs per request`,
          unit: 'µs',
          value: of(mine, (r) => r.cpu),
          baseline: of(theirs, (r) => r.cpu),
        },
        {
          name: `${mode}: throughput`,
          unit: 'req/s',
          value: of(mine, (r) => r.rps),
          baseline: of(theirs, (r) => r.rps),
        },
      ] satisfies Figure[];
    });
    const rounds = (side: Side, mode: string) => (side.results[mode] ?? []).map((r) => r.cpu.toFixed(0)).join(' ');
    return {
      title: `LLM gateway, this checkout${sink ? ' with tracing on' : ''} against ${baseDir} (instant upstream, ${CONCURRENCY} concurrent, ${ROUNDS} interleaved rounds)`,
      baseline: 'base',
      figures,
      notes: [
        ...MODES.map(
          (mode) => `${mode} CPU µs per request by round: this ${rounds(mine, mode)}; base ${rounds(theirs, mode)}`,
        ),
        ...(sink ? [`OTLP exports received by the sink: ${sink.exports()}`] : []),
      ],
    };
  } finally {
    for (const side of sides) await side.server.stop();
    await stopChild(upstream.child);
    if (sink) await new Promise((done) => sink.server.close(done));
  }
}
