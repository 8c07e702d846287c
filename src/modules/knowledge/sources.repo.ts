import { and, count, desc, eq, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { rowsOf } from '../../db/rows.ts';
import {
  type KnowledgeSourceRow,
  knowledgeConversationTrackers,
  knowledgeSources,
  type SourceStatus,
  type SourceType,
} from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';

/** SQL of a base's sources and of the agent conversations captured as sources. */

export async function insertSource(
  db: Executor,
  row: typeof knowledgeSources.$inferInsert,
): Promise<KnowledgeSourceRow> {
  const [inserted] = await db.insert(knowledgeSources).values(row).returning();
  if (!inserted) throw new Error('source insert returned nothing');
  return inserted;
}

export async function listSources(
  db: Executor,
  kbId: string,
  q: { page: number; limit: number; type?: SourceType | undefined; status?: SourceStatus | undefined },
): Promise<{ rows: KnowledgeSourceRow[]; total: number }> {
  const where = and(
    eq(knowledgeSources.kbId, kbId),
    q.type ? eq(knowledgeSources.type, q.type) : undefined,
    q.status ? eq(knowledgeSources.status, q.status) : undefined,
  );
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(knowledgeSources)
      .where(where)
      .orderBy(desc(knowledgeSources.createdAt), desc(knowledgeSources.id))
      .limit(q.limit)
      .offset(offsetOf(q)),
    db.select({ n: count() }).from(knowledgeSources).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

export async function findSource(
  db: Executor,
  kbId: string,
  sourceId: string,
): Promise<KnowledgeSourceRow | undefined> {
  const [row] = await db
    .select()
    .from(knowledgeSources)
    .where(and(eq(knowledgeSources.kbId, kbId), eq(knowledgeSources.id, sourceId)));
  return row;
}

/** A source by id alone, for the compile job (which acts for whichever account owns it). */
export async function findSourceById(db: Executor, sourceId: string): Promise<KnowledgeSourceRow | undefined> {
  const [row] = await db.select().from(knowledgeSources).where(eq(knowledgeSources.id, sourceId));
  return row;
}

export async function updateSource(
  db: Executor,
  sourceId: string,
  patch: Partial<
    Pick<KnowledgeSourceRow, 'status' | 'error' | 'compiledHash' | 'compiledAt' | 'rawContent' | 'metadata'>
  >,
): Promise<KnowledgeSourceRow | undefined> {
  const [row] = await db
    .update(knowledgeSources)
    .set({ ...patch, updatedAt: new Date() })
    .where(eq(knowledgeSources.id, sourceId))
    .returning();
  return row;
}

export async function deleteSource(db: Executor, kbId: string, sourceId: string): Promise<boolean> {
  const rows = await db
    .delete(knowledgeSources)
    .where(and(eq(knowledgeSources.kbId, kbId), eq(knowledgeSources.id, sourceId)))
    .returning({ id: knowledgeSources.id });
  return rows.length > 0;
}

// Conversation capture

/**
 * Agent conversations to capture: of accounts whose knowledge is on with `autoIngestConversations`, idle since
 * `idleSince`, never captured or active again since their capture. Oldest activity first.
 */
export async function conversationsToCapture(db: Executor, idleSince: Date, limit: number) {
  const rows = await db.execute(sql`
    SELECT c.id, c.account_id, c.agent_id, c.title, c.last_activity_at, t.source_id, a.name AS agent_name
    FROM conversations c
    JOIN knowledge_config k ON k.account_id = c.account_id AND k.enabled AND k.auto_ingest_conversations
    JOIN agents a ON a.id = c.agent_id
    LEFT JOIN knowledge_conversation_trackers t ON t.conversation_id = c.id
    WHERE c.last_activity_at < ${idleSince.toISOString()}::timestamptz
      AND (t.conversation_id IS NULL OR t.captured_activity_at < c.last_activity_at)
    ORDER BY c.last_activity_at
    LIMIT ${limit}`);
  return rowsOf(rows).map((r) => ({
    conversationId: String(r.id),
    accountId: String(r.account_id),
    agentName: String(r.agent_name),
    title: String(r.title ?? ''),
    lastActivityAt: new Date(String(r.last_activity_at)),
    sourceId: r.source_id ? String(r.source_id) : undefined,
  }));
}

export async function saveTracker(
  db: Executor,
  row: { conversationId: string; kbId: string; sourceId: string; capturedActivityAt: Date },
): Promise<void> {
  await db
    .insert(knowledgeConversationTrackers)
    .values(row)
    .onConflictDoUpdate({
      target: knowledgeConversationTrackers.conversationId,
      set: {
        kbId: row.kbId,
        sourceId: row.sourceId,
        capturedActivityAt: row.capturedActivityAt,
        ingestedAt: new Date(),
      },
    });
}
