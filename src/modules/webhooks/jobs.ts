import { createHmac } from 'node:crypto';
import { z } from 'zod';
import type { Deps } from '../../context.ts';
import type { WebhookEndpointRow } from '../../db/schema/index.ts';
import { defineJob, type JobCatalog, type JobContext } from '../../jobs/definition.ts';
import { enqueuerFor, errorText } from '../../jobs/queue.ts';
import { SafeFetchError, safeFetch } from '../../lib/safe-fetch.ts';
import * as repo from './repo.ts';

/**
 * Delivering outbound webhooks. Each attempt is one `webhooks.deliver` job naming the delivery and the attempt's
 * number. The attempt's outcome and, after a failure, the next attempt's job are written in one transaction, so
 * a crash either leaves the attempt to be made again (the job's lease runs out and it runs again) or has
 * scheduled the next one; the attempt number makes a repeated job a no-op once its attempt is recorded.
 * Receivers may so see one attempt twice (at least once); `webhook-id` stays the same to let them drop it.
 */

/** Waits after each failed attempt (Standard Webhooks' usual schedule): 8 attempts over about 28 hours. */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
/** How long a receiver has to answer, and how much of its answer is read. */
export const DELIVERY_TIMEOUT_MS = 15_000;
const RESPONSE_MAX_BYTES = 4096;
/** Deliveries are listed this long, then deleted. */
const KEEP_DELIVERIES_MS = 30 * 24 * 3600 * 1000;

/** `v1,<base64 HMAC-SHA256 of id.timestamp.body>` keyed with the secret's bytes (Standard Webhooks). */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The endpoint's secret, opened (sealed with its id as associated data). */
export function openSecret(
  deps: Pick<Deps, 'keyRing'>,
  endpoint: Pick<WebhookEndpointRow, 'id' | 'secretEnc'>,
): string {
  return deps.keyRing.decrypt(endpoint.secretEnc, endpoint.id);
}

/** Makes attempt `attempt` of a delivery and records it; see the module comment. */
export async function deliverAttempt(deps: Deps, deliveryId: string, attempt: number, job: Pick<JobContext, 'signal'>) {
  const db = deps.database.db;
  const found = await repo.findDelivery(db, deliveryId);
  // Deleted with its endpoint (or its account), or already finished or attempted.
  if (!found) return { skipped: 'delivery deleted' };
  const { delivery, endpoint } = found;
  if (delivery.status !== 'pending' || delivery.attempts >= attempt) return { skipped: 'attempt already made' };
  if (!endpoint.enabled) {
    await repo.recordAttempt(db, delivery.id, attempt, {
      status: 'failed',
      lastError:
        'The endpoint was disabled when this delivery was due, so it is not sent; enable the webhook ' +
        '(PATCH /api/v1/webhooks/{id} with enabled: true) to receive the events that follow',
      nextAttemptAt: null,
    });
    return { status: 'failed', reason: 'endpoint disabled' };
  }
  const timestamp = Math.floor(Date.now() / 1000);
  let responseStatus: number | null = null;
  let error: string | null = null;
  try {
    const answer = await safeFetch(endpoint.url, {
      method: 'POST',
      body: delivery.body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Switchboard-Webhooks/1',
        'webhook-id': delivery.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signature(openSecret(deps, endpoint), delivery.id, timestamp, delivery.body),
      },
      allowHosts: deps.config.ssrfAllowHosts,
      timeoutMs: DELIVERY_TIMEOUT_MS,
      maxBytes: RESPONSE_MAX_BYTES,
      truncate: true,
      // A redirect is a failure: the receiver's URL is the one registered and checked.
      maxRedirects: 0,
      signal: job.signal,
    });
    responseStatus = answer.status;
    if (answer.status < 200 || answer.status >= 300) {
      const text = answer.body.toString('utf8').slice(0, 500);
      error = `The endpoint answered HTTP ${answer.status}${text ? `: ${text}` : ''}`;
    }
  } catch (err) {
    if (!(err instanceof SafeFetchError)) throw err;
    if (job.signal.aborted && err.reason === 'timeout') throw err;
    error =
      err.reason === 'redirects'
        ? 'The endpoint answered with a redirect, which is not followed: register the URL it redirects to'
        : err.message;
  }
  const now = new Date();
  if (error === null) {
    await repo.recordAttempt(db, delivery.id, attempt, {
      status: 'succeeded',
      responseStatus,
      lastError: null,
      nextAttemptAt: null,
      deliveredAt: now,
    });
    return { status: 'succeeded', attempt, responseStatus };
  }
  const wait = RETRY_DELAYS_MS[attempt - 1];
  if (wait === undefined) {
    await repo.recordAttempt(db, delivery.id, attempt, {
      status: 'failed',
      responseStatus,
      lastError: errorText(error),
      nextAttemptAt: null,
    });
    return { status: 'failed', attempt, responseStatus };
  }
  const next = new Date(now.getTime() + wait);
  await db.transaction(async (tx) => {
    const recorded = await repo.recordAttempt(tx, delivery.id, attempt, {
      responseStatus,
      lastError: errorText(error),
      nextAttemptAt: next,
    });
    if (recorded) {
      await enqueueWebhookJob(
        tx,
        'webhooks.deliver',
        { deliveryId: delivery.id, attempt: attempt + 1 },
        { runAt: next, accountId: delivery.accountId },
      );
    }
  });
  return { status: 'retrying', attempt, responseStatus, nextAttemptAt: next.toISOString() };
}

export const webhookJobs = {
  'webhooks.deliver': defineJob({
    payload: z.object({ deliveryId: z.string(), attempt: z.number().int().min(1) }),
    // The delivery's own schedule retries a receiver's failure; these retries cover ours (the database away).
    retry: { maxAttempts: 3, baseDelayMs: 30_000 },
    run: (deps, { deliveryId, attempt }, job) => deliverAttempt(deps, deliveryId, attempt, job),
  }),
  /** Daily: deliveries older than 30 days are deleted. */
  'webhooks.cleanup': defineJob({
    payload: z.object({}),
    schedule: { cron: '41 3 * * *' },
    retry: { maxAttempts: 2, baseDelayMs: 60_000 },
    run: async (deps) => ({
      deleted: await repo.deleteOldDeliveries(deps.database.db, new Date(Date.now() - KEEP_DELIVERIES_MS)),
    }),
  }),
} satisfies JobCatalog;

/** Queues a job of this area (inside the caller's transaction when given one). */
export const enqueueWebhookJob = enqueuerFor(webhookJobs);
