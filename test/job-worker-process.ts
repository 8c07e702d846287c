import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { z } from 'zod';
import { loadConfig } from '../src/config.ts';
import { defineJob } from '../src/jobs/definition.ts';
import { JobWorker } from '../src/jobs/worker.ts';
import { taskJobs } from '../src/modules/scheduled-tasks/jobs.ts';
import { createDeps, openRuntime } from '../src/runtime.ts';

/**
 * A job worker as its own process, for the crash tests. By default (src/jobs/crash.test.ts) it runs
 * `test.crash` jobs, each of which announces itself on stdout (`{"started": id, "attempt": n, "worker": id}`)
 * and then never finishes, so the test can kill the process mid-job. With `WORKER_CATALOG=tasks` it runs the
 * scheduled tasks' real jobs (src/modules/scheduled-tasks/crash.test.ts). Settings come from the environment,
 * as for the server.
 */
export const crashCatalog = {
  'test.crash': defineJob({
    payload: z.object({ label: z.string() }),
    run: async (_deps, _payload, ctx) => {
      process.stdout.write(`${JSON.stringify({ started: ctx.jobId, attempt: ctx.attempt, worker: workerId })}\n`);
      await new Promise(() => {});
    },
  }),
};

let workerId = '';

if (process.argv[1]?.endsWith('job-worker-process.ts')) {
  const config = loadConfig();
  const runtime = await openRuntime(config);
  const log = pino({ level: config.logLevel }, pino.destination(2)) as FastifyBaseLogger;
  const worker = new JobWorker({
    deps: createDeps(config, runtime, log),
    catalog: process.env.WORKER_CATALOG === 'tasks' ? taskJobs : crashCatalog,
    concurrency: 1,
    pollIntervalMs: config.jobs.pollIntervalMs,
    leaseMs: config.jobs.leaseMs,
  });
  workerId = worker.id;
  worker.start();
  process.stdout.write(`${JSON.stringify({ ready: worker.id })}\n`);
}
