import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** `queued` waits for `run_at`; `running` is leased to `locked_by` until `locked_until`; the other two are final. */
export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'dead'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/**
 * The background job queue (src/jobs). Workers claim due rows with `FOR UPDATE SKIP LOCKED` and hold them by
 * a lease they renew while the job runs; a row whose lease ran out (its worker died) is claimed again.
 * `attempts` counts claims. `dedupe_key` is unique among queued and running rows: one pending job per key.
 */
export const jobs = pgTable(
  'jobs',
  {
    id: text('id').primaryKey(),
    type: text('type').notNull(),
    payload: jsonb('payload').$type<unknown>().notNull(),
    /** Set for work done on behalf of an account: its jobs go with it. */
    accountId: text('account_id').references(() => accounts.id, { onDelete: 'cascade' }),
    status: text('status').$type<JobStatus>().notNull().default('queued'),
    runAt: ts('run_at').notNull().defaultNow(),
    attempts: integer('attempts').notNull().default(0),
    maxAttempts: integer('max_attempts').notNull(),
    lockedBy: text('locked_by'),
    lockedUntil: ts('locked_until'),
    /** The last failure, redacted and capped. */
    lastError: text('last_error'),
    dedupeKey: text('dedupe_key'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    finishedAt: ts('finished_at'),
  },
  (t) => [
    // The two halves of the claim: due queued rows, and running rows whose lease expired.
    index('jobs_due_idx').on(t.runAt).where(sql`status = 'queued'`),
    index('jobs_lease_idx').on(t.lockedUntil).where(sql`status = 'running'`),
    uniqueIndex('jobs_dedupe_key_idx').on(t.dedupeKey).where(sql`status IN ('queued', 'running')`),
    // A `once` job's look for any row of its key, finished ones included (insertJob).
    index('jobs_dedupe_key_any_idx').on(t.dedupeKey).where(sql`dedupe_key IS NOT NULL`),
    // Clean-up of old finished rows, and listing by status.
    index('jobs_status_finished_idx').on(t.status, t.finishedAt),
    index('jobs_account_idx').on(t.accountId),
    check('jobs_status_check', sql`${t.status} IN ('queued', 'running', 'succeeded', 'dead')`),
  ],
);

export type JobRow = typeof jobs.$inferSelect;
