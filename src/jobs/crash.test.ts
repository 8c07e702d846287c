import { eq } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { openTestDatabase, TEST_ENCRYPTION_KEYS, type TestDatabase, testConfig } from '../../test/harness.ts';
import { crashCatalog } from '../../test/job-worker-process.ts';
import { startScript } from '../../test/server-process.ts';
import { jobs } from '../db/schema/index.ts';
import { createKeyRing, parseKeys } from '../lib/crypto.ts';
import { createDeps } from '../runtime.ts';
import { defineJob } from './definition.ts';
import { enqueue } from './queue.ts';
import { JobWorker } from './worker.ts';

/**
 * A worker process killed with SIGKILL in the middle of a job: nothing records the run, the job's row stays
 * `running` under the dead worker's lease, and once that lease expires another worker runs it, once.
 */
describe('a worker killed mid-job', () => {
  let testDb: TestDatabase | undefined;
  afterAll(() => testDb?.close());

  it('runs again after its lease, once, and succeeds', async () => {
    testDb = await openTestDatabase({ privateDatabase: true });
    const id = await enqueue(testDb.database.db, crashCatalog, 'test.crash', { label: 'crash me' });
    await testDb.handOver();

    const worker = startScript('test/job-worker-process.ts', {
      ...testDb.env,
      ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS,
      LOG_LEVEL: 'warn',
      JOBS_LEASE_MS: '1000',
      JOBS_POLL_INTERVAL_MS: '50',
    });
    const started = await worker.line<{ started: string; attempt: number; worker: string }>('"started"');
    expect(started).toMatchObject({ started: id, attempt: 1 });
    expect(await worker.kill()).toBe('SIGKILL');
    expect(
      worker
        .stdout()
        .split('\n')
        .filter((l) => l.includes('"started"')),
    ).toHaveLength(1);

    const database = await testDb.open();
    const rowOf = async () =>
      (
        await database.db
          .select()
          .from(jobs)
          .where(eq(jobs.id, id ?? ''))
      )?.[0];
    expect(await rowOf()).toMatchObject({ status: 'running', attempts: 1, lockedBy: started.worker });

    const runs: Array<{ jobId: string; attempt: number }> = [];
    const config = testConfig(testDb.dataDir, testDb.env);
    const deps = createDeps(
      config,
      { database, keyRing: createKeyRing(parseKeys(TEST_ENCRYPTION_KEYS)) },
      pino({ level: 'silent' }) as unknown as FastifyBaseLogger,
    );
    const rescuer = new JobWorker({
      deps,
      catalog: {
        'test.crash': defineJob({
          payload: crashCatalog['test.crash'].payload,
          run: async (_deps, _payload, ctx) => {
            runs.push({ jobId: ctx.jobId, attempt: ctx.attempt });
          },
        }),
      },
      concurrency: 1,
      pollIntervalMs: 20,
      leaseMs: 30_000,
    });
    const deadline = Date.now() + 30_000;
    while ((await rescuer.runOnce()) === 0) {
      if (Date.now() > deadline) throw new Error('the job was not claimed again');
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(runs).toEqual([{ jobId: id, attempt: 2 }]);
    expect(await rowOf()).toMatchObject({
      status: 'succeeded',
      attempts: 2,
      lockedBy: null,
      lastError: `Lease expired: worker ${started.worker} stopped renewing it (attempt 1)`,
    });
    expect(await rescuer.runOnce()).toBe(0);
    expect(runs).toHaveLength(1);
  }, 120_000);
});
