import { and, asc, count, desc, eq, gt, inArray, isNull, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import type { StoredDelegation } from '../../db/schema/columns.ts';
import {
  type ChannelChatRow,
  type ChannelDeliveryRow,
  type ChannelLinkRow,
  type ChannelType,
  channelChats,
  channelDailyUsage,
  channelDeliveries,
  channelLinkCodes,
  channelLinks,
  type MessagingChannelRow,
  messagingChannels,
  webchatVisitors,
} from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';

/** All SQL of messaging channels; tenant reads are scoped by account, platform look-ups by their secret's hash. */

export async function insertChannel(
  db: Executor,
  row: typeof messagingChannels.$inferInsert,
): Promise<MessagingChannelRow> {
  const [inserted] = await db.insert(messagingChannels).values(row).returning();
  if (!inserted) throw new Error('insert returned nothing');
  return inserted;
}

export async function findChannel(
  db: Executor,
  accountId: string,
  channelId: string,
): Promise<MessagingChannelRow | undefined> {
  const [row] = await db
    .select()
    .from(messagingChannels)
    .where(and(eq(messagingChannels.accountId, accountId), eq(messagingChannels.id, channelId)));
  return row;
}

/** A channel by id alone: for the platform's side (jobs, the public web chat), never for a tenant's request. */
export async function findChannelById(db: Executor, channelId: string): Promise<MessagingChannelRow | undefined> {
  const [row] = await db.select().from(messagingChannels).where(eq(messagingChannels.id, channelId));
  return row;
}

export async function findChannelByExternalId(
  db: Executor,
  type: ChannelType,
  externalId: string,
): Promise<MessagingChannelRow | undefined> {
  const [row] = await db
    .select()
    .from(messagingChannels)
    .where(and(eq(messagingChannels.type, type), eq(messagingChannels.externalId, externalId)));
  return row;
}

export async function findChannelsBySecretHash(
  db: Executor,
  type: ChannelType,
  hash: string,
): Promise<MessagingChannelRow[]> {
  return db
    .select()
    .from(messagingChannels)
    .where(and(eq(messagingChannels.type, type), eq(messagingChannels.webhookSecretHash, hash)));
}

export async function listChannels(
  db: Executor,
  accountId: string,
  p: { page: number; limit: number; sortOrder: 'asc' | 'desc' },
): Promise<{ rows: MessagingChannelRow[]; total: number }> {
  const where = eq(messagingChannels.accountId, accountId);
  const order = p.sortOrder === 'asc' ? asc(messagingChannels.createdAt) : desc(messagingChannels.createdAt);
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(messagingChannels)
      .where(where)
      .orderBy(order, asc(messagingChannels.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(messagingChannels).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

export async function channelsOfAgent(
  db: Executor,
  accountId: string,
  agentId: string,
): Promise<MessagingChannelRow[]> {
  return db
    .select()
    .from(messagingChannels)
    .where(and(eq(messagingChannels.accountId, accountId), eq(messagingChannels.agentId, agentId)));
}

export async function updateChannel(
  db: Executor,
  accountId: string,
  channelId: string,
  patch: Partial<typeof messagingChannels.$inferInsert>,
): Promise<MessagingChannelRow | undefined> {
  const [row] = await db
    .update(messagingChannels)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(messagingChannels.accountId, accountId), eq(messagingChannels.id, channelId)))
    .returning();
  return row;
}

export async function deleteChannel(db: Executor, accountId: string, channelId: string): Promise<boolean> {
  const rows = await db
    .delete(messagingChannels)
    .where(and(eq(messagingChannels.accountId, accountId), eq(messagingChannels.id, channelId)))
    .returning({ id: messagingChannels.id });
  return rows.length > 0;
}

/** Records a delivery once: answers false when its key was already there (a duplicate). */
export async function insertDelivery(db: Executor, row: typeof channelDeliveries.$inferInsert): Promise<boolean> {
  const rows = await db
    .insert(channelDeliveries)
    .values(row)
    .onConflictDoNothing()
    .returning({ key: channelDeliveries.key });
  return rows.length > 0;
}

export async function findDelivery(
  db: Executor,
  channelId: string,
  key: string,
): Promise<ChannelDeliveryRow | undefined> {
  const [row] = await db
    .select()
    .from(channelDeliveries)
    .where(and(eq(channelDeliveries.channelId, channelId), eq(channelDeliveries.key, key)));
  return row;
}

export async function updateDelivery(
  db: Executor,
  channelId: string,
  key: string,
  patch: Partial<typeof channelDeliveries.$inferInsert>,
): Promise<void> {
  await db
    .update(channelDeliveries)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(channelDeliveries.channelId, channelId), eq(channelDeliveries.key, key)));
}

export async function recentDeliveries(db: Executor, channelId: string, limit: number): Promise<ChannelDeliveryRow[]> {
  return db
    .select()
    .from(channelDeliveries)
    .where(eq(channelDeliveries.channelId, channelId))
    .orderBy(desc(channelDeliveries.createdAt))
    .limit(limit);
}

/** The chat's row, made on first sight; `inbound` also moves its last inbound time to now. */
export async function touchChat(
  db: Executor,
  channelId: string,
  chatId: string,
  inbound: boolean,
): Promise<ChannelChatRow> {
  const now = new Date();
  const [row] = await db
    .insert(channelChats)
    .values({ channelId, chatId, lastInboundAt: inbound ? now : null })
    .onConflictDoUpdate({
      target: [channelChats.channelId, channelChats.chatId],
      set: inbound ? { lastInboundAt: now } : { chatId },
    })
    .returning();
  if (!row) throw new Error('upsert returned nothing');
  return row;
}

