import { delegationOf } from '../../access/delegation.ts';
import { requireScope, type ServiceContext } from '../../context.ts';
import type { ScheduledTaskRow, ScheduledTaskRunRow } from '../../db/schema/index.ts';
import { ConflictError, NotFoundError, ValidationError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import {
  AGENT_DELETED_REASON,
  type AgentDeletionHook,
  DEFAULT_AGENT_ID,
  existingAgentId,
  ownedAgent,
} from '../agents/index.ts';
import { checkCron, checkTimezone, describeCron, nextRun, nextRuns } from './cron.ts';
import { enqueueTaskJob } from './jobs.ts';
import * as repo from './repo.ts';
import type { CreateTask, Task, TaskRun, UpdateTask } from './schema.ts';

/**
 * Scheduled tasks (SPEC §4): an agent is sent a prompt on a cron schedule. Every route needs `agents-all`
 * (tasks act with the account's credits and connections, so reading them is management too). A task outlives
 * its agent: deleting the agent disables its tasks with a reason; they can still be read and deleted, but not
 * enabled or run. A task's runs act with the whole restriction set of whoever last created or changed it
 * (scopes, provider permissions, knowledge-base limit: auth/delegation.ts), never with more.
 */

/** The most tasks an account may hold (409 past it): each one is a row the dispatcher reads every minute. */
export const MAX_TASKS_PER_ACCOUNT = 500;
/** The runs the page and the API preview show. */
export const PREVIEW_RUNS = 5;

export function toTaskRun(row: ScheduledTaskRunRow): TaskRun {
  return {
    id: row.id,
    taskId: row.taskId,
    trigger: row.trigger,
    status: row.status,
    scheduledFor: row.scheduledFor.toISOString(),
    startedAt: row.startedAt?.toISOString() ?? null,
    finishedAt: row.finishedAt?.toISOString() ?? null,
    attempts: row.attempts,
    creditsConsumed: row.creditsConsumed,
    conversationId: row.conversationId,
    output: row.output,
    error: row.error,
  };
}

export function toTask(row: ScheduledTaskRow, lastRun: ScheduledTaskRunRow | undefined): Task {
  return {
    id: row.id,
    agentId: row.agentId,
    name: row.name,
    prompt: row.prompt,
    cronExpression: row.cronExpression,
    timezone: row.timezone,
    enabled: row.enabled,
    schedule: describeCron(row.cronExpression),
    nextRunAt: row.nextRunAt?.toISOString() ?? null,
    lastRun: lastRun ? toTaskRun(lastRun) : null,
    disabledReason: row.disabledReason,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

async function withLastRuns(ctx: ServiceContext, rows: ScheduledTaskRow[]): Promise<Task[]> {
  const last = await repo.lastRuns(
    ctx.db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => toTask(r, last.get(r.id)));
}

/**
 * The agent id tasks are addressed under: `default` resolves to the default agent; another id is taken as it
 * is when the agent exists, or when only its tasks are left (a deleted agent's disabled tasks); else 404.
 */
async function agentKey(ctx: ServiceContext, agentId: string, mustExist = false): Promise<string> {
  requireScope(ctx, 'agents-all');
  if (agentId === DEFAULT_AGENT_ID || mustExist) return (await ownedAgent(ctx, agentId, ['agents-all'])).id;
  if (await existingAgentId(ctx, agentId)) return agentId;
  if ((await repo.countTasks(ctx.db, ctx.accountId, agentId)) === 0)
    throw new NotFoundError(`Agent ${agentId} not found`);
  return agentId;
}

async function ownedTask(ctx: ServiceContext, agentId: string, taskId: string): Promise<ScheduledTaskRow> {
  const key = await agentKey(ctx, agentId);
  const row = await repo.findTask(ctx.db, ctx.accountId, key, taskId);
  if (!row) throw new NotFoundError(`Scheduled task ${taskId} not found`);
  return row;
}

/** The next occurrence after `now`; 422 when the expression names no date that exists (`0 9 31 2 *`). */
function firstRun(cron: string, timezone: string, now: Date): Date {
  const next = nextRun(cron, timezone, now);
  if (!next) {
    const message = `cronExpression "${cron}" never matches a date`;
    throw new ValidationError(message, [{ field: 'body.cronExpression', message }]);
  }
  return next;
}

export interface SchedulePreview {
  cronExpression: string;
  timezone: string;
  /** The schedule in words. */
  description: string;
  nextRuns: Date[];
}

/** What a schedule means and its next five occurrences; 422 for a bad expression or zone, as on create. */
export function previewSchedule(cronExpression: string, timezone: string, now = new Date()): SchedulePreview {
  const cron = checkCron(cronExpression);
  const zone = checkTimezone(timezone);
  firstRun(cron, zone, now);
  return {
    cronExpression: cron,
    timezone: zone,
    description: describeCron(cron),
    nextRuns: nextRuns(cron, zone, PREVIEW_RUNS, now),
  };
}

export async function createTask(
  ctx: ServiceContext,
  agentId: string,
  input: CreateTask,
  now = new Date(),
): Promise<Task> {
  const agent = await agentKey(ctx, agentId, true);
  const cron = checkCron(input.cronExpression);
  const timezone = checkTimezone(input.timezone);
  const next = firstRun(cron, timezone, now);
  if ((await repo.countTasks(ctx.db, ctx.accountId)) >= MAX_TASKS_PER_ACCOUNT) {
    throw new ConflictError(`An account may have at most ${MAX_TASKS_PER_ACCOUNT} scheduled tasks`);
  }
  const row = await repo.insertTask(ctx.db, {
    id: newId('scheduledTask'),
    accountId: ctx.accountId,
    agentId: agent,
    name: input.name,
    prompt: input.prompt,
    cronExpression: cron,
    timezone,
    enabled: input.enabled,
    nextRunAt: input.enabled ? next : null,
    runAs: delegationOf(ctx.actor),
  });
  return toTask(row, undefined);
}

export async function listTasks(
  ctx: ServiceContext,
  agentId: string,
  p: { page: number; limit: number; sortBy: repo.TaskSort; sortOrder: 'asc' | 'desc' },
): Promise<Page<Task>> {
  const key = await agentKey(ctx, agentId);
  const { rows, total } = await repo.listTasks(ctx.db, ctx.accountId, { ...p, agentId: key });
  return toPage(await withLastRuns(ctx, rows), total, p);
}

/** Every task of the account, whatever its agent (the account page). */
export async function listAccountTasks(
  ctx: ServiceContext,
  p: { page: number; limit: number; sortBy: repo.TaskSort; sortOrder: 'asc' | 'desc' },
): Promise<Page<Task>> {
  requireScope(ctx, 'agents-all');
  const { rows, total } = await repo.listTasks(ctx.db, ctx.accountId, p);
  return toPage(await withLastRuns(ctx, rows), total, p);
}

/** A task of the account by its id alone, whatever its agent (the account page's URLs carry no agent). */
export async function getAccountTask(ctx: ServiceContext, taskId: string): Promise<Task> {
  requireScope(ctx, 'agents-all');
  const row = await repo.findAccountTask(ctx.db, ctx.accountId, taskId);
  if (!row) throw new NotFoundError(`Scheduled task ${taskId} not found`);
  return (await withLastRuns(ctx, [row]))[0] as Task;
}

export async function getTask(ctx: ServiceContext, agentId: string, taskId: string): Promise<Task> {
  const row = await ownedTask(ctx, agentId, taskId);
  return (await withLastRuns(ctx, [row]))[0] as Task;
}

/**
 * Changes the fields given. The next run is computed again when the schedule changes or the task is enabled;
 * a disabled task has none. A task whose agent was deleted cannot be enabled (409).
 */
export async function updateTask(
  ctx: ServiceContext,
  agentId: string,
  taskId: string,
  input: UpdateTask,
  now = new Date(),
): Promise<Task> {
  const current = await ownedTask(ctx, agentId, taskId);
  const cron = input.cronExpression !== undefined ? checkCron(input.cronExpression) : current.cronExpression;
  const timezone = input.timezone !== undefined ? checkTimezone(input.timezone) : current.timezone;
  const enabled = input.enabled ?? current.enabled;
  if (enabled && !(await existingAgentId(ctx, current.agentId))) {
    throw new ConflictError(`Agent ${current.agentId} was deleted: its tasks cannot be enabled`);
  }
  const rescheduled = cron !== current.cronExpression || timezone !== current.timezone || enabled !== current.enabled;
  const next = firstRun(cron, timezone, now);
  const row = await repo.updateTask(ctx.db, ctx.accountId, current.id, {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.prompt !== undefined ? { prompt: input.prompt } : {}),
    cronExpression: cron,
    timezone,
    enabled,
    ...(rescheduled ? { nextRunAt: enabled ? next : null } : {}),
    ...(enabled ? { disabledReason: null } : {}),
    runAs: delegationOf(ctx.actor),
  });
  if (!row) throw new NotFoundError(`Scheduled task ${taskId} not found`);
  return (await withLastRuns(ctx, [row]))[0] as Task;
}

export async function deleteTask(ctx: ServiceContext, agentId: string, taskId: string): Promise<void> {
  const current = await ownedTask(ctx, agentId, taskId);
  if (!(await repo.deleteTask(ctx.db, ctx.accountId, current.id))) {
    throw new NotFoundError(`Scheduled task ${taskId} not found`);
  }
}

export async function listRuns(
  ctx: ServiceContext,
  agentId: string,
  taskId: string,
  p: { page: number; limit: number },
): Promise<Page<TaskRun>> {
  const task = await ownedTask(ctx, agentId, taskId);
  const { rows, total } = await repo.listRuns(ctx.db, task.id, p);
  return toPage(rows.map(toTaskRun), total, p);
}

/**
 * Runs the task now, outside its schedule: a `manual` run is recorded and queued with its job in one
 * transaction (the caller gets it `queued`, 202). A disabled task, or one whose agent was deleted, is not run
 * (409): disabled tasks never run.
 */
export async function runTaskNow(
  ctx: ServiceContext,
  agentId: string,
  taskId: string,
  now = new Date(),
): Promise<TaskRun> {
  const task = await ownedTask(ctx, agentId, taskId);
  if (!task.enabled) {
    throw new ConflictError(
      task.disabledReason
        ? `The task is disabled: ${task.disabledReason}`
        : 'The task is disabled: enable it to run it',
    );
  }
  return ctx.db.transaction(async (tx) => {
    const run = await repo.insertRun(tx, {
      id: newId('scheduledTaskRun'),
      taskId: task.id,
      accountId: ctx.accountId,
      trigger: 'manual',
      scheduledFor: now,
    });
    if (!run) throw new ConflictError('The task was just run: try again in a moment');
    await enqueueTaskJob(
      tx,
      'tasks.run',
      { runId: run.id },
      { accountId: ctx.accountId, dedupeKey: `tasks.run:${run.id}` },
    );
    return toTaskRun(run);
  });
}

/** Deleting an agent disables its tasks, in the same transaction: they stay, with `AGENT_DELETED_REASON`. */
export const taskAgentDeletion: AgentDeletionHook = {
  within: async (tx, ctx, agentId) => {
    await repo.disableTasksOfAgent(tx, ctx.accountId, agentId, AGENT_DELETED_REASON);
  },
};
