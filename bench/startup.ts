import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../test/server-process.ts';
import { type Benchmark, median, rssMb, sleep, startChild, stopChild } from './lib.ts';

const RESTARTS = 5;
const IDLE_MS = 3000;

/**
 * Budgets of ARCHITECTURE.md on the embedded default: start to ready under 2 s on an existing data directory,
 * idle RSS under 250 MB. "Start" is the spawn of package.json's start command (`node <its flags>
 * bin/start.js`, without npm's own start-up; the first start builds the bundle and the restarts reuse it, as any
 * restart with no source changed does); "ready" is the ready log line, written once it listens. The first start (which
 * creates the data directory) is shown but not judged. Baseline: a bare fastify app started the same way.
 */
export const startupBenchmark: Benchmark = {
  name: 'startup',
  summary: `start to ready on an existing PGlite data directory (median of ${RESTARTS}) and idle RSS`,
  async run() {
    const dataDir = mkdtempSync(join(tmpdir(), 'sb-bench-startup-'));
    const env = { DATA_DIR: dataDir, LOG_LEVEL: 'info' };
    try {
      const first = await startServer(env);
      await first.stop();
      const times: number[] = [];
      const inMain: number[] = [];
      const rss: number[] = [];
      for (let i = 0; i < RESTARTS; i++) {
        const server = await startServer(env);
        times.push(server.startToReadyMs);
        // main() logs its own share: database, migrations, app; the rest is node, bundling and module loading.
        inMain.push(Number(server.logs.find((l) => l.msg === 'Switchboard ready')?.startupMs));
        await sleep(IDLE_MS);
        rss.push(server.rssMb());
        await server.stop();
      }
      const idleRss = median(rss);

      const bareTimes: number[] = [];
      let bareRss = 0;
      for (let i = 0; i < RESTARTS; i++) {
        const t0 = performance.now();
        const bare = await startChild('bench/bare-hello.js');
        bareTimes.push(performance.now() - t0);
        if (i === RESTARTS - 1) {
          await sleep(IDLE_MS);
          bareRss = rssMb(bare.child.pid);
        }
        await stopChild(bare.child);
      }
      const startMs = median(times);
      return {
        title: 'Start-up and memory, embedded database (PGlite)',
        baseline: 'bare fastify',
        figures: [
          { name: 'first start (creates the data directory)', unit: 'ms', value: first.startToReadyMs },
          {
            name: 'start to ready, existing data directory',
            unit: 'ms',
            value: startMs,
            baseline: median(bareTimes),
            budget: { text: '< 2000 ms', ok: startMs < 2000 },
          },
          {
            name: `idle RSS (${IDLE_MS / 1000} s after ready, median)`,
            unit: 'MB',
            value: idleRss,
            baseline: bareRss,
            budget: { text: '< 250 MB', ok: idleRss < 250 },
          },
        ],
        notes: [
          `start to ready, each restart: ${times.join(', ')} ms; of which in main() (open and migrate the`,
          `database, build the app, listen): ${inMain.join(', ')} ms, the rest being node, bundling and module loading;`,
          `idle RSS, each restart: ${rss.join(', ')} MB`,
        ],
      };
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
};