export async function findChat(db: Executor, channelId: string, chatId: string): Promise<ChannelChatRow | undefined> {
  const [row] = await db
    .select()
    .from(channelChats)
    .where(and(eq(channelChats.channelId, channelId), eq(channelChats.chatId, chatId)));
  return row;
}

export async function setChatConversation(
  db: Executor,
  channelId: string,
  chatId: string,
  conversationId: string | null,
): Promise<void> {
  await db
    .update(channelChats)
    .set({ conversationId })
    .where(and(eq(channelChats.channelId, channelId), eq(channelChats.chatId, chatId)));
}

/** Claims the chat's hourly how-to-link hint: true when none was sent in the last hour (and marks it sent). */
export async function claimHint(db: Executor, channelId: string, chatId: string): Promise<boolean> {
  const rows = await db
    .update(channelChats)
    .set({ lastHintAt: new Date() })
    .where(
      and(
        eq(channelChats.channelId, channelId),
        eq(channelChats.chatId, chatId),
        sql`(${channelChats.lastHintAt} IS NULL OR ${channelChats.lastHintAt} < now() - interval '1 hour')`,
      ),
    )
    .returning({ chatId: channelChats.chatId });
  return rows.length > 0;
}

export async function insertLinkCode(
  db: Executor,
  row: { codeHash: string; channelId: string; expiresAt: Date; runAs: StoredDelegation },
): Promise<void> {
  await db.insert(channelLinkCodes).values(row);
}

/**
 * Uses a link code of the channel once: when it existed, was unused and unexpired (now used), answers the
 * restriction set of whoever made it (null for codes made before it was kept); otherwise undefined.
 */
export async function consumeLinkCode(
  db: Executor,
  channelId: string,
  codeHash: string,
): Promise<{ runAs: StoredDelegation | null } | undefined> {
  const [row] = await db
    .update(channelLinkCodes)
    .set({ usedAt: new Date() })
    .where(
      and(
        eq(channelLinkCodes.codeHash, codeHash),
        eq(channelLinkCodes.channelId, channelId),
        isNull(channelLinkCodes.usedAt),
        gt(channelLinkCodes.expiresAt, new Date()),
      ),
    )
    .returning({ runAs: channelLinkCodes.runAs });
  return row;
}

/** Links the person (again: a new code replaces the chat, name and restriction set of an earlier link). */
export async function upsertLink(db: Executor, row: typeof channelLinks.$inferInsert): Promise<void> {
  await db
    .insert(channelLinks)
    .values(row)
    .onConflictDoUpdate({
      target: [channelLinks.channelId, channelLinks.externalUserId],
      set: { chatId: row.chatId, displayName: row.displayName ?? '', runAs: row.runAs ?? null },
    });
}

export async function findLink(
  db: Executor,
  channelId: string,
  externalUserId: string,
): Promise<ChannelLinkRow | undefined> {
  const [row] = await db
    .select()
    .from(channelLinks)
    .where(and(eq(channelLinks.channelId, channelId), eq(channelLinks.externalUserId, externalUserId)));
  return row;
}

export async function linksOf(db: Executor, channelId: string): Promise<ChannelLinkRow[]> {
  return (await linksOfChannels(db, [channelId])).get(channelId) ?? [];
}

/** The linked people of several channels in one read, oldest link first, by channel id. */
export async function linksOfChannels(db: Executor, channelIds: string[]): Promise<Map<string, ChannelLinkRow[]>> {
  const byChannel = new Map<string, ChannelLinkRow[]>();
  if (channelIds.length === 0) return byChannel;
  const rows = await db
    .select()
    .from(channelLinks)
    .where(inArray(channelLinks.channelId, channelIds))
    .orderBy(asc(channelLinks.createdAt));
  for (const row of rows) byChannel.set(row.channelId, [...(byChannel.get(row.channelId) ?? []), row]);
  return byChannel;
}

export async function deleteLinks(db: Executor, channelId: string, externalUserId?: string): Promise<number> {
  const rows = await db
    .delete(channelLinks)
    .where(
      externalUserId
        ? and(eq(channelLinks.channelId, channelId), eq(channelLinks.externalUserId, externalUserId))
        : eq(channelLinks.channelId, channelId),
    )
    .returning({ id: channelLinks.externalUserId });
  return rows.length;
}

export async function insertVisitor(db: Executor, row: typeof webchatVisitors.$inferInsert): Promise<void> {
  await db.insert(webchatVisitors).values(row);
}

export async function findVisitor(
  db: Executor,
  channelId: string,
  tokenHash: string,
): Promise<{ id: string } | undefined> {
  const [row] = await db
    .select({ id: webchatVisitors.id })
    .from(webchatVisitors)
    .where(and(eq(webchatVisitors.channelId, channelId), eq(webchatVisitors.tokenHash, tokenHash)));
  return row;
}

/** Counts one more for `subject` today unless it reached `limit`: false when over. */
export async function countDaily(
  db: Executor,
  channelId: string,
  subject: string,
  day: string,
  limit: number,
): Promise<boolean> {
  const rows = await db
    .insert(channelDailyUsage)
    .values({ channelId, subject, day, count: 1 })
    .onConflictDoUpdate({
      target: [channelDailyUsage.channelId, channelDailyUsage.subject, channelDailyUsage.day],
      set: { count: sql`${channelDailyUsage.count} + 1` },
      setWhere: sql`${channelDailyUsage.count} < ${limit}`,
    })
    .returning({ count: channelDailyUsage.count });
  return rows.length > 0;
}

export async function deleteDelivery(db: Executor, channelId: string, key: string): Promise<void> {
  await db
    .delete(channelDeliveries)
    .where(and(eq(channelDeliveries.channelId, channelId), eq(channelDeliveries.key, key)));
}
