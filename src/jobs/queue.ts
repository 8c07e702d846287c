import type { z } from 'zod';
import type { Executor } from '../db/client.ts';
import type { JobRow, JobStatus } from '../db/schema/index.ts';
import { ConflictError, isUniqueViolation, NotFoundError } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import { redactSecrets } from '../lib/redact.ts';
import { type JobCatalog, retryPolicy } from './definition.ts';
import * as repo from './repo.ts';

/** A job the code asked for does not fit its catalog entry: a bug of the caller, never of the user. */
export class JobPayloadError extends Error {}

export interface EnqueueOptions {
  /** When it may run first (default now). */
  runAt?: Date;
  /** While a job with this key is queued or running, enqueueing another with it does nothing. */
  dedupeKey?: string;
  /** With `dedupeKey`: also do nothing when a finished job with the key is still kept (a slot runs once). */
  once?: boolean;
  /** The account the work is for: the job is deleted with it. */
  accountId?: string;
  /** Overrides the type's retry policy. */
  maxAttempts?: number;
}

/**
 * Adds a job of `catalog[type]`. Pass a transaction as `db` to enqueue atomically with the caller's writes.
 * The payload is checked against the type's schema and refused if it looks like it carries a token. Answers
 * the new job's id, or undefined when the dedupe key was taken.
 */
export async function enqueue<C extends JobCatalog, T extends keyof C & string>(
  db: Executor,
  catalog: C,
  type: T,
  payload: z.input<C[T]['payload']>,
  opts: EnqueueOptions = {},
): Promise<string | undefined> {
  const def = catalog[type];
  if (!def) throw new JobPayloadError(`Unknown job type ${type}`);
  const parsed = def.payload.safeParse(payload);
  if (!parsed.success) {
    throw new JobPayloadError(
      `Job ${type}: invalid payload: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  }
  const json = JSON.stringify(parsed.data ?? null);
  if (redactSecrets(json) !== json) {
    throw new JobPayloadError(
      `Job ${type}: payloads must not carry tokens; pass an id and read the secret when running`,
    );
  }
  const id = newId('job');
  const inserted = await repo.insertJob(db, {
    id,
    type,
    payload: JSON.parse(json),
    accountId: opts.accountId ?? null,
    runAt: opts.runAt,
    maxAttempts: opts.maxAttempts ?? retryPolicy(def).maxAttempts,
    dedupeKey: opts.dedupeKey ?? null,
    once: opts.once ?? false,
  });
  return inserted ? id : undefined;
}

/** `enqueue` bound to one area's catalog: what an area's services call to queue its own jobs. */
export function enqueuerFor<C extends JobCatalog>(catalog: C) {
  return <T extends keyof C & string>(
    db: Executor,
    type: T,
    payload: z.input<C[T]['payload']>,
    opts?: EnqueueOptions,
  ): Promise<string | undefined> => enqueue(db, catalog, type, payload, opts);
}

const MAX_ERROR_CHARS = 2000;

/** A failure as stored and logged: name and message, secrets redacted, capped. Never the stack (it may hold data). */
export function errorText(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  const redacted = redactSecrets(text);
  return redacted.length > MAX_ERROR_CHARS ? `${redacted.slice(0, MAX_ERROR_CHARS - 1)}…` : redacted;
}

export interface JobView {
  id: string;
  type: string;
  status: JobStatus;
  attempts: number;
  maxAttempts: number;
  runAt: string;
  lastError: string | null;
  accountId: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

function toView(row: JobRow): JobView {
  return {
    id: row.id,
    type: row.type,
    status: row.status,
    attempts: row.attempts,
    maxAttempts: row.maxAttempts,
    runAt: row.runAt.toISOString(),
    lastError: row.lastError === null ? null : redactSecrets(row.lastError),
    accountId: row.accountId,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    finishedAt: row.finishedAt?.toISOString() ?? null,
  };
}

/** Jobs of every account, newest first: an operator's view (the CLI); payloads are not shown. */
export async function listJobs(
  db: Executor,
  filter: { statuses?: readonly JobStatus[]; types?: readonly string[]; limit: number },
): Promise<JobView[]> {
  return (await repo.listJobs(db, filter)).map(toView);
}

/** How many jobs are in each status (for /metrics: a growing `queued` or any `dead` needs an operator). */
export function countJobs(db: Executor): Promise<Record<JobStatus, number>> {
  return repo.countByStatus(db);
}

const DAY_MS = 24 * 3600 * 1000;
const DELETE_BATCH = 5000;

/**
 * Deletes succeeded jobs `retentionDays` after they finished and dead ones `deadRetentionDays` after, in
 * batches so no statement holds many locks; answers how many went.
 */
export async function deleteOldJobs(
  db: Executor,
  opts: { retentionDays: number; deadRetentionDays: number; now?: Date },
): Promise<{ succeeded: number; dead: number }> {
  const now = (opts.now ?? new Date()).getTime();
  const sweep = async (status: 'succeeded' | 'dead', days: number) => {
    const before = new Date(now - days * DAY_MS);
    let total = 0;
    for (;;) {
      const n = await repo.deleteFinished(db, { status, before, limit: DELETE_BATCH });
      total += n;
      if (n < DELETE_BATCH) return total;
    }
  };
  return { succeeded: await sweep('succeeded', opts.retentionDays), dead: await sweep('dead', opts.deadRetentionDays) };
}

/**
 * Queues a dead job again, due now with a fresh set of attempts. Refused for a job that is not dead, of a
 * type this catalog cannot run, or whose dedupe key another pending job holds.
 */
export async function retryJob(db: Executor, catalog: JobCatalog, id: string): Promise<JobView> {
  const job = await repo.findJob(db, id);
  if (!job) throw new NotFoundError(`Job ${id} not found`);
  if (job.status !== 'dead') throw new ConflictError(`Job ${id} is ${job.status}; only a dead job can be retried`);
  if (!catalog[job.type]) throw new ConflictError(`Job ${id} is of type ${job.type}, which no worker runs any more`);
  try {
    const row = await repo.requeueDead(db, id);
    if (!row) throw new ConflictError(`Job ${id} is no longer dead`);
    return toView(row);
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw new ConflictError(`Job ${id}: another job with its key ${job.dedupeKey ?? ''} is pending`);
    }
    throw err;
  }
}
