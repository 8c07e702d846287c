import { and, asc, count, desc, eq, gt, inArray, ne, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import {
  type AgentRow,
  agentDailyUsage,
  agentMonthlySpend,
  agents,
  type ChatFileRow,
  type ConversationEventRow,
  type ConversationRow,
  chatFiles,
  conversationEvents,
  conversations,
  type MessageRow,
  messages,
} from '../../db/schema/index.ts';
import { NOTIFY_CHANNEL } from '../../lib/notifications.ts';
import { offsetOf } from '../../lib/pagination.ts';

/** All SQL of agents, their conversations and messages, and their usage counters; scoped by account. */

const SORTS = { createdAt: agents.createdAt, updatedAt: agents.updatedAt, name: agents.name } as const;

export async function listAgents(
  db: Executor,
  accountId: string,
  p: { page: number; limit: number; sortBy: keyof typeof SORTS; sortOrder: 'asc' | 'desc' },
): Promise<{ rows: AgentRow[]; total: number }> {
  const where = eq(agents.accountId, accountId);
  const order = p.sortOrder === 'asc' ? asc(SORTS[p.sortBy]) : desc(SORTS[p.sortBy]);
  const [rows, [totals]] = await Promise.all([
    db.select().from(agents).where(where).orderBy(order, asc(agents.id)).limit(p.limit).offset(offsetOf(p)),
    db.select({ n: count() }).from(agents).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

export async function findAgent(db: Executor, accountId: string, agentId: string): Promise<AgentRow | undefined> {
  const [row] = await db
    .select()
    .from(agents)
    .where(and(eq(agents.accountId, accountId), eq(agents.id, agentId)));
  return row;
}

export async function findDefaultAgent(db: Executor, accountId: string): Promise<AgentRow | undefined> {
  const [row] = await db
    .select()
    .from(agents)
    .where(and(eq(agents.accountId, accountId), eq(agents.isDefault, true)));
  return row;
}

/** Inserts the agent; it becomes the default when the account has none (in the same statement). */
export async function insertAgent(db: Executor, row: Omit<typeof agents.$inferInsert, 'isDefault'>): Promise<AgentRow> {
  const [inserted] = await db
    .insert(agents)
    .values({
      ...row,
      isDefault: sql`NOT EXISTS (SELECT 1 FROM agents a WHERE a.account_id = ${row.accountId} AND a.is_default)`,
    })
    .returning();
  if (!inserted) throw new Error('agent insert returned nothing');
  return inserted;
}

export async function updateAgent(
  db: Executor,
  accountId: string,
  agentId: string,
  patch: Partial<Omit<typeof agents.$inferInsert, 'id' | 'accountId' | 'isDefault' | 'createdAt'>>,
): Promise<AgentRow | undefined> {
  const [row] = await db
    .update(agents)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(agents.accountId, accountId), eq(agents.id, agentId)))
    .returning();
  return row;
}

/** Makes `agentId` the only default; call in a transaction. */
export async function setDefaultAgent(db: Executor, accountId: string, agentId: string): Promise<void> {
  await db
    .update(agents)
    .set({ isDefault: false })
    .where(and(eq(agents.accountId, accountId), eq(agents.isDefault, true), ne(agents.id, agentId)));
  await db
    .update(agents)
    .set({ isDefault: true })
    .where(and(eq(agents.accountId, accountId), eq(agents.id, agentId)));
}

export async function deleteAgent(db: Executor, accountId: string, agentId: string): Promise<boolean> {
  const rows = await db
    .delete(agents)
    .where(and(eq(agents.accountId, accountId), eq(agents.id, agentId)))
    .returning({ id: agents.id });
  return rows.length > 0;
}

// ---- Conversations and messages -----------------------------------------------------------------------

export async function insertConversation(
  db: Executor,
  row: typeof conversations.$inferInsert,
): Promise<ConversationRow> {
  const [inserted] = await db.insert(conversations).values(row).returning();
  if (!inserted) throw new Error('conversation insert returned nothing');
  return inserted;
}

/** A conversation by id alone, for jobs acting for whichever account owns it. */
export async function findConversationById(db: Executor, conversationId: string): Promise<ConversationRow | undefined> {
  const [row] = await db.select().from(conversations).where(eq(conversations.id, conversationId));
  return row;
}

export async function findConversation(
  db: Executor,
  accountId: string,
  agentId: string,
  conversationId: string,
): Promise<ConversationRow | undefined> {
  const [row] = await db
    .select()
    .from(conversations)
    .where(
      and(
        eq(conversations.accountId, accountId),
        eq(conversations.agentId, agentId),
        eq(conversations.id, conversationId),
      ),
    );
  return row;
}

export async function listConversations(
  db: Executor,
  agentId: string,
  p: { page: number; limit: number },
): Promise<{ rows: ConversationRow[]; total: number }> {
  const where = eq(conversations.agentId, agentId);
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(conversations)
      .where(where)
      .orderBy(desc(conversations.lastActivityAt), desc(conversations.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(conversations).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

export async function touchConversation(db: Executor, conversationId: string): Promise<void> {
  const now = new Date();
  await db
    .update(conversations)
    .set({ lastActivityAt: now, updatedAt: now })
    .where(eq(conversations.id, conversationId));
}

export async function deleteConversation(db: Executor, conversationId: string): Promise<void> {
  await db.delete(conversations).where(eq(conversations.id, conversationId));
}

export async function insertMessages(db: Executor, rows: (typeof messages.$inferInsert)[]): Promise<MessageRow[]> {
  if (rows.length === 0) return [];
  return db.insert(messages).values(rows).returning();
}

export async function listMessages(
  db: Executor,
  conversationId: string,
  p: { page: number; limit: number },
): Promise<{ rows: MessageRow[]; total: number }> {
  const where = eq(messages.conversationId, conversationId);
  const [rows, [totals]] = await Promise.all([
    db.select().from(messages).where(where).orderBy(asc(messages.seq)).limit(p.limit).offset(offsetOf(p)),
    db.select({ n: count() }).from(messages).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

/** The newest `limit` messages of a conversation, oldest first: the history a chat continues from. */
export async function recentMessages(db: Executor, conversationId: string, limit: number): Promise<MessageRow[]> {
  const rows = await db
    .select()
    .from(messages)
    .where(eq(messages.conversationId, conversationId))
    .orderBy(desc(messages.seq))
    .limit(limit);
  return rows.reverse();
}

// ---- Chat files ---------------------------------------------------------------------------------------

export async function insertChatFile(db: Executor, row: typeof chatFiles.$inferInsert): Promise<ChatFileRow> {
  const [inserted] = await db.insert(chatFiles).values(row).returning();
  if (!inserted) throw new Error('chat file insert returned nothing');
  return inserted;
}

export async function findChatFiles(db: Executor, accountId: string, ids: string[]): Promise<ChatFileRow[]> {
  return db
    .select()
    .from(chatFiles)
    .where(and(eq(chatFiles.accountId, accountId), inArray(chatFiles.id, ids)));
}

// ---- Events -------------------------------------------------------------------------------------------

/**
 * Records an event of a conversation and notifies its subscribers on every instance, in one statement (the
 * notification is sent when the statement's transaction commits).
 */
export async function insertEvent(
  db: Executor,
  conversationId: string,
  type: string,
  data: Record<string, unknown>,
): Promise<number> {
  const rows = (await db.execute(sql`
    WITH e AS (
      INSERT INTO conversation_events (conversation_id, type, data)
      VALUES (${conversationId}, ${type}, ${JSON.stringify(data)}::jsonb)
      RETURNING id
    )
    SELECT e.id::text AS id, pg_notify(${NOTIFY_CHANNEL}, ${conversationId}) FROM e`)) as unknown as {
    rows: { id: string }[];
  };
  return Number(rows.rows[0]?.id ?? 0);
}

/** Events after `afterId`, oldest first, at most `limit`. */
export async function eventsAfter(
  db: Executor,
  conversationId: string,
  afterId: number,
  limit: number,
): Promise<ConversationEventRow[]> {
  return db
    .select()
    .from(conversationEvents)
    .where(and(eq(conversationEvents.conversationId, conversationId), gt(conversationEvents.id, afterId)))
    .orderBy(asc(conversationEvents.id))
    .limit(limit);
}

// ---- Usage limits -------------------------------------------------------------------------------------

/**
 * Counts one message of `endUserId` today (UTC) when under `limit`, in one statement: answers false when the
 * limit was already reached (nothing counted), however many requests race.
 */
export async function countDailyMessage(
  db: Executor,
  agentId: string,
  endUserId: string,
  day: string,
  limit: number,
): Promise<boolean> {
  const rows = await db
    .insert(agentDailyUsage)
    .values({ agentId, endUserId, day, messages: 1 })
    .onConflictDoUpdate({
      target: [agentDailyUsage.agentId, agentDailyUsage.endUserId, agentDailyUsage.day],
      set: { messages: sql`${agentDailyUsage.messages} + 1` },
      setWhere: sql`${agentDailyUsage.messages} < ${limit}`,
    })
    .returning({ messages: agentDailyUsage.messages });
  return rows.length > 0;
}

export async function addMonthlySpend(db: Executor, agentId: string, month: string, credits: number): Promise<void> {
  if (credits <= 0) return;
  await db
    .insert(agentMonthlySpend)
    .values({ agentId, month, credits })
    .onConflictDoUpdate({
      target: [agentMonthlySpend.agentId, agentMonthlySpend.month],
      set: { credits: sql`${agentMonthlySpend.credits} + ${credits}` },
    });
}

export async function monthlySpend(db: Executor, agentId: string, month: string): Promise<number> {
  const [row] = await db
    .select({ credits: agentMonthlySpend.credits })
    .from(agentMonthlySpend)
    .where(and(eq(agentMonthlySpend.agentId, agentId), eq(agentMonthlySpend.month, month)));
  return row?.credits ?? 0;
}
