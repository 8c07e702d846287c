import { and, desc, eq, inArray, lt, notInArray, or, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';
import { byKey } from '../db/lookup.ts';
import { rowsOf } from '../db/rows.ts';
import { type JobRow, type JobStatus, jobs } from '../db/schema/index.ts';

/** All SQL of the job queue. Times come from the database clock, so instances with skewed clocks agree. */

const msFromNow = (ms: number) => sql`now() + ${Math.max(0, Math.round(ms))} * interval '1 millisecond'`;

export interface NewJob {
  id: string;
  type: string;
  payload: unknown;
  accountId: string | null;
  /** Default: now. */
  runAt: Date | undefined;
  maxAttempts: number;
  dedupeKey: string | null;
  /** With a key: skip also when a finished row holds it (a recurring slot runs once, ever). */
  once: boolean;
}

/**
 * Inserts a job unless its dedupe key is taken: by a queued or running job (the partial unique index, which
 * also settles two racing inserts), or with `once` by any row still kept. Answers whether it was inserted.
 */
export async function insertJob(db: Executor, job: NewJob): Promise<boolean> {
  const key = job.dedupeKey;
  if (!job.once || key === null) return insertRow(db, job, sql``);
  // Inserts of one key take turns, so the check sees the other's row whatever became of it. In one statement
  // it reads a snapshot from before the other committed, and the partial index no longer holds that row once
  // it ran: two instances scheduling the same slot could both insert it, and the slot would run twice.
  return db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`job-once/${key}`}, 0))`);
    return insertRow(tx, job, sql`WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE dedupe_key = ${key})`);
  });
}

async function insertRow(db: Executor, job: NewJob, onlyIfUnseen: SQL): Promise<boolean> {
  const runAt = job.runAt ? sql`${job.runAt.toISOString()}::timestamptz` : sql`now()`;
  const result = await db.execute(sql`
    INSERT INTO jobs (id, type, payload, account_id, run_at, max_attempts, dedupe_key)
    SELECT ${job.id}, ${job.type}, ${JSON.stringify(job.payload)}::jsonb, ${job.accountId}, ${runAt},
      ${job.maxAttempts}, ${job.dedupeKey}
    ${onlyIfUnseen}
    ON CONFLICT (dedupe_key) WHERE status IN ('queued', 'running') DO NOTHING
    RETURNING id`);
  return rowsOf(result).length === 1;
}

/**
 * Claims up to `limit` jobs of these types for `workerId`: due queued ones, and running ones whose lease
 * expired (their worker stopped renewing it: it crashed or hung). One statement: rows locked by a concurrent
 * claim are skipped, so however many workers poll, each job goes to one of them. Each claim counts an attempt.
 */
export async function claimJobs(
  db: Executor,
  opts: {
    types: readonly string[];
    workerId: string;
    leaseMs: number;
    limit: number;
    /** Jobs this worker is running: never taken back from itself, even if a stall let their lease lapse. */
    running?: readonly string[];
  },
): Promise<JobRow[]> {
  if (opts.types.length === 0 || opts.limit <= 0) return [];
  const due = db
    .select({ id: jobs.id })
    .from(jobs)
    .where(
      and(
        inArray(jobs.type, [...opts.types]),
        opts.running?.length ? notInArray(jobs.id, [...opts.running]) : undefined,
        or(
          and(eq(jobs.status, 'queued'), sql`${jobs.runAt} <= now()`),
          and(eq(jobs.status, 'running'), sql`${jobs.lockedUntil} < now()`),
        ),
      ),
    )
    .orderBy(jobs.runAt, jobs.id)
    .limit(opts.limit)
    .for('update', { skipLocked: true })
    .as('due');
  return db
    .update(jobs)
    .set({
      status: 'running',
      attempts: sql`${jobs.attempts} + 1`,
      lockedBy: opts.workerId,
      lockedUntil: msFromNow(opts.leaseMs),
      // Says why a running job started over; the old values are read here, before the update.
      lastError: sql`CASE WHEN ${jobs.status} = 'running'
        THEN 'Lease expired: worker ' || ${jobs.lockedBy} || ' stopped renewing it (attempt ' || ${jobs.attempts} || ')'
        ELSE ${jobs.lastError} END`,
      updatedAt: sql`now()`,
    })
    .from(due)
    .where(eq(jobs.id, due.id))
    .returning();
}

/** Identifies one claim of a job: a later claim (after a lost lease) has another attempt number. */
export interface Claim {
  id: string;
  workerId: string;
  attempt: number;
}

const heldBy = (claim: Claim): SQL | undefined =>
  and(
    eq(jobs.id, claim.id),
    eq(jobs.status, 'running'),
    eq(jobs.lockedBy, claim.workerId),
    eq(jobs.attempts, claim.attempt),
  );

/** Renews the lease; false when the claim was lost (the lease expired and another worker took the job). */
export async function extendLease(db: Executor, claim: Claim, leaseMs: number): Promise<boolean> {
  const rows = await db
    .update(jobs)
    .set({ lockedUntil: msFromNow(leaseMs), updatedAt: sql`now()` })
    .where(heldBy(claim))
    .returning({ id: jobs.id });
  return rows.length === 1;
}

/** Marks a claimed job succeeded; false when the claim was lost meanwhile (nothing is written then). */
export async function markSucceeded(db: Executor, claim: Claim): Promise<boolean> {
  const rows = await db
    .update(jobs)
    .set({ status: 'succeeded', lockedBy: null, lockedUntil: null, updatedAt: sql`now()`, finishedAt: sql`now()` })
    .where(heldBy(claim))
    .returning({ id: jobs.id });
  return rows.length === 1;
}

/** Records a failure: queued again after `retryInMs`, or `dead` when it is undefined. */
export async function markFailed(
  db: Executor,
  claim: Claim,
  failure: { error: string; retryInMs: number | undefined },
): Promise<boolean> {
  const retry = failure.retryInMs !== undefined;
  const rows = await db
    .update(jobs)
    .set({
      status: retry ? 'queued' : 'dead',
      runAt: retry ? msFromNow(failure.retryInMs ?? 0) : sql`${jobs.runAt}`,
      lockedBy: null,
      lockedUntil: null,
      lastError: failure.error,
      updatedAt: sql`now()`,
      finishedAt: retry ? null : sql`now()`,
    })
    .where(heldBy(claim))
    .returning({ id: jobs.id });
  return rows.length === 1;
}

/** Deletes up to `limit` rows of a final status that finished before `before`; answers how many. */
export async function deleteFinished(
  db: Executor,
  opts: { status: Extract<JobStatus, 'succeeded' | 'dead'>; before: Date; limit: number },
): Promise<number> {
  const old = db
    .select({ id: jobs.id })
    .from(jobs)
    .where(and(eq(jobs.status, opts.status), lt(jobs.finishedAt, opts.before)))
    .limit(opts.limit);
  const rows = await db.delete(jobs).where(byKey(jobs.id, old)).returning({ id: jobs.id });
  return rows.length;
}

export async function findJob(db: Executor, id: string): Promise<JobRow | undefined> {
  const [row] = await db.select().from(jobs).where(eq(jobs.id, id));
  return row;
}

/** Rows by status, every status present (0 when none). */
export async function countByStatus(db: Executor): Promise<Record<JobStatus, number>> {
  const rows = await db
    .select({ status: jobs.status, count: sql<number>`count(*)::int` })
    .from(jobs)
    .groupBy(jobs.status);
  const counts: Record<JobStatus, number> = { queued: 0, running: 0, succeeded: 0, dead: 0 };
  for (const r of rows) counts[r.status] = Number(r.count);
  return counts;
}

/** Newest first. */
export async function listJobs(
  db: Executor,
  filter: { statuses?: readonly JobStatus[] | undefined; types?: readonly string[] | undefined; limit: number },
): Promise<JobRow[]> {
  return db
    .select()
    .from(jobs)
    .where(
      and(
        filter.statuses?.length ? inArray(jobs.status, [...filter.statuses]) : undefined,
        filter.types?.length ? inArray(jobs.type, [...filter.types]) : undefined,
      ),
    )
    .orderBy(desc(jobs.createdAt), desc(jobs.id))
    .limit(filter.limit);
}

/** Puts a dead job back in the queue, due now, with its attempts reset; undefined when it is not dead. */
export async function requeueDead(db: Executor, id: string): Promise<JobRow | undefined> {
  const [row] = await db
    .update(jobs)
    .set({ status: 'queued', attempts: 0, runAt: sql`now()`, updatedAt: sql`now()`, finishedAt: null })
    .where(and(eq(jobs.id, id), eq(jobs.status, 'dead')))
    .returning();
  return row;
}
