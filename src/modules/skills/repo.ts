import { and, asc, count, desc, eq, notExists, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { type AgentSkillRow, agentSkills, type SkillRow, skills } from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';

/** All SQL of skills and their agent links; scoped by account. */

const SORTS = { createdAt: skills.createdAt, updatedAt: skills.updatedAt, name: skills.name } as const;
export type SkillSort = keyof typeof SORTS;

export async function listSkills(
  db: Executor,
  accountId: string,
  p: { page: number; limit: number; sortBy: SkillSort; sortOrder: 'asc' | 'desc'; notLinkedTo?: string },
): Promise<{ rows: SkillRow[]; total: number }> {
  const where = and(
    eq(skills.accountId, accountId),
    p.notLinkedTo
      ? notExists(
          db
            .select({ one: sql`1` })
            .from(agentSkills)
            .where(and(eq(agentSkills.skillId, skills.id), eq(agentSkills.agentId, p.notLinkedTo))),
        )
      : undefined,
  );
  const order = p.sortOrder === 'asc' ? asc(SORTS[p.sortBy]) : desc(SORTS[p.sortBy]);
  const [rows, [totals]] = await Promise.all([
    db.select().from(skills).where(where).orderBy(order, asc(skills.id)).limit(p.limit).offset(offsetOf(p)),
    db.select({ n: count() }).from(skills).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

export async function findSkill(db: Executor, accountId: string, skillId: string): Promise<SkillRow | undefined> {
  const [row] = await db
    .select()
    .from(skills)
    .where(and(eq(skills.accountId, accountId), eq(skills.id, skillId)));
  return row;
}

export async function insertSkill(db: Executor, row: typeof skills.$inferInsert): Promise<SkillRow> {
  const [inserted] = await db.insert(skills).values(row).returning();
  if (!inserted) throw new Error('skill insert returned nothing');
  return inserted;
}

export async function updateSkill(
  db: Executor,
  accountId: string,
  skillId: string,
  patch: Partial<Omit<typeof skills.$inferInsert, 'id' | 'accountId' | 'createdAt'>>,
): Promise<SkillRow | undefined> {
  const [row] = await db
    .update(skills)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(skills.accountId, accountId), eq(skills.id, skillId)))
    .returning();
  return row;
}

export async function deleteSkill(db: Executor, accountId: string, skillId: string): Promise<boolean> {
  const rows = await db
    .delete(skills)
    .where(and(eq(skills.accountId, accountId), eq(skills.id, skillId)))
    .returning({ id: skills.id });
  return rows.length > 0;
}

// ---- Links --------------------------------------------------------------------------------------------

export interface SkillLinkWithSkill {
  link: AgentSkillRow;
  skill: SkillRow;
}

export async function listLinks(db: Executor, accountId: string, agentId: string): Promise<SkillLinkWithSkill[]> {
  return db
    .select({ link: agentSkills, skill: skills })
    .from(agentSkills)
    .innerJoin(skills, eq(skills.id, agentSkills.skillId))
    .where(and(eq(agentSkills.accountId, accountId), eq(agentSkills.agentId, agentId)))
    .orderBy(asc(skills.name), asc(skills.id));
}

/** The agents one skill is linked to. */
export async function agentIdsOfSkill(db: Executor, accountId: string, skillId: string): Promise<string[]> {
  const rows = await db
    .select({ agentId: agentSkills.agentId })
    .from(agentSkills)
    .where(and(eq(agentSkills.accountId, accountId), eq(agentSkills.skillId, skillId)));
  return rows.map((r) => r.agentId);
}

/** Inserts the link; undefined when it exists already. */
export async function insertLink(
  db: Executor,
  row: typeof agentSkills.$inferInsert,
): Promise<AgentSkillRow | undefined> {
  const [inserted] = await db.insert(agentSkills).values(row).onConflictDoNothing().returning();
  return inserted;
}

export async function deleteLink(db: Executor, accountId: string, agentId: string, skillId: string): Promise<boolean> {
  const rows = await db
    .delete(agentSkills)
    .where(
      and(eq(agentSkills.accountId, accountId), eq(agentSkills.agentId, agentId), eq(agentSkills.skillId, skillId)),
    )
    .returning({ skillId: agentSkills.skillId });
  return rows.length > 0;
}
