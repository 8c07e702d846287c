import { and, arrayContains, asc, count, desc, eq, inArray, lt } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import {
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
  webhookDeliveries,
  webhookEndpoints,
} from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';

/** All SQL of outbound webhooks; scoped by account except where the delivery job reads by id. */

export async function countEndpoints(db: Executor, accountId: string): Promise<number> {
  const [row] = await db.select({ n: count() }).from(webhookEndpoints).where(eq(webhookEndpoints.accountId, accountId));
  return row?.n ?? 0;
}

export async function listEndpoints(
  db: Executor,
  accountId: string,
  p: { page: number; limit: number },
): Promise<{ rows: WebhookEndpointRow[]; total: number }> {
  const where = eq(webhookEndpoints.accountId, accountId);
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(webhookEndpoints)
      .where(where)
      .orderBy(desc(webhookEndpoints.createdAt), asc(webhookEndpoints.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(webhookEndpoints).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

export async function findEndpoint(
  db: Executor,
  accountId: string,
  id: string,
): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.accountId, accountId), eq(webhookEndpoints.id, id)));
  return row;
}

/** The account's enabled endpoints that picked `event`. */
export function subscribedEndpoints(db: Executor, accountId: string, event: string): Promise<WebhookEndpointRow[]> {
  return db
    .select()
    .from(webhookEndpoints)
    .where(
      and(
        eq(webhookEndpoints.accountId, accountId),
        eq(webhookEndpoints.enabled, true),
        arrayContains(webhookEndpoints.events, [event]),
      ),
    );
}

export async function insertEndpoint(
  db: Executor,
  row: typeof webhookEndpoints.$inferInsert,
): Promise<WebhookEndpointRow> {
  const [inserted] = await db.insert(webhookEndpoints).values(row).returning();
  if (!inserted) throw new Error('webhook endpoint insert returned nothing');
  return inserted;
}

export async function updateEndpoint(
  db: Executor,
  accountId: string,
  id: string,
  patch: Partial<Pick<WebhookEndpointRow, 'url' | 'events' | 'description' | 'enabled'>>,
): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db
    .update(webhookEndpoints)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(webhookEndpoints.accountId, accountId), eq(webhookEndpoints.id, id)))
    .returning();
  return row;
}

export async function deleteEndpoint(db: Executor, accountId: string, id: string): Promise<boolean> {
  const rows = await db
    .delete(webhookEndpoints)
    .where(and(eq(webhookEndpoints.accountId, accountId), eq(webhookEndpoints.id, id)))
    .returning({ id: webhookEndpoints.id });
  return rows.length > 0;
}

// ---- deliveries ----

export async function insertDeliveries(db: Executor, rows: (typeof webhookDeliveries.$inferInsert)[]): Promise<void> {
  if (rows.length) await db.insert(webhookDeliveries).values(rows);
}

export async function listDeliveries(
  db: Executor,
  accountId: string,
  endpointId: string,
  p: { page: number; limit: number; status?: WebhookDeliveryRow['status'] | undefined },
): Promise<{ rows: WebhookDeliveryRow[]; total: number }> {
  const where = and(
    eq(webhookDeliveries.accountId, accountId),
    eq(webhookDeliveries.endpointId, endpointId),
    p.status ? eq(webhookDeliveries.status, p.status) : undefined,
  );
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(webhookDeliveries)
      .where(where)
      .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(webhookDeliveries).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

/** The newest delivery of each of these endpoints of the account (one query; endpoints without any are absent). */
export function latestDeliveries(
  db: Executor,
  accountId: string,
  endpointIds: string[],
): Promise<WebhookDeliveryRow[]> {
  if (!endpointIds.length) return Promise.resolve([]);
  return db
    .selectDistinctOn([webhookDeliveries.endpointId])
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.accountId, accountId), inArray(webhookDeliveries.endpointId, endpointIds)))
    .orderBy(webhookDeliveries.endpointId, desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id));
}

/** A delivery with its endpoint, by id alone (the delivery job). */
export async function findDelivery(
  db: Executor,
  id: string,
): Promise<{ delivery: WebhookDeliveryRow; endpoint: WebhookEndpointRow } | undefined> {
  const [row] = await db
    .select({ delivery: webhookDeliveries, endpoint: webhookEndpoints })
    .from(webhookDeliveries)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
    .where(eq(webhookDeliveries.id, id));
  return row;
}

/** Records an attempt, only if no other run recorded attempt `attempt` first; answers whether it did. */
export async function recordAttempt(
  db: Executor,
  id: string,
  attempt: number,
  patch: Partial<Pick<WebhookDeliveryRow, 'status' | 'responseStatus' | 'lastError' | 'nextAttemptAt' | 'deliveredAt'>>,
): Promise<boolean> {
  const rows = await db
    .update(webhookDeliveries)
    .set({ ...patch, attempts: attempt, updatedAt: new Date() })
    .where(
      and(
        eq(webhookDeliveries.id, id),
        eq(webhookDeliveries.status, 'pending'),
        lt(webhookDeliveries.attempts, attempt),
      ),
    )
    .returning({ id: webhookDeliveries.id });
  return rows.length > 0;
}

/** Deletes deliveries created before `before` (kept for a while for the listing), in one batch. */
export async function deleteOldDeliveries(db: Executor, before: Date): Promise<number> {
  const rows = await db
    .delete(webhookDeliveries)
    .where(lt(webhookDeliveries.createdAt, before))
    .returning({ id: webhookDeliveries.id });
  return rows.length;
}
