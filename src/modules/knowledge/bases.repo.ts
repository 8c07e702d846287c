import { and, asc, count, desc, eq, inArray, ne } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import {
  type KnowledgeBaseRow,
  type KnowledgeConfigRow,
  knowledgeBases,
  knowledgeConfig,
} from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';

/** SQL of knowledge bases and the account's knowledge settings, scoped by account. */

export async function listBases(
  db: Executor,
  accountId: string,
  p: { page: number; limit: number },
): Promise<{ rows: KnowledgeBaseRow[]; total: number }> {
  const where = eq(knowledgeBases.accountId, accountId);
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(knowledgeBases)
      .where(where)
      .orderBy(desc(knowledgeBases.isDefault), asc(knowledgeBases.createdAt), asc(knowledgeBases.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(knowledgeBases).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

export async function findBase(db: Executor, accountId: string, kbId: string): Promise<KnowledgeBaseRow | undefined> {
  const [row] = await db
    .select()
    .from(knowledgeBases)
    .where(and(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.id, kbId)));
  return row;
}

export async function findBasesByIds(
  db: Executor,
  accountId: string,
  ids: readonly string[],
): Promise<KnowledgeBaseRow[]> {
  if (ids.length === 0) return [];
  return db
    .select()
    .from(knowledgeBases)
    .where(and(eq(knowledgeBases.accountId, accountId), inArray(knowledgeBases.id, [...ids])));
}

/** Locks the base row: the compiler and lint of one base run one at a time. */
export async function lockBase(db: Executor, kbId: string): Promise<KnowledgeBaseRow | undefined> {
  const [row] = await db.select().from(knowledgeBases).where(eq(knowledgeBases.id, kbId)).for('update');
  return row;
}

export async function findDefaultBase(db: Executor, accountId: string): Promise<KnowledgeBaseRow | undefined> {
  const [row] = await db
    .select()
    .from(knowledgeBases)
    .where(and(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.isDefault, true)));
  return row;
}

/** Inserts a base; `undefined` when a unique index refused it (same name, or a second default). */
export async function insertBase(
  db: Executor,
  row: typeof knowledgeBases.$inferInsert,
): Promise<KnowledgeBaseRow | undefined> {
  const [inserted] = await db.insert(knowledgeBases).values(row).onConflictDoNothing().returning();
  return inserted;
}

export async function updateBase(
  db: Executor,
  accountId: string,
  kbId: string,
  patch: Partial<Pick<KnowledgeBaseRow, 'name' | 'description' | 'customInstructions' | 'maxPagesLimit'>>,
): Promise<KnowledgeBaseRow | undefined> {
  const [row] = await db
    .update(knowledgeBases)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.id, kbId)))
    .returning();
  return row;
}

/** Makes `kbId` the account's only default; call inside a transaction (two statements, one outcome). */
export async function setDefaultBase(db: Executor, accountId: string, kbId: string): Promise<void> {
  await db
    .update(knowledgeBases)
    .set({ isDefault: false, updatedAt: new Date() })
    .where(
      and(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.isDefault, true), ne(knowledgeBases.id, kbId)),
    );
  await db
    .update(knowledgeBases)
    .set({ isDefault: true, updatedAt: new Date() })
    .where(and(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.id, kbId)));
}

export async function deleteBase(db: Executor, accountId: string, kbId: string): Promise<boolean> {
  const rows = await db
    .delete(knowledgeBases)
    .where(
      and(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.id, kbId), eq(knowledgeBases.isDefault, false)),
    )
    .returning({ id: knowledgeBases.id });
  return rows.length > 0;
}

export async function getOrCreateConfig(db: Executor, accountId: string): Promise<KnowledgeConfigRow> {
  await db.insert(knowledgeConfig).values({ accountId }).onConflictDoNothing();
  const [row] = await db.select().from(knowledgeConfig).where(eq(knowledgeConfig.accountId, accountId));
  if (!row) throw new Error(`knowledge_config of ${accountId} vanished`);
  return row;
}

export async function updateConfig(
  db: Executor,
  accountId: string,
  patch: Partial<Pick<KnowledgeConfigRow, 'enabled' | 'autoIngestConversations'>>,
): Promise<KnowledgeConfigRow> {
  await getOrCreateConfig(db, accountId);
  const [row] = await db
    .update(knowledgeConfig)
    .set({ ...patch, updatedAt: new Date() })
    .where(eq(knowledgeConfig.accountId, accountId))
    .returning();
  if (!row) throw new Error(`knowledge_config of ${accountId} vanished`);
  return row;
}
