import { and, desc, eq, gt, inArray, lt, or, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { rowsOf } from '../../db/rows.ts';
import { type McpTaskRow, type McpTaskStatus, mcpTasks } from '../../db/schema/index.ts';

const LIVE: McpTaskStatus[] = ['working', 'input_required'];

export async function insertTask(db: Executor, row: typeof mcpTasks.$inferInsert): Promise<McpTaskRow> {
  const [created] = await db.insert(mcpTasks).values(row).returning();
  if (!created) throw new Error('mcp_tasks insert returned no row');
  return created;
}

/** The account's task, unless it expired (a row past its ttl is gone for callers before the job deletes it). */
export async function findTask(
  db: Executor,
  accountId: string,
  id: string,
  now: Date,
): Promise<McpTaskRow | undefined> {
  const [row] = await db
    .select()
    .from(mcpTasks)
    .where(and(eq(mcpTasks.id, id), eq(mcpTasks.accountId, accountId), gt(mcpTasks.expiresAt, now)));
  return row;
}

/** The account's unexpired tasks, newest first, from after `after` (the last row of the previous page). */
export function listTasks(
  db: Executor,
  accountId: string,
  now: Date,
  limit: number,
  after?: { createdAt: Date; id: string },
): Promise<McpTaskRow[]> {
  return db
    .select()
    .from(mcpTasks)
    .where(
      and(
        eq(mcpTasks.accountId, accountId),
        gt(mcpTasks.expiresAt, now),
        after
          ? or(
              lt(mcpTasks.createdAt, after.createdAt),
              and(eq(mcpTasks.createdAt, after.createdAt), lt(mcpTasks.id, after.id)),
            )
          : undefined,
      ),
    )
    .orderBy(desc(mcpTasks.createdAt), desc(mcpTasks.id))
    .limit(limit);
}

/**
 * Moves a task that is still running to `status` (a terminal status is final: the spec's lifecycle), with its
 * result if it has one. False when it had ended already (or is not the account's).
 */
export async function settleTask(
  db: Executor,
  accountId: string,
  id: string,
  change: { status: McpTaskStatus; statusMessage: string | null; result?: Record<string, unknown> },
): Promise<boolean> {
  const rows = await db
    .update(mcpTasks)
    .set({ ...change, updatedAt: new Date() })
    .where(and(eq(mcpTasks.id, id), eq(mcpTasks.accountId, accountId), inArray(mcpTasks.status, LIVE)))
    .returning({ id: mcpTasks.id });
  return rows.length > 0;
}

/** A step of a running task: its status message, and a message queued for `tasks/result` when there is one. */
export async function recordStep(
  db: Executor,
  id: string,
  statusMessage: string,
  message: Record<string, unknown> | undefined,
): Promise<void> {
  await db
    .update(mcpTasks)
    .set({
      statusMessage,
      updatedAt: new Date(),
      ...(message ? { messages: sql`${mcpTasks.messages} || ${JSON.stringify([message])}::jsonb` } : {}),
    })
    .where(and(eq(mcpTasks.id, id), inArray(mcpTasks.status, LIVE)));
}

export async function taskStatus(db: Executor, id: string): Promise<McpTaskStatus | undefined> {
  const [row] = await db.select({ status: mcpTasks.status }).from(mcpTasks).where(eq(mcpTasks.id, id));
  return row?.status;
}

/** Takes the oldest queued message of the account's task (all of them with `all`), atomically. */
export async function takeMessages(
  db: Executor,
  accountId: string,
  id: string,
  all: boolean,
): Promise<Record<string, unknown>[]> {
  const rest = all ? sql`'[]'::jsonb` : sql`old.messages - 0`;
  const taken = all ? sql`old.messages` : sql`jsonb_build_array(old.messages -> 0)`;
  const result = await db.execute(sql`
    with old as (
      select id, messages from mcp_tasks
      where id = ${id} and account_id = ${accountId} and jsonb_array_length(messages) > 0
      for update
    )
    update mcp_tasks set messages = ${rest} from old where mcp_tasks.id = old.id
    returning ${taken} as taken`);
  // Both drivers answer a raw `execute` as `{rows}`, with jsonb parsed.
  const [row] = rowsOf<{ taken: Record<string, unknown>[] }>(result);
  return row?.taken ?? [];
}

/**
 * Upkeep: deletes the tasks past their ttl, and fails the ones still running long after any run could
 * (their instance stopped mid-run). Returns how many of each.
 */
export async function sweepTasks(
  db: Executor,
  now: Date,
  staleBefore: Date,
): Promise<{ deleted: number; failed: number }> {
  const deleted = await db.delete(mcpTasks).where(lt(mcpTasks.expiresAt, now)).returning({ id: mcpTasks.id });
  const failed = await db
    .update(mcpTasks)
    .set({
      status: 'failed',
      statusMessage: 'The run was interrupted: the server running it stopped. Call the tool again.',
      updatedAt: now,
    })
    .where(and(inArray(mcpTasks.status, LIVE), lt(mcpTasks.updatedAt, staleBefore)))
    .returning({ id: mcpTasks.id });
  return { deleted: deleted.length, failed: failed.length };
}
