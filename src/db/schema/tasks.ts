import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { TASK_RUN_STATUSES, type TaskRunStatus } from '../values.ts';
import { accounts } from './accounts.ts';
import { type StoredDelegation, ts } from './columns.ts';

export { TASK_RUN_STATUSES, type TaskRunStatus };

/**
 * An agent's scheduled task (SPEC §2). `agent_id` has no foreign key on purpose: when the agent is deleted the
 * task stays, disabled with `disabled_reason`, so its owner sees why it stopped. `next_run_at` is the next
 * occurrence (null while disabled); the dispatcher claims due rows with SKIP LOCKED.
 */
export const scheduledTasks = pgTable(
  'scheduled_tasks',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    agentId: text('agent_id').notNull(),
    name: text('name').notNull(),
    prompt: text('prompt').notNull(),
    cronExpression: text('cron_expression').notNull(),
    timezone: text('timezone').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    nextRunAt: ts('next_run_at'),
    disabledReason: text('disabled_reason'),
    /**
     * The restriction set of whoever last created or changed the task (auth/delegation.ts): its runs act with
     * it, so a token limited to some knowledge bases, or to reading a provider, stays limited in what it schedules.
     */
    runAs: jsonb('run_as').$type<StoredDelegation>().notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('scheduled_tasks_account_agent_idx').on(t.accountId, t.agentId, t.createdAt),
    index('scheduled_tasks_due_idx').on(t.nextRunAt).where(sql`${t.enabled}`),
  ],
);

export type TaskRunTrigger = 'schedule' | 'manual';

/**
 * One occurrence of a task: unique per (task, scheduled_for), so an occurrence exists once however many
 * instances dispatch it. A manual run is keyed by the moment it was asked for.
 */
export const scheduledTaskRuns = pgTable(
  'scheduled_task_runs',
  {
    id: text('id').primaryKey(),
    taskId: text('task_id')
      .notNull()
      .references(() => scheduledTasks.id, { onDelete: 'cascade' }),
    accountId: text('account_id').notNull(),
    trigger: text('trigger').$type<TaskRunTrigger>().notNull(),
    scheduledFor: ts('scheduled_for').notNull(),
    status: text('status').$type<TaskRunStatus>().notNull().default('queued'),
    attempts: integer('attempts').notNull().default(0),
    creditsConsumed: integer('credits_consumed').notNull().default(0),
    conversationId: text('conversation_id'),
    output: text('output'),
    error: text('error'),
    startedAt: ts('started_at'),
    finishedAt: ts('finished_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('scheduled_task_runs_occurrence_idx').on(t.taskId, t.scheduledFor),
    index('scheduled_task_runs_task_created_idx').on(t.taskId, t.createdAt),
  ],
);

export type ScheduledTaskRow = typeof scheduledTasks.$inferSelect;
export type NewScheduledTask = typeof scheduledTasks.$inferInsert;
export type ScheduledTaskRunRow = typeof scheduledTaskRuns.$inferSelect;
