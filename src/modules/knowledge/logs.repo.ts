import { and, count, desc, eq, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { type KnowledgeLogRow, knowledgeLogs } from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';

/** SQL of a base's log: what the compiler and lint did. */

export async function insertLog(db: Executor, row: typeof knowledgeLogs.$inferInsert): Promise<void> {
  await db.insert(knowledgeLogs).values(row);
}

export async function listLogs(
  db: Executor,
  kbId: string,
  p: { page: number; limit: number },
): Promise<{ rows: KnowledgeLogRow[]; total: number }> {
  const where = eq(knowledgeLogs.kbId, kbId);
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(knowledgeLogs)
      .where(where)
      .orderBy(desc(knowledgeLogs.createdAt), desc(knowledgeLogs.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(knowledgeLogs).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

/** The newest compiler proposals that were not applied because a user's edit stands on the page. */
export async function recentSkippedProposals(db: Executor, kbId: string, limit = 50): Promise<KnowledgeLogRow[]> {
  return db
    .select()
    .from(knowledgeLogs)
    .where(and(eq(knowledgeLogs.kbId, kbId), sql`${knowledgeLogs.details} ->> 'skipped' = 'user-edit'`))
    .orderBy(desc(knowledgeLogs.createdAt))
    .limit(limit);
}
