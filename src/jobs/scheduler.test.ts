import { eq, like } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHarness, type TestHarness } from '../../test/harness.ts';
import { testDatabaseTarget } from '../../test/test-database.ts';
import { buildApp } from '../app.ts';
import { JOB_CATALOG } from '../composition.ts';
import { openDatabase } from '../db/client.ts';
import { jobs } from '../db/schema/index.ts';
import { defineJob, type JobCatalog } from './definition.ts';
import { insertJob } from './repo.ts';
import { JobScheduler } from './scheduler.ts';
import { JobWorker } from './worker.ts';

const ran: string[] = [];
const catalog = {
  'test.every5': defineJob({
    payload: z.object({}),
    schedule: { cron: '*/5 * * * *' },
    run: async (_deps, _payload, ctx) => {
      ran.push(ctx.jobId);
    },
  }),
  'test.berlin': defineJob({
    payload: z.object({}),
    schedule: { cron: '30 9 * * *', timezone: 'Europe/Berlin' },
    run: async () => undefined,
  }),
  'test.plain': defineJob({ payload: z.object({}), run: async () => undefined }),
} satisfies JobCatalog;

const MINUTE = 60_000;

describe('recurring scheduler', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness({}, { privateDatabase: true });
  });
  afterAll(async () => {
    await h?.close();
  });

  const scheduler = () => new JobScheduler({ db: h.database.db, log: h.app.log }, catalog);
  const slotsOf = async (type: string) =>
    (await h.database.db.select().from(jobs).where(eq(jobs.type, type))).sort(
      (a, b) => a.runAt.getTime() - b.runAt.getTime(),
    );

  it('queues the next slot of each recurring job once, however many instances schedule it', async () => {
    const now = new Date('2031-05-04T10:02:31Z');
    const instances = [scheduler(), scheduler(), scheduler()];
    const inserted = (await Promise.all(instances.map((s) => s.tick(now)))).flat();
    expect(inserted.map((i) => [i.type, i.runAt.toISOString()]).sort()).toEqual([
      ['test.berlin', '2031-05-05T07:30:00.000Z'],
      ['test.every5', '2031-05-04T10:05:00.000Z'],
    ]);
    const rows = await slotsOf('test.every5');
    expect(rows.map((r) => [r.runAt.toISOString(), r.dedupeKey, r.status, r.payload])).toEqual([
      ['2031-05-04T10:05:00.000Z', 'test.every5@2031-05-04T10:05:00.000Z', 'queued', {}],
    ]);
    // 09:30 in Berlin is 07:30 UTC in summer time.
    expect((await slotsOf('test.berlin')).map((r) => r.runAt.toISOString())).toEqual(['2031-05-05T07:30:00.000Z']);
    expect(await slotsOf('test.plain')).toEqual([]);
    // The same instance does not insert again until the slot has passed; a fresh one finds it taken.
    expect(await instances[0]?.tick(new Date(now.getTime() + MINUTE))).toEqual([]);
    expect(await scheduler().tick(now)).toEqual([]);
    expect(await slotsOf('test.every5')).toHaveLength(1);
  });

  it('two instances scheduling and working over many slots: each slot runs once, even when scheduled late', async () => {
    await h.database.db.delete(jobs).where(like(jobs.type, 'test.%'));
    // Slots in the past are due at once, so the workers run them during the test.
    // Half a minute past a 5-minute mark: ticks over an hour meet twelve slots.
    const start = Math.floor((Date.now() - 24 * 60 * MINUTE) / (5 * MINUTE)) * 5 * MINUTE + 30_000;
    const a = scheduler();
    const b = scheduler();
    const workers = [0, 1].map(
      (i) =>
        new JobWorker({
          deps: h.app.deps,
          catalog,
          concurrency: 2,
          pollIntervalMs: 20,
          leaseMs: 30_000,
          id: `sched-${i}`,
        }),
    );
    for (const w of workers) w.start();
    try {
      for (let minute = 0; minute < 60; minute += 1) {
        const at = new Date(start + minute * MINUTE);
        await Promise.all([a.tick(at), b.tick(at)]);
      }
      // Twelve 5-minute slots in that hour; wait for all to run.
      const rows = await (async () => {
        const deadline = Date.now() + 20_000;
        for (;;) {
          const r = await slotsOf('test.every5');
          if (r.length === 12 && r.every((j) => j.status === 'succeeded')) return r;
          if (Date.now() > deadline) throw new Error(`slots: ${JSON.stringify(r.map((j) => j.status))}`);
          await new Promise((res) => setTimeout(res, 20));
        }
      })();
      expect(new Set(rows.map((r) => r.dedupeKey)).size).toBe(12);
      expect(rows.every((r) => r.runAt.getUTCMinutes() % 5 === 0 && r.runAt.getUTCSeconds() === 0)).toBe(true);
      // Each ran exactly once.
      expect(ran.filter((id) => rows.some((r) => r.id === id))).toHaveLength(12);
      expect(new Set(ran).size).toBe(ran.length);
      // A third instance that wakes up late, after the slots ran, schedules none of them again.
      const late = scheduler();
      for (let minute = 0; minute < 60; minute += 1) await late.tick(new Date(start + minute * MINUTE));
      expect(await slotsOf('test.every5')).toHaveLength(12);
    } finally {
      for (const w of workers) await w.stop(5000);
    }
  });

  it.skipIf(testDatabaseTarget().kind !== 'pg')(
    'a slot two instances queue at once is inserted once, even when the first ran it before the second looked',
    async () => {
      // Another instance: its own connections to PostgreSQL.
      const second = await openDatabase({ databaseUrl: h.config.databaseUrl, dataDir: h.config.dataDir, poolMax: 2 });
      try {
        const runAt = new Date('2031-06-01T00:00:00Z');
        const slot = (id: string) => ({
          id,
          type: 'test.every5',
          payload: {},
          accountId: null,
          runAt,
          maxAttempts: 3,
          dedupeKey: `test.every5@${runAt.toISOString()}`,
          once: true,
        });
        let racing: Promise<boolean> | undefined;
        await h.database.db.transaction(async (tx) => {
          expect(await insertJob(tx, slot('job_first'))).toBe(true);
          // Run to the end before the first instance commits: the row leaves the queued and running ones.
          await tx.update(jobs).set({ status: 'succeeded' }).where(eq(jobs.id, 'job_first'));
          racing = insertJob(second.db, slot('job_second'));
          await new Promise((resolve) => setTimeout(resolve, 200));
        });
        expect(await racing).toBe(false);
        expect((await slotsOf('test.every5')).filter((r) => r.runAt.getTime() === runAt.getTime())).toHaveLength(1);
      } finally {
        await second.close();
      }
    },
  );

  it('an app with jobs on queues the service recurring jobs at start, without waiting for it', async () => {
    const app = await buildApp({
      config: { ...h.config, jobs: { ...h.config.jobs, enabled: true, pollIntervalMs: 50 } },
      database: h.database,
      keyRing: h.keyRing,
    });
    try {
      await app.ready();
      expect(app.jobs).toBeDefined();
      // The recurring ones; jobs enqueued by the features (knowledge.compile ...) have no schedule.
      const types = Object.entries(JOB_CATALOG)
        .filter(([, def]) => 'schedule' in def && def.schedule)
        .map(([type]) => type);
      const deadline = Date.now() + 20_000;
      let scheduled: Array<{ type: string; runAt: Date; dedupeKey: string | null }> = [];
      while (new Set(scheduled.map((r) => r.type)).size < types.length && Date.now() < deadline) {
        scheduled = (await h.database.db.select().from(jobs)).filter((r) => types.includes(r.type));
        await new Promise((r) => setTimeout(r, 20));
      }
      expect([...new Set(scheduled.map((r) => r.type))].sort()).toEqual(types.sort());
      for (const r of scheduled) {
        expect(r.dedupeKey).toBe(`${r.type}@${r.runAt.toISOString()}`);
        expect(r.runAt.getTime()).toBeGreaterThan(Date.now() - 2 * MINUTE);
      }
    } finally {
      await app.close();
    }
  });

  it('a catalog with a bad schedule stops the app from being built', async () => {
    await expect(
      buildApp({
        config: h.config,
        database: h.database,
        keyRing: h.keyRing,
        jobCatalog: { 'test.bad': { ...catalog['test.plain'], schedule: { cron: '0 0 * * * *' } } },
      }),
    ).rejects.toThrow('Job test.bad: cron "0 0 * * * *" must have 5 fields');
  });
});
