import { and, asc, count, desc, eq, gt, inArray, lt, ne, type SQL, sql } from 'drizzle-orm';
import type { Db, Executor } from '../../db/client.ts';
import { namedStatement, perDatabase } from '../../db/named.ts';
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
  conversationRuns,
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

/** The read of `conversationWithHistory`, prepared once per database handle (building it cost 0.2 ms a call). */
const historyQuery = perDatabase((db) => {
  const p = sql.placeholder;
  // A lateral read of the newest messages walks the (conversation, seq) index backwards and stops at `limit`.
  const recent = db
    .select()
    .from(messages)
    .where(eq(messages.conversationId, conversations.id))
    .orderBy(desc(messages.seq))
    .limit(p('limit'))
    .as('recent');
  return db
    .select({
      conversation: conversations,
      message: {
        id: recent.id,
        seq: recent.seq,
        conversationId: recent.conversationId,
        role: recent.role,
        content: recent.content,
        toolCalls: recent.toolCalls,
        toolCallId: recent.toolCallId,
        toolName: recent.toolName,
        error: recent.error,
        createdAt: recent.createdAt,
      },
    })
    .from(conversations)
    .leftJoinLateral(recent, sql`true`)
    .where(
      and(
        eq(conversations.accountId, p('accountId')),
        eq(conversations.agentId, p('agentId')),
        eq(conversations.id, p('conversationId')),
      ),
    )
    .orderBy(desc(recent.seq))
    .prepare('agents_conversation_history');
});

/**
 * The account's conversation with the agent and its newest `limit` messages, oldest first, in one statement
 * (a continued chat's reads); undefined when there is no such conversation.
 */
