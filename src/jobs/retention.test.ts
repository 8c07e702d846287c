import { asc } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { openTestDatabase, type TestDatabase } from '../../test/harness.ts';
import { type JobStatus, jobs } from '../db/schema/index.ts';
import { deleteOldJobs } from './queue.ts';

/**
 * The `jobs.cleanup` sweep (deleteOldJobs): finished jobs go once past their retention, succeeded ones after
 * `retentionDays` and dead ones after `deadRetentionDays`, in batches of 5,000 (each batch's rows found by key:
 * src/db/lookup.ts); pending jobs and recent ones stay. A database of its own: the sweep spans every account.
 */
describe('finished jobs past their retention', () => {
  let testDb: TestDatabase | undefined;
  afterAll(() => testDb?.close());

  it('are deleted, more than a batch of them, and nothing else', async () => {
    testDb = await openTestDatabase({ privateDatabase: true });
    const { db } = testDb.database;
    const now = new Date('2026-11-29T12:00:00Z');
    const daysAgo = (days: number) => new Date(now.getTime() - days * 86_400_000);
    const row = (id: string, status: JobStatus, finishedAt: Date | null) => ({
      id,
      type: 'test.retention',
      payload: {},
      status,
      maxAttempts: 1,
      finishedAt,
    });
    const old = Array.from({ length: 5002 }, (_, i) =>
      row(`job_old_${String(i).padStart(4, '0')}`, 'succeeded', daysAgo(8)),
    );
    for (let i = 0; i < old.length; i += 1000) await db.insert(jobs).values(old.slice(i, i + 1000));
    await db
      .insert(jobs)
      .values([
        row('job_recent_ok', 'succeeded', daysAgo(6)),
        row('job_old_dead', 'dead', daysAgo(31)),
        row('job_recent_dead', 'dead', daysAgo(8)),
        row('job_queued', 'queued', null),
        row('job_running', 'running', null),
      ]);

    expect(await deleteOldJobs(db, { retentionDays: 7, deadRetentionDays: 30, now })).toEqual({
      succeeded: 5002,
      dead: 1,
    });
    const left = await db.select({ id: jobs.id }).from(jobs).orderBy(asc(jobs.id));
    expect(left.map((r) => r.id)).toEqual(['job_queued', 'job_recent_dead', 'job_recent_ok', 'job_running']);
  }, 60_000);
});
