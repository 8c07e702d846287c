import { and, asc, count, desc, eq, inArray, isNotNull, lte, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import {
  type NewScheduledTask,
  type ScheduledTaskRow,
  type ScheduledTaskRunRow,
  scheduledTaskRuns,
  scheduledTasks,
  type TaskRunStatus,
} from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';

/** All SQL of scheduled tasks and their runs; every read and write of a task is scoped by account. */

const SORTS = {
  createdAt: scheduledTasks.createdAt,
  updatedAt: scheduledTasks.updatedAt,
  name: scheduledTasks.name,
} as const;
export type TaskSort = keyof typeof SORTS;

export async function listTasks(
  db: Executor,
  accountId: string,
  p: { agentId?: string; page: number; limit: number; sortBy: TaskSort; sortOrder: 'asc' | 'desc' },
): Promise<{ rows: ScheduledTaskRow[]; total: number }> {
  const where = and(
    eq(scheduledTasks.accountId, accountId),
    p.agentId === undefined ? undefined : eq(scheduledTasks.agentId, p.agentId),
  );
  const order = p.sortOrder === 'asc' ? asc(SORTS[p.sortBy]) : desc(SORTS[p.sortBy]);
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(scheduledTasks)
      .where(where)
      .orderBy(order, asc(scheduledTasks.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(scheduledTasks).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

/** The account's tasks, or those of one of its agents. */
export async function countTasks(db: Executor, accountId: string, agentId?: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(scheduledTasks)
    .where(
      and(
        eq(scheduledTasks.accountId, accountId),
        agentId === undefined ? undefined : eq(scheduledTasks.agentId, agentId),
      ),
    );
  return row?.n ?? 0;
}

export async function findTask(
  db: Executor,
  accountId: string,
  agentId: string,
  taskId: string,
): Promise<ScheduledTaskRow | undefined> {
  const [row] = await db
    .select()
    .from(scheduledTasks)
    .where(
      and(eq(scheduledTasks.accountId, accountId), eq(scheduledTasks.agentId, agentId), eq(scheduledTasks.id, taskId)),
    );
  return row;
}

export async function findAccountTask(
  db: Executor,
  accountId: string,
  taskId: string,
): Promise<ScheduledTaskRow | undefined> {
  const [row] = await db
    .select()
    .from(scheduledTasks)
    .where(and(eq(scheduledTasks.accountId, accountId), eq(scheduledTasks.id, taskId)));
  return row;
}

/** A task by id alone (the runner's view: the run names it, no account to scope by). */
export async function findTaskById(db: Executor, taskId: string): Promise<ScheduledTaskRow | undefined> {
  const [row] = await db.select().from(scheduledTasks).where(eq(scheduledTasks.id, taskId));
  return row;
}

export async function insertTask(db: Executor, row: NewScheduledTask): Promise<ScheduledTaskRow> {
  const [inserted] = await db.insert(scheduledTasks).values(row).returning();
  if (!inserted) throw new Error('scheduled task insert returned nothing');
  return inserted;
}

export async function updateTask(
  db: Executor,
  accountId: string,
  taskId: string,
  patch: Partial<Omit<NewScheduledTask, 'id' | 'accountId' | 'agentId' | 'createdAt'>>,
): Promise<ScheduledTaskRow | undefined> {
  const [row] = await db
    .update(scheduledTasks)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(scheduledTasks.accountId, accountId), eq(scheduledTasks.id, taskId)))
    .returning();
  return row;
}

export async function deleteTask(db: Executor, accountId: string, taskId: string): Promise<boolean> {
  const rows = await db
    .delete(scheduledTasks)
    .where(and(eq(scheduledTasks.accountId, accountId), eq(scheduledTasks.id, taskId)))
    .returning({ id: scheduledTasks.id });
  return rows.length > 0;
}

/** Disables every task of a deleted agent, saying why; they stay for their owner to read or delete. */
export async function disableTasksOfAgent(
  db: Executor,
  accountId: string,
  agentId: string,
  reason: string,
): Promise<number> {
  const rows = await db
    .update(scheduledTasks)
    .set({ enabled: false, nextRunAt: null, disabledReason: reason, updatedAt: new Date() })
    .where(and(eq(scheduledTasks.accountId, accountId), eq(scheduledTasks.agentId, agentId)))
    .returning({ id: scheduledTasks.id });
  return rows.length;
}

/**
 * Up to `limit` enabled tasks due at `now`, locked for the caller's transaction; rows another instance holds
 * are skipped (it dispatches them), so each occurrence is taken by one instance.
 */
export async function lockDueTasks(db: Executor, now: Date, limit: number): Promise<ScheduledTaskRow[]> {
  return db
    .select()
    .from(scheduledTasks)
    .where(
      and(eq(scheduledTasks.enabled, true), isNotNull(scheduledTasks.nextRunAt), lte(scheduledTasks.nextRunAt, now)),
    )
    .orderBy(asc(scheduledTasks.nextRunAt))
    .limit(limit)
    .for('update', { skipLocked: true });
}

export async function setNextRun(db: Executor, taskId: string, nextRunAt: Date | null): Promise<void> {
  await db.update(scheduledTasks).set({ nextRunAt }).where(eq(scheduledTasks.id, taskId));
}

/** Records an occurrence; undefined when it was recorded already (the unique occurrence key). */
export async function insertRun(
  db: Executor,
  row: typeof scheduledTaskRuns.$inferInsert,
): Promise<ScheduledTaskRunRow | undefined> {
  const [inserted] = await db.insert(scheduledTaskRuns).values(row).onConflictDoNothing().returning();
  return inserted;
}

export async function findRun(db: Executor, runId: string): Promise<ScheduledTaskRunRow | undefined> {
  const [row] = await db.select().from(scheduledTaskRuns).where(eq(scheduledTaskRuns.id, runId));
  return row;
}

/**
 * Moves a run from one of `from` to `patch.status`; undefined when it was in another status (someone else
 * moved it). The one way a run changes, so no two workers both finish it.
 */
export async function updateRun(
  db: Executor,
  runId: string,
  from: readonly TaskRunStatus[],
  patch: Partial<Omit<ScheduledTaskRunRow, 'id' | 'taskId' | 'accountId' | 'createdAt'>>,
): Promise<ScheduledTaskRunRow | undefined> {
  const [row] = await db
    .update(scheduledTaskRuns)
    .set(patch)
    .where(and(eq(scheduledTaskRuns.id, runId), inArray(scheduledTaskRuns.status, [...from])))
    .returning();
  return row;
}

/** Counts one more attempt and marks the run running; undefined when it is not queued or retrying. */
export async function startRun(db: Executor, runId: string, now: Date): Promise<ScheduledTaskRunRow | undefined> {
  const [row] = await db
    .update(scheduledTaskRuns)
    .set({
      status: 'running',
      attempts: sql`${scheduledTaskRuns.attempts} + 1`,
      startedAt: sql`coalesce(${scheduledTaskRuns.startedAt}, ${now})`,
    })
    .where(and(eq(scheduledTaskRuns.id, runId), inArray(scheduledTaskRuns.status, ['queued', 'retrying'])))
    .returning();
  return row;
}

export async function listRuns(
  db: Executor,
  taskId: string,
  p: { page: number; limit: number },
): Promise<{ rows: ScheduledTaskRunRow[]; total: number }> {
  const where = eq(scheduledTaskRuns.taskId, taskId);
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(scheduledTaskRuns)
      .where(where)
      .orderBy(desc(scheduledTaskRuns.createdAt), desc(scheduledTaskRuns.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(scheduledTaskRuns).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

/** The newest run of each task given. */
export async function lastRuns(db: Executor, taskIds: string[]): Promise<Map<string, ScheduledTaskRunRow>> {
  if (taskIds.length === 0) return new Map();
  const rows = await db
    .selectDistinctOn([scheduledTaskRuns.taskId])
    .from(scheduledTaskRuns)
    .where(inArray(scheduledTaskRuns.taskId, taskIds))
    .orderBy(scheduledTaskRuns.taskId, desc(scheduledTaskRuns.createdAt), desc(scheduledTaskRuns.id));
  return new Map(rows.map((r) => [r.taskId, r]));
}