export async function conversationWithHistory(
  db: Executor,
  accountId: string,
  agentId: string,
  conversationId: string,
  limit: number,
): Promise<{ conversation: ConversationRow; messages: MessageRow[] } | undefined> {
  const rows = await historyQuery(db).execute({ accountId, agentId, conversationId, limit });
  const first = rows[0];
  if (!first) return undefined;
  return {
    conversation: first.conversation,
    messages: rows.flatMap((r) => (r.message ? [r.message] : [])).reverse(),
  };
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

/** What a chat writes after the fact (see events.service.ts `ConversationLog`), in the order it happened. */
export interface ConversationLogBatch {
  /** New conversations, with their last activity in this batch. */
  conversations: Array<{
    id: string;
    accountId: string;
    agentId: string;
    endUserId: string;
    title: string;
    at: Date;
    lastActivityAt: Date;
  }>;
  messages: Array<{
    id: string;
    conversationId: string;
    role: MessageRow['role'];
    content: string | null;
    toolCalls: MessageRow['toolCalls'];
    toolCallId: string | null;
    toolName: string | null;
    error: string | null;
    at: Date;
  }>;
  events: Array<{ conversationId: string; type: string; data: Record<string, unknown>; at: Date }>;
  /** Conversations (created before this batch) whose last activity moves to `at`. */
  touches: Array<{ conversationId: string; at: Date }>;
  /** Turns starting: their lease rows, held `leaseMs` from the database's now. */
  runs: Array<{ id: string; conversationId: string; leaseMs: number }>;
  /** Turns that ended (answered or failed): their lease rows go. */
  endedRuns: string[];
}

const jsonRows = (rows: object[]) => JSON.stringify(rows.map((r, n) => ({ ...r, n })));

/** The batch function (migration 0030), called by name: each connection plans it once, not at every batch. */
const conversationLogStatement = namedStatement(
  'agents_write_conversation_log',
  (p: (key: 'conversations' | 'messages' | 'events' | 'touches' | 'runs' | 'endedRuns' | 'channel') => SQL) =>
    sql`SELECT agents_write_conversation_log(${p('conversations')}::jsonb, ${p('messages')}::jsonb,
      ${p('events')}::jsonb, ${p('touches')}::jsonb, ${p('runs')}::jsonb, ${p('endedRuns')}::jsonb, ${p('channel')})`,
);

/**
 * Writes a batch of conversations, messages and events in one statement, each table's rows in the batch's
 * order (message `seq` and event ids follow it), and notifies each conversation's subscribers once (on commit).
 * Rows of a conversation that is gone (deleted meanwhile, or its agent) are dropped, never an error.
 */
export async function writeConversationLog(db: Executor, batch: ConversationLogBatch): Promise<void> {
  await conversationLogStatement(db, {
    conversations: jsonRows(batch.conversations),
    messages: jsonRows(batch.messages),
    events: jsonRows(batch.events),
    touches: jsonRows(batch.touches),
    runs: jsonRows(batch.runs),
    endedRuns: JSON.stringify(batch.endedRuns),
    channel: NOTIFY_CHANNEL,
  });
}

const conversationRowsStatement = namedStatement(
  'agents_write_conversation_rows',
  (p: (key: 'conversations' | 'messages' | 'runs') => SQL) =>
    sql`SELECT agents_write_conversation_rows(${p('conversations')}::jsonb, ${p('messages')}::jsonb,
      ${p('runs')}::jsonb)`,
);

/**
 * Writes a batch's conversations, messages and turns' leases alone (a batch with no events, touches or ended
 * leases: what an answer names), by the rules of `writeConversationLog`, in about half its database time
 * (migration 0033).
 */
export async function writeConversationRows(
  db: Executor,
  batch: Pick<ConversationLogBatch, 'conversations' | 'messages' | 'runs'>,
): Promise<void> {
  await conversationRowsStatement(db, {
    conversations: jsonRows(batch.conversations),
    messages: jsonRows(batch.messages),
    runs: jsonRows(batch.runs),
  });
}

/** A prepared insert of one message, per database handle (PostgreSQL plans a named statement once a connection). */
const messageInsert = perDatabase((db) => {
  const p = sql.placeholder;
  return db
    .insert(messages)
    .values({
      id: p('id'),
      conversationId: p('conversationId'),
      role: p('role'),
      content: p('content'),
      // A placeholder would go through the column's JSON encoder: null would be stored as JSON null, not NULL.
      toolCalls: sql`${p('toolCalls')}::jsonb`,
      toolCallId: p('toolCallId'),
      toolName: p('toolName'),
      error: p('error'),
      createdAt: p('at'),
    })
    .onConflictDoNothing()
    .prepare('agents_insert_message');
});

/**
 * Writes one message alone, as `writeConversationLog` would, in one plain statement (a fraction of the batch
 * function's cost: what a chat's answer waits for). A message of a conversation that is gone is dropped.
 */
export async function writeMessage(db: Db, m: ConversationLogBatch['messages'][number]): Promise<void> {
  try {
    await messageInsert(db).execute({ ...m, toolCalls: m.toolCalls === null ? null : JSON.stringify(m.toolCalls) });
  } catch (err) {
    // foreign_key_violation: the conversation was deleted (with its messages) before this landed.
    const e = err as { code?: string; cause?: { code?: string } };
    if ((e.cause?.code ?? e.code) !== '23503') throw err;
  }
}

/** Holds a running turn's lease `leaseMs` longer (database time); false when its row is gone (it was failed). */
export async function renewRunLease(db: Executor, runId: string, leaseMs: number): Promise<boolean> {
  const rows = await db
    .update(conversationRuns)
    .set({ leaseExpiresAt: sql`now() + ${Math.round(leaseMs)} * interval '1 millisecond'` })
    .where(eq(conversationRuns.id, runId))
    .returning({ id: conversationRuns.id });
  return rows.length === 1;
}

/**
 * Deletes and answers up to `limit` turns whose lease ran out by `at` (default: the database's now), oldest first. A row locked by a
 * renewal or by another sweep is skipped, and a lease renewed meanwhile is not expired: each turn is taken once.
 */
export async function takeExpiredRuns(
  db: Executor,
  limit: number,
  at?: Date,
): Promise<Array<{ id: string; conversationId: string }>> {
  const expired = db
    .select({ id: conversationRuns.id })
    .from(conversationRuns)
    .where(lt(conversationRuns.leaseExpiresAt, at ?? sql`now()`))
    .orderBy(asc(conversationRuns.leaseExpiresAt))
    .limit(limit)
    .for('update', { skipLocked: true });
  return db
    .delete(conversationRuns)
    .where(inArray(conversationRuns.id, expired))
    .returning({ id: conversationRuns.id, conversationId: conversationRuns.conversationId });
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
