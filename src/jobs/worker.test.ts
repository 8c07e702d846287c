import { Writable } from 'node:stream';
import { eq, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHarness, createUser, type TestHarness } from '../../test/harness.ts';
import type { Deps } from '../context.ts';
import { type Database, openDatabase } from '../db/client.ts';
import { type JobRow, jobs } from '../db/schema/index.ts';
import { defineJob, type JobCatalog } from './definition.ts';
import { enqueue, JobPayloadError } from './queue.ts';
import { claimJobs } from './repo.ts';
import { JobWorker } from './worker.ts';

/** Side effects of the test jobs, by job id: how often each ran, and with what. */
const runs = new Map<string, number[]>();
/** Jobs of type test.hold wait here until the test lets them go. */
const gates = new Map<string, () => void>();
const aborted: string[] = [];

const catalog = {
  'test.record': defineJob({
    payload: z.object({ n: z.number().int() }),
    run: async (_deps, payload, ctx) => {
      runs.set(ctx.jobId, [...(runs.get(ctx.jobId) ?? []), payload.n]);
    },
  }),
  'test.fail': defineJob({
    payload: z.object({}),
    retry: { maxAttempts: 3, baseDelayMs: 1000, maxDelayMs: 60_000 },
    run: async (_deps, _payload, ctx) => {
      runs.set(ctx.jobId, [...(runs.get(ctx.jobId) ?? []), ctx.attempt]);
      throw new Error(`the upstream refused token pat_${'x'.repeat(40)} on attempt ${ctx.attempt}`);
    },
  }),
  'test.hold': defineJob({
    payload: z.object({}),
    run: async (_deps, _payload, ctx) => {
      runs.set(ctx.jobId, [...(runs.get(ctx.jobId) ?? []), ctx.attempt]);
      await new Promise<void>((resolve, reject) => {
        gates.set(`${ctx.jobId}#${ctx.attempt}`, resolve);
        ctx.signal.addEventListener('abort', () => {
          aborted.push(`${ctx.jobId}#${ctx.attempt}`);
          reject(ctx.signal.reason);
        });
      });
    },
  }),
} satisfies JobCatalog;

