import { randomBytes } from 'node:crypto';
import { requireScope, type ServiceContext } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { WebhookDeliveryRow, WebhookDeliveryStatus, WebhookEndpointRow } from '../../db/schema/index.ts';
import { ConflictError, NotFoundError, ValidationError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import { checkFetchableUrl, SafeFetchError } from '../../lib/safe-fetch.ts';
import { enqueueWebhookJob } from './jobs.ts';
import * as repo from './repo.ts';
import {
  type CreatedWebhook,
  type CreateWebhook,
  MAX_ENDPOINTS_PER_ACCOUNT,
  type UpdateWebhook,
  type Webhook,
  type WebhookDelivery,
  type WebhookEvent,
} from './schema.ts';

/**
 * Outbound webhooks (docs/webhooks.md): an account registers endpoints for the events it wants; `emitEvent`,
 * called by the areas where those things happen, records one delivery per subscribed endpoint and queues its
 * first attempt in the caller's transaction, so an event is sent if and only if its change committed.
 * Endpoints need the `account` scope; another account's endpoint is a 404.
 */

const SCOPE = 'account';

function toWebhook(row: WebhookEndpointRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events as WebhookEvent[],
    enabled: row.enabled,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

function toDelivery(row: WebhookDeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    webhookId: row.endpointId,
    eventType: row.eventType,
    payload: JSON.parse(row.body) as unknown,
    status: row.status,
    attempts: row.attempts,
    responseStatus: row.responseStatus,
    lastError: row.lastError,
    nextAttemptAt: row.nextAttemptAt?.toISOString() ?? null,
    deliveredAt: row.deliveredAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** A URL the SSRF guard would refuse is a 422 on `body.url`, naming why. */
async function checkUrl(ctx: ServiceContext, url: string): Promise<void> {
  try {
    await checkFetchableUrl(url, ctx.deps.config.ssrfAllowHosts);
  } catch (err) {
    if (!(err instanceof SafeFetchError)) throw err;
    throw new ValidationError(`The webhook URL may not be used: ${err.message}`, [
      { field: 'body.url', message: err.message },
    ]);
  }
}

async function ownedEndpoint(ctx: ServiceContext, id: string): Promise<WebhookEndpointRow> {
  requireScope(ctx, SCOPE);
  const row = await repo.findEndpoint(ctx.db, ctx.accountId, id);
  if (!row) throw new NotFoundError(`Webhook ${id} not found`);
  return row;
}

/** Registers an endpoint; answers it with its signing secret, the only time the secret is shown. */
export async function createWebhook(ctx: ServiceContext, input: CreateWebhook): Promise<CreatedWebhook> {
  requireScope(ctx, SCOPE);
  await checkUrl(ctx, input.url);
  if ((await repo.countEndpoints(ctx.db, ctx.accountId)) >= MAX_ENDPOINTS_PER_ACCOUNT) {
    throw new ConflictError(
      `An account has at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhooks: delete one (DELETE /api/v1/webhooks/{id}) before adding another`,
    );
  }
  const id = newId('webhookEndpoint');
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const row = await repo.insertEndpoint(ctx.db, {
    id,
    accountId: ctx.accountId,
    url: input.url,
    description: input.description,
    events: [...new Set(input.events)],
    enabled: input.enabled,
    secretEnc: ctx.deps.keyRing.encrypt(secret, id),
  });
  return { ...toWebhook(row), secret };
}

export async function listWebhooks(ctx: ServiceContext, p: { page: number; limit: number }): Promise<Page<Webhook>> {
  requireScope(ctx, SCOPE);
  const { rows, total } = await repo.listEndpoints(ctx.db, ctx.accountId, p);
  return toPage(rows.map(toWebhook), total, p);
}

export async function getWebhook(ctx: ServiceContext, id: string): Promise<Webhook> {
  return toWebhook(await ownedEndpoint(ctx, id));
}

/** Changes the fields given; a new URL passes the SSRF guard like a new endpoint's. */
export async function updateWebhook(ctx: ServiceContext, id: string, input: UpdateWebhook): Promise<Webhook> {
  const current = await ownedEndpoint(ctx, id);
  if (input.url !== undefined) await checkUrl(ctx, input.url);
  const row = await repo.updateEndpoint(ctx.db, ctx.accountId, current.id, {
    ...(input.url !== undefined ? { url: input.url } : {}),
    ...(input.events !== undefined ? { events: [...new Set(input.events)] } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
  });
  if (!row) throw new NotFoundError(`Webhook ${id} not found`);
  return toWebhook(row);
}

/** Deletes the endpoint with its deliveries; their queued attempts find nothing and end. */
export async function deleteWebhook(ctx: ServiceContext, id: string): Promise<void> {
  requireScope(ctx, SCOPE);
  if (!(await repo.deleteEndpoint(ctx.db, ctx.accountId, id))) throw new NotFoundError(`Webhook ${id} not found`);
}

export async function listDeliveries(
  ctx: ServiceContext,
  id: string,
  p: { page: number; limit: number; status?: WebhookDeliveryStatus | undefined },
): Promise<Page<WebhookDelivery>> {
  const endpoint = await ownedEndpoint(ctx, id);
  const { rows, total } = await repo.listDeliveries(ctx.db, ctx.accountId, endpoint.id, p);
  return toPage(rows.map(toDelivery), total, p);
}

/** The newest delivery of each of the account's endpoints given (the account page's list), by endpoint id. */
export async function latestDeliveries(
  ctx: ServiceContext,
  endpointIds: readonly string[],
): Promise<Map<string, WebhookDelivery>> {
  requireScope(ctx, SCOPE);
  const rows = await repo.latestDeliveries(ctx.db, ctx.accountId, [...endpointIds].slice(0, 100));
  return new Map(rows.map((r) => [r.endpointId, toDelivery(r)]));
}

/**
 * Records `event` for every enabled endpoint of the account that picked it and queues each first attempt, on
 * `db` (pass the transaction that makes the change, so the event goes out exactly when the change commits).
 * The body is `{type, timestamp, data}`, fixed now: every attempt sends the same bytes.
 */
export async function emitEvent(
  db: Executor,
  accountId: string,
  type: WebhookEvent,
  data: Record<string, unknown>,
): Promise<number> {
  const endpoints = await repo.subscribedEndpoints(db, accountId, type);
  if (!endpoints.length) return 0;
  const body = JSON.stringify({ type, timestamp: new Date().toISOString(), data });
  const rows = endpoints.map((e) => ({
    id: newId('webhookDelivery'),
    accountId,
    endpointId: e.id,
    eventType: type,
    body,
    nextAttemptAt: new Date(),
  }));
  await repo.insertDeliveries(db, rows);
  for (const row of rows) {
    await enqueueWebhookJob(db, 'webhooks.deliver', { deliveryId: row.id, attempt: 1 }, { accountId });
  }
  return rows.length;
}
