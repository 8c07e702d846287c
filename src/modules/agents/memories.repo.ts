import { and, count, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { type AgentMemoryRow, agentMemories } from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';

/** The SQL of agent memories; every function is scoped by agent (and end user where it matters). */

const vector = (content: string) => sql`to_tsvector('english', ${content})`;

export async function insertMemory(
  db: Executor,
  row: Omit<typeof agentMemories.$inferInsert, 'search' | 'createdAt' | 'updatedAt'> & { content: string },
): Promise<AgentMemoryRow> {
  const [inserted] = await db
    .insert(agentMemories)
    .values({ ...row, search: vector(row.content) })
    .returning();
  if (!inserted) throw new Error('memory insert returned nothing');
  return inserted;
}

export async function updateMemory(db: Executor, agentId: string, id: string, content: string): Promise<boolean> {
  const rows = await db
    .update(agentMemories)
    .set({ content, search: vector(content), updatedAt: new Date() })
    .where(and(eq(agentMemories.agentId, agentId), eq(agentMemories.id, id)))
    .returning({ id: agentMemories.id });
  return rows.length > 0;
}

export async function deleteMemories(db: Executor, agentId: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const rows = await db
    .delete(agentMemories)
    .where(and(eq(agentMemories.agentId, agentId), inArray(agentMemories.id, ids)))
    .returning({ id: agentMemories.id });
  return rows.length;
}

export async function listMemories(
  db: Executor,
  agentId: string,
  endUserId: string | undefined,
  p: { page: number; limit: number },
): Promise<{ rows: AgentMemoryRow[]; total: number }> {
  const where = and(eq(agentMemories.agentId, agentId), endUserId ? eq(agentMemories.endUserId, endUserId) : undefined);
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(agentMemories)
      .where(where)
      .orderBy(desc(agentMemories.updatedAt), desc(agentMemories.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(agentMemories).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

/**
 * The memories closest to `query`: any of its words (full text, English stems) or a similar spelling
 * (trigram), ranked by the sum of both scores, best first.
 */
export async function searchMemories(
  db: Executor,
  agentId: string,
  endUserId: string | undefined,
  query: string,
  limit: number,
): Promise<(AgentMemoryRow & { score: number })[]> {
  const tsquery = sql`(CASE WHEN numnode(websearch_to_tsquery('english', ${query})) = 0 THEN websearch_to_tsquery('english', ${query})
    ELSE replace(websearch_to_tsquery('english', ${query})::text, ' & ', ' | ')::tsquery END)`;
  const score = sql<number>`(ts_rank(${agentMemories.search}, ${tsquery}) + word_similarity(${query}, ${agentMemories.content}))`;
  const rows = await db
    .select({ row: agentMemories, score: score.mapWith(Number) })
    .from(agentMemories)
    .where(
      and(
        eq(agentMemories.agentId, agentId),
        endUserId ? eq(agentMemories.endUserId, endUserId) : undefined,
        sql`(${agentMemories.search} @@ ${tsquery} OR ${query} <% ${agentMemories.content})`,
      ),
    )
    .orderBy(desc(score), desc(agentMemories.updatedAt))
    .limit(limit);
  return rows.map((r) => ({ ...r.row, score: r.score }));
}
