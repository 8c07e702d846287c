import { and, asc, count, desc, eq, gt, lt, notExists, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { type AgentToolRow, agentTools, type CustomToolRow, customTools, toolTestRuns } from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';

/** All SQL of custom tools and their agent links; scoped by account. */

const SORTS = { createdAt: customTools.createdAt, updatedAt: customTools.updatedAt, name: customTools.name } as const;
export type ToolSort = keyof typeof SORTS;

export async function listTools(
  db: Executor,
  accountId: string,
  p: { page: number; limit: number; sortBy: ToolSort; sortOrder: 'asc' | 'desc'; notLinkedTo?: string },
): Promise<{ rows: CustomToolRow[]; total: number }> {
  const where = and(
    eq(customTools.accountId, accountId),
    p.notLinkedTo
      ? notExists(
          db
            .select({ one: sql`1` })
            .from(agentTools)
            .where(and(eq(agentTools.toolId, customTools.id), eq(agentTools.agentId, p.notLinkedTo))),
        )
      : undefined,
  );
  const order = p.sortOrder === 'asc' ? asc(SORTS[p.sortBy]) : desc(SORTS[p.sortBy]);
  const [rows, [totals]] = await Promise.all([
    db.select().from(customTools).where(where).orderBy(order, asc(customTools.id)).limit(p.limit).offset(offsetOf(p)),
    db.select({ n: count() }).from(customTools).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

export async function findTool(db: Executor, accountId: string, toolId: string): Promise<CustomToolRow | undefined> {
  const [row] = await db
    .select()
    .from(customTools)
    .where(and(eq(customTools.accountId, accountId), eq(customTools.id, toolId)));
  return row;
}

export async function insertTool(db: Executor, row: typeof customTools.$inferInsert): Promise<CustomToolRow> {
  const [inserted] = await db.insert(customTools).values(row).returning();
  if (!inserted) throw new Error('tool insert returned nothing');
  return inserted;
}

export async function updateTool(
  db: Executor,
  accountId: string,
  toolId: string,
  patch: Partial<Omit<typeof customTools.$inferInsert, 'id' | 'accountId' | 'createdAt'>>,
): Promise<CustomToolRow | undefined> {
  const [row] = await db
    .update(customTools)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(customTools.accountId, accountId), eq(customTools.id, toolId)))
    .returning();
  return row;
}

export async function deleteTool(db: Executor, accountId: string, toolId: string): Promise<boolean> {
  const rows = await db
    .delete(customTools)
    .where(and(eq(customTools.accountId, accountId), eq(customTools.id, toolId)))
    .returning({ id: customTools.id });
  return rows.length > 0;
}

// ---- Links --------------------------------------------------------------------------------------------

export interface LinkWithTool {
  link: AgentToolRow;
  tool: CustomToolRow;
}

export async function listLinks(db: Executor, accountId: string, agentId: string): Promise<LinkWithTool[]> {
  return db
    .select({ link: agentTools, tool: customTools })
    .from(agentTools)
    .innerJoin(customTools, eq(customTools.id, agentTools.toolId))
    .where(and(eq(agentTools.accountId, accountId), eq(agentTools.agentId, agentId)))
    .orderBy(asc(agentTools.createdAt), asc(customTools.name));
}

/** Every link of one tool (to any of the account's agents), oldest first. */
export async function linksOfTool(db: Executor, accountId: string, toolId: string): Promise<AgentToolRow[]> {
  return db
    .select()
    .from(agentTools)
    .where(and(eq(agentTools.accountId, accountId), eq(agentTools.toolId, toolId)))
    .orderBy(asc(agentTools.createdAt));
}

/** The link with its tool, its row locked until the transaction ends (concurrent secret changes queue). */
export async function lockLink(
  tx: Executor,
  accountId: string,
  agentId: string,
  toolId: string,
): Promise<LinkWithTool | undefined> {
  const [row] = await tx
    .select({ link: agentTools, tool: customTools })
    .from(agentTools)
    .innerJoin(customTools, eq(customTools.id, agentTools.toolId))
    .where(and(eq(agentTools.accountId, accountId), eq(agentTools.agentId, agentId), eq(agentTools.toolId, toolId)))
    .for('update', { of: agentTools });
  return row;
}

/** Inserts the link; undefined when it exists already. */
export async function insertLink(db: Executor, row: typeof agentTools.$inferInsert): Promise<AgentToolRow | undefined> {
  const [inserted] = await db.insert(agentTools).values(row).onConflictDoNothing().returning();
  return inserted;
}

export async function updateLinkSecrets(
  db: Executor,
  accountId: string,
  agentId: string,
  toolId: string,
  set: { secretsEnc: string | null; secretNames: string[] },
): Promise<AgentToolRow | undefined> {
  const [row] = await db
    .update(agentTools)
    .set({ ...set, updatedAt: new Date() })
    .where(and(eq(agentTools.accountId, accountId), eq(agentTools.agentId, agentId), eq(agentTools.toolId, toolId)))
    .returning();
  return row;
}

export async function deleteLink(db: Executor, accountId: string, agentId: string, toolId: string): Promise<boolean> {
  const rows = await db
    .delete(agentTools)
    .where(and(eq(agentTools.accountId, accountId), eq(agentTools.agentId, agentId), eq(agentTools.toolId, toolId)))
    .returning({ toolId: agentTools.toolId });
  return rows.length > 0;
}

export async function insertTestRun(
  db: Executor,
  row: { id: string; accountId: string; toolId: string; runEnc: string; expiresAt: Date },
): Promise<void> {
  await db.insert(toolTestRuns).values(row);
}

/** The sealed run, if it is the account's, of that tool, and not expired. */
export async function findTestRun(
  db: Executor,
  accountId: string,
  toolId: string,
  id: string,
  now: Date,
): Promise<string | undefined> {
  const [row] = await db
    .select({ runEnc: toolTestRuns.runEnc })
    .from(toolTestRuns)
    .where(
      and(
        eq(toolTestRuns.id, id),
        eq(toolTestRuns.accountId, accountId),
        eq(toolTestRuns.toolId, toolId),
        gt(toolTestRuns.expiresAt, now),
      ),
    )
    .limit(1);
  return row?.runEnc;
}

export async function deleteExpiredTestRuns(db: Executor, now: Date): Promise<number> {
  const rows = await db.delete(toolTestRuns).where(lt(toolTestRuns.expiresAt, now)).returning({ id: toolTestRuns.id });
  return rows.length;
}
