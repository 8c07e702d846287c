import { Cron } from 'croner';
import type { z } from 'zod';
import type { Deps } from '../context.ts';
import type { Logger } from '../lib/logger.ts';

/** How a failed job is retried: attempt n waits `baseDelayMs * 2^(n-1)` plus up to a quarter more, at most `maxDelayMs`. */
export interface RetryPolicy {
  /** Claims in all, the first run included; the job is `dead` after the last one fails. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 5, baseDelayMs: 10_000, maxDelayMs: 3_600_000 };

/** What a running handler is told about its run. */
export interface JobContext {
  jobId: string;
  /** 1 on the first run. */
  attempt: number;
  /** Aborted when the worker lost the job's lease (another worker may run it now) or shuts down past its deadline. */
  signal: AbortSignal;
  log: Logger;
}

/** A recurring job: a 5-field cron expression (minute hour day-of-month month day-of-week) read in an IANA zone. */
export interface JobSchedule {
  cron: string;
  /** Default `UTC`. */
  timezone?: string;
}

/**
 * One job type of a catalog. Payloads are plain JSON checked against `payload` when enqueued and again when
 * run; they never carry secrets (enqueue refuses what looks like a token): a handler reads those from the
 * database by id.
 */
export interface JobDefinition<S extends z.ZodType = z.ZodType> {
  payload: S;
  /** Method syntax on purpose: a catalog holds handlers of different payload types. */
  run(deps: Deps, payload: z.output<S>, ctx: JobContext): Promise<unknown>;
  retry?: Partial<RetryPolicy>;
  schedule?: JobSchedule;
}

export type JobCatalog = Readonly<Record<string, JobDefinition>>;

/** Declares a job with its payload type inferred from the schema. */
export function defineJob<S extends z.ZodType>(def: JobDefinition<S>): JobDefinition<S> {
  return def;
}

export function retryPolicy(def: Pick<JobDefinition, 'retry'>): RetryPolicy {
  return { ...DEFAULT_RETRY, ...def.retry };
}

/** The wait before the attempt after `attempt` failed: exponential, with up to 25% jitter so retries spread out. */
export function backoffMs(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const exponential = policy.baseDelayMs * 2 ** Math.max(0, attempt - 1);
  return Math.round(Math.min(policy.maxDelayMs, exponential * (1 + 0.25 * random())));
}

/**
 * Parses a schedule, refusing anything but 5 cron fields and unknown zones. Croner computes the runs across
 * DST changes: a fixed time (`30 2 * * *`) skipped by the spring change runs just after the gap, and once when
 * the autumn change repeats it; a stepped or wildcard time skips the gap and runs on both repeats.
 */
export function parseSchedule(schedule: JobSchedule): Cron {
  const fields = schedule.cron.trim().split(/\s+/);
  if (fields.length !== 5) {
    throw new Error(`cron "${schedule.cron}" must have 5 fields (minute hour day-of-month month day-of-week)`);
  }
  const timezone = schedule.timezone ?? 'UTC';
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw new Error(`timezone "${timezone}" is not an IANA time zone`);
  }
  return new Cron(schedule.cron, { mode: '5-part', timezone, paused: true });
}

/** Checks every schedule of a catalog; a bad one stops start-up naming the job. */
export function validateCatalog(catalog: JobCatalog): void {
  for (const [type, def] of Object.entries(catalog)) {
    if (!def.schedule) continue;
    try {
      parseSchedule(def.schedule);
    } catch (err) {
      throw new Error(`Job ${type}: ${(err as Error).message}`);
    }
  }
}