async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('job queue and worker', () => {
  let h: TestHarness;
  const workers: JobWorker[] = [];
  const extraDatabases: Database[] = [];

  beforeAll(async () => {
    h = await createHarness({}, { privateDatabase: true, jobCatalog: catalog });
  });
  // What one test leaves queued must not be claimed in the next one's counts.
  beforeEach(async () => {
    const w = worker({ id: 'drain' });
    while ((await w.runOnce()) > 0) {}
  });
  afterAll(async () => {
    for (const w of workers) await w.stop(5000);
    for (const d of extraDatabases) await d.close();
    await h?.close();
  });

  const db = () => h.database.db;
  const rowOf = async (id: string | undefined): Promise<JobRow> => {
    const [row] = await db()
      .select()
      .from(jobs)
      .where(eq(jobs.id, id ?? ''));
    if (!row) throw new Error(`no job ${id}`);
    return row;
  };
  const worker = (opts: { leaseMs?: number; concurrency?: number; deps?: Deps; id?: string } = {}) => {
    const w = new JobWorker({
      deps: opts.deps ?? h.app.deps,
      catalog,
      concurrency: opts.concurrency ?? 4,
      pollIntervalMs: 20,
      leaseMs: opts.leaseMs ?? 30_000,
      ...(opts.id ? { id: opts.id } : {}),
    });
    workers.push(w);
    return w;
  };
  /** A job due now: run_at moved to the database's present (retries wait otherwise). */
  const makeDue = (id: string) => db().update(jobs).set({ runAt: sql`now()` }).where(eq(jobs.id, id));

  it('enqueue -> run -> succeeded, with its stored row', async () => {
    const id = await enqueue(db(), catalog, 'test.record', { n: 7 });
    expect(id).toMatch(/^job_[A-Za-z0-9_-]{22}$/);
    const queued = await rowOf(id);
    expect(queued).toMatchObject({
      type: 'test.record',
      payload: { n: 7 },
      status: 'queued',
      attempts: 0,
      maxAttempts: 5,
      lockedBy: null,
      lockedUntil: null,
      lastError: null,
      dedupeKey: null,
      accountId: null,
      finishedAt: null,
    });
    const w = worker({ id: 'worker-one' });
    expect(await w.runOnce()).toBe(1);
    expect(runs.get(id ?? '')).toEqual([7]);
    const done = await rowOf(id);
    expect(done).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      lockedBy: null,
      lockedUntil: null,
      lastError: null,
    });
    expect(done.finishedAt).toBeInstanceOf(Date);
    expect(done.finishedAt?.getTime()).toBe(done.updatedAt.getTime());
    expect(await w.runOnce()).toBe(0);
  });

  it('enqueues inside a transaction: rolled back with it, committed with it', async () => {
    const u = await createUser(h.app);
    let inside: string | undefined;
    await expect(
      db().transaction(async (tx) => {
        inside = await enqueue(tx, catalog, 'test.record', { n: 1 }, { accountId: u.account.id });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(
      await db()
        .select()
        .from(jobs)
        .where(eq(jobs.id, inside ?? '')),
    ).toEqual([]);
    const committed = await db().transaction((tx) =>
      enqueue(tx, catalog, 'test.record', { n: 2 }, { accountId: u.account.id }),
    );
    expect((await rowOf(committed)).accountId).toBe(u.account.id);
  });

  it('validates payloads against the catalog and refuses tokens in them', async () => {
    const count = async () => (await db().select().from(jobs)).length;
    const before = await count();
    await expect(enqueue(db(), catalog, 'test.record', { n: 'seven' } as unknown as { n: number })).rejects.toThrow(
      new JobPayloadError('Job test.record: invalid payload: n: Invalid input: expected number, received string'),
    );
    await expect(enqueue(db(), catalog, 'test.nope' as 'test.record', { n: 1 })).rejects.toThrow(
      'Unknown job type test.nope',
    );
    const sneaky = defineJob({ payload: z.object({ note: z.string() }), run: async () => undefined });
    await expect(
      enqueue(db(), { 'test.sneaky': sneaky }, 'test.sneaky', { note: `Bearer ${'a'.repeat(30)}` }),
    ).rejects.toThrow('Job test.sneaky: payloads must not carry tokens; pass an id and read the secret when running');
    expect(await count()).toBe(before);

    // A row whose payload no longer fits (written by an older version) is dead at once, without running.
    const id = await enqueue(db(), catalog, 'test.record', { n: 1 });
    await db()
      .update(jobs)
      .set({ payload: { n: 'one' } })
      .where(eq(jobs.id, id ?? ''));
    await worker().runOnce();
    const dead = await rowOf(id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 1 });
    expect(dead.lastError).toMatch(/^Invalid payload: /);
    expect(runs.has(id ?? '')).toBe(false);
  });

  it('dedupe key: one pending job per key; with once, one job per key ever', async () => {
    const key = `dedupe-${Date.now()}`;
    const first = await enqueue(db(), catalog, 'test.record', { n: 1 }, { dedupeKey: key });
    expect(await enqueue(db(), catalog, 'test.record', { n: 2 }, { dedupeKey: key })).toBeUndefined();
    expect(await enqueue(db(), catalog, 'test.record', { n: 3 }, { dedupeKey: key, once: true })).toBeUndefined();
    expect((await db().select().from(jobs).where(eq(jobs.dedupeKey, key))).map((r) => r.id)).toEqual([first]);
    await worker().runOnce();
    expect((await rowOf(first)).status).toBe('succeeded');
    // Finished: `once` still sees the key; a plain dedupe key is free again.
    expect(await enqueue(db(), catalog, 'test.record', { n: 4 }, { dedupeKey: key, once: true })).toBeUndefined();
    const second = await enqueue(db(), catalog, 'test.record', { n: 5 }, { dedupeKey: key });
    expect(second).toMatch(/^job_/);
    // Racing enqueues of one key: exactly one row.
    const raced = `race-${Date.now()}`;
    const ids = await Promise.all(
      Array.from({ length: 8 }, (_, n) => enqueue(db(), catalog, 'test.record', { n }, { dedupeKey: raced })),
    );
    expect(ids.filter(Boolean)).toHaveLength(1);
    expect(await db().select().from(jobs).where(eq(jobs.dedupeKey, raced))).toHaveLength(1);
  });

  it('retries a failing job with growing backoff, then marks it dead with its error, redacted in row and log', async () => {
    const lines: string[] = [];
    const log = pino(
      { level: 'debug' },
      new Writable({
        write(chunk, _enc, cb) {
          lines.push(String(chunk));
          cb();
        },
      }),
    ) as unknown as FastifyBaseLogger;
    const w = worker({ deps: { ...h.app.deps, log } });
    const id = await enqueue(db(), catalog, 'test.fail', {});
    expect((await rowOf(id)).maxAttempts).toBe(3);

    const delays: number[] = [];
    for (const attempt of [1, 2]) {
      expect(await w.runOnce()).toBe(1);
      const row = await rowOf(id);
      expect(row).toMatchObject({ status: 'queued', attempts: attempt, lockedBy: null, finishedAt: null });
      expect(row.lastError).toBe(`Error: the upstream refused token [REDACTED] on attempt ${attempt}`);
      // run_at and updated_at come from one now(): their difference is exactly the backoff chosen.
      delays.push(row.runAt.getTime() - row.updatedAt.getTime());
      expect(await w.runOnce()).toBe(0); // not due yet
      await makeDue(id ?? '');
    }
    expect(delays[0]).toBeGreaterThanOrEqual(1000);
    expect(delays[0]).toBeLessThanOrEqual(1250);
    expect(delays[1]).toBeGreaterThanOrEqual(2000);
    expect(delays[1]).toBeLessThanOrEqual(2500);

    expect(await w.runOnce()).toBe(1);
    const dead = await rowOf(id);
    expect(dead).toMatchObject({
      status: 'dead',
      attempts: 3,
      lockedBy: null,
      lockedUntil: null,
      lastError: 'Error: the upstream refused token [REDACTED] on attempt 3',
    });
    expect(dead.finishedAt).toBeInstanceOf(Date);
    expect(runs.get(id ?? '')).toEqual([1, 2, 3]);
    expect(await w.runOnce()).toBe(0);

    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.jobId === id);
    expect(logged.map((l) => [l.msg, l.attempt])).toEqual([
      ['job failed; will retry', 1],
      ['job failed; will retry', 2],
      ['job dead: out of attempts', 3],
    ]);
    expect(lines.join('')).not.toContain('pat_xxx');
  });

  it('a job whose worker stopped renewing its lease is claimed again once the lease expires', async () => {
    const id = await enqueue(db(), catalog, 'test.record', { n: 42 });
    // A worker that claims and then dies: nothing renews its short lease.
    const [claimed] = await claimJobs(db(), {
      types: ['test.record'],
      workerId: 'dead-worker',
      leaseMs: 300,
      limit: 10,
    });
    expect(claimed).toMatchObject({ id, status: 'running', attempts: 1, lockedBy: 'dead-worker' });
    const w = worker({ id: 'rescuer' });
    expect(await w.runOnce()).toBe(0); // the lease still holds
    await waitFor('the lease to run out', async () => (await w.runOnce()) === 1);
    expect(runs.get(id ?? '')).toEqual([42]);
    expect(await rowOf(id)).toMatchObject({
      status: 'succeeded',
      attempts: 2,
      lockedBy: null,
      lastError: 'Lease expired: worker dead-worker stopped renewing it (attempt 1)',
    });
  });

  it('a running job keeps its lease by heartbeat; a worker that lost its lease records nothing', async () => {
    const id = await enqueue(db(), catalog, 'test.hold', {});
    // Renewed every 400 ms: a renewal may run up to 800 ms late (a loaded machine, PGlite's one connection)
    // before the lease lapses.
    const a = worker({ id: 'worker-a', leaseMs: 1200 });
    const b = worker({ id: 'worker-b', leaseMs: 1200 });
    a.start();
    await waitFor('worker a to run the job', async () => gates.get(`${id}#1`));
    // Two leases long, it stays with worker a: b finds nothing to claim.
    const until = Date.now() + 2400;
    while (Date.now() < until) {
      expect(await b.runOnce()).toBe(0);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await rowOf(id)).toMatchObject({ status: 'running', attempts: 1, lockedBy: 'worker-a' });

    // Its lease is taken away (as if a's renewals had stopped reaching the database): b claims it. A renewal of
    // a's that lands between the expiry and b's claim holds the lease again (a renews what it still holds; seen on
    // a loaded CI machine): then b finds nothing, and the lease is taken away again.
    const expire = () =>
      db()
        .update(jobs)
        .set({ lockedUntil: sql`now() - interval '1 second'` })
        .where(eq(jobs.id, id ?? ''));
    let bRun: Promise<number> | undefined;
    let bIdle = true;
    const release = await waitFor('worker b to run the job', async () => {
      const started = gates.get(`${id}#2`);
      if (started || !bIdle) return started;
      await expire();
      bIdle = false;
      bRun = b.runOnce();
      void bRun.then(
        (n) => {
          if (n === 0) bIdle = true;
        },
        () => {}, // its own await below reports it
      );
      return undefined;
    });
    // Worker a's next renewal finds the claim gone and aborts its run, which records nothing.
    await waitFor('worker a to give up', async () => aborted.includes(`${id}#1`));
    expect(await rowOf(id)).toMatchObject({ status: 'running', attempts: 2, lockedBy: 'worker-b' });
    release();
    expect(await bRun).toBe(1);
    expect(await rowOf(id)).toMatchObject({ status: 'succeeded', attempts: 2, lockedBy: null });
    expect(runs.get(id ?? '')).toEqual([1, 2]);
    await a.stop(1000);
  });

  it('a worker never takes back a job it is still running, even when a stall let the lease lapse', async () => {
    const id = await enqueue(db(), catalog, 'test.hold', {});
    const w = worker({ id: 'stalled', concurrency: 2 });
    const running = w.runOnce();
    const release = await waitFor('the job to start', async () => gates.get(`${id}#1`));
    await db()
      .update(jobs)
      .set({ lockedUntil: sql`now() - interval '1 second'` })
      .where(eq(jobs.id, id ?? ''));
    expect(await w.runOnce()).toBe(0);
    release();
    expect(await running).toBe(1);
    expect(await rowOf(id)).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(runs.get(id ?? '')).toEqual([1]);
  });

  it('graceful stop waits for a running job; past the deadline it aborts it and leaves it to the lease', async () => {
    const first = await enqueue(db(), catalog, 'test.hold', {});
    const w = worker({ id: 'stopping' });
    w.start();
    const release = await waitFor('the job to start', async () => gates.get(`${first}#1`));
    const stopped = w.stop(20_000);
    await new Promise((r) => setTimeout(r, 100));
    expect((await rowOf(first)).status).toBe('running');
    release();
    await stopped;
    expect((await rowOf(first)).status).toBe('succeeded');

    const second = await enqueue(db(), catalog, 'test.hold', {});
    const late = worker({ id: 'late' });
    late.start();
    await waitFor('the job to start', async () => gates.get(`${second}#1`));
    await late.stop(50);
    expect(aborted).toContain(`${second}#1`);
    expect(await rowOf(second)).toMatchObject({ status: 'running', attempts: 1, lockedBy: 'late' });
    await db()
      .update(jobs)
      .set({ lockedUntil: sql`now() - interval '1 second'` })
      .where(eq(jobs.id, second ?? ''));
    const rescue = worker().runOnce();
    const release2 = await waitFor('the job to run again', async () => gates.get(`${second}#2`));
    release2();
    expect(await rescue).toBe(1);
    expect(await rowOf(second)).toMatchObject({ status: 'succeeded', attempts: 2 });
  });

  it('several workers, each with its own connections, and two app instances: every job runs exactly once', async () => {
    const count = 240;
    const ids = new Set<string>();
    for (let n = 0; n < count; n++) {
      const id = await enqueue(db(), catalog, 'test.record', { n });
      if (id) ids.add(id);
    }
    // On PostgreSQL each worker gets its own pool, as separate instances would; PGlite has one connection.
    const pool: Deps[] = [];
    for (let i = 0; i < 4; i++) {
      if (h.database.driver === 'pg') {
        const database = await openDatabase({
          databaseUrl: h.config.databaseUrl,
          dataDir: h.config.dataDir,
          poolMax: 4,
        });
        extraDatabases.push(database);
        pool.push({ ...h.app.deps, database });
      } else {
        pool.push(h.app.deps);
      }
    }
    const ws = pool.map((deps, i) => worker({ deps, id: `many-${i}`, concurrency: 3 }));
    // Two app instances with the jobs system on, sharing the same database and catalog.
    const env = { JOBS_ENABLED: 'true', JOBS_POLL_INTERVAL_MS: '20', JOBS_CONCURRENCY: '3' };
    const apps = [await h.extraApp(env), await h.extraApp(env)];
    for (const app of apps) expect(app.jobs).toBeDefined();
    for (const w of ws) w.start();
    await waitFor(
      'every job to succeed',
      async () => {
        const rows = await db().select().from(jobs).where(eq(jobs.type, 'test.record'));
        const mine = rows.filter((r) => ids.has(r.id));
        return mine.length === count && mine.every((r) => r.status === 'succeeded') ? mine : undefined;
      },
      60_000,
    );
    for (const w of ws) await w.stop(5000);
    const ranTimes = [...ids].map((id) => runs.get(id)?.length ?? 0);
    expect(ranTimes.filter((t) => t !== 1)).toEqual([]);
    const rows = await db().select().from(jobs).where(eq(jobs.type, 'test.record'));
    expect(rows.filter((r) => ids.has(r.id) && r.attempts !== 1)).toEqual([]);
  }, 90_000);
});
