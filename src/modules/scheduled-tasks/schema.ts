import { z } from 'zod';
import { TASK_RUN_STATUSES } from '../../db/values.ts';
import { listQuery, pageQuery, Timestamp } from '../../lib/pagination.ts';
import { AgentParams } from '../agents/index.ts';

const fields = {
  name: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .meta({ examples: ['Monday digest'] }),
  prompt: z
    .string()
    .trim()
    .min(1)
    .max(20_000)
    .describe('what the agent is asked at each run')
    .meta({ examples: ['Summarize my unread email from the last week.'] }),
  cronExpression: z
    .string()
    .max(200)
    .describe('5 fields: minute hour day-of-month month day-of-week')
    .meta({ examples: ['0 9 * * 1'] }),
  timezone: z
    .string()
    .max(100)
    .describe('IANA time-zone name the cron expression is read in')
    .meta({ examples: ['Europe/Paris'] }),
  enabled: z.boolean(),
};

export const CreateTask = z
  .object({
    name: fields.name,
    prompt: fields.prompt,
    cronExpression: fields.cronExpression,
    timezone: fields.timezone.default('UTC'),
    enabled: fields.enabled.default(true),
  })
  .strict();
export type CreateTask = z.infer<typeof CreateTask>;

export const UpdateTask = z
  .object({
    name: fields.name.optional(),
    prompt: fields.prompt.optional(),
    cronExpression: fields.cronExpression.optional(),
    timezone: fields.timezone.optional(),
    enabled: fields.enabled.optional(),
  })
  .strict();
export type UpdateTask = z.infer<typeof UpdateTask>;

export const TaskRun = z
  .object({
    id: z.string().meta({ examples: ['trun_u1Hq9xTnq1y8Wv3mDgZA0b'] }),
    taskId: z.string(),
    trigger: z.enum(['schedule', 'manual']),
    status: z.enum(TASK_RUN_STATUSES),
    scheduledFor: Timestamp.describe('the occurrence this run is for (a manual run: when it was asked for)'),
    startedAt: Timestamp.nullable(),
    finishedAt: Timestamp.nullable(),
    attempts: z.number().int(),
    creditsConsumed: z.number().int(),
    conversationId: z.string().nullable().describe('the conversation holding the prompt and the answer'),
    output: z.string().nullable().describe("the agent's answer (succeeded runs)"),
    error: z.string().nullable(),
  })
  .meta({ id: 'ScheduledTaskRun' });
export type TaskRun = z.infer<typeof TaskRun>;

export const Task = z
  .object({
    id: z.string().meta({ examples: ['task_5kY0bq9xTnq1y8Wv3mDgZA'] }),
    agentId: z.string(),
    name: z.string(),
    prompt: z.string(),
    cronExpression: z.string(),
    timezone: z.string(),
    enabled: z.boolean(),
    schedule: z.string().describe('the cron expression in words'),
    nextRunAt: Timestamp.nullable().describe('null while disabled'),
    lastRun: TaskRun.nullable(),
    disabledReason: z.string().nullable().describe('why the service disabled the task (its agent was deleted)'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'ScheduledTask' });
export type Task = z.infer<typeof Task>;

export const TaskParams = AgentParams.extend({ taskId: z.string().min(1).max(100) });
export const TaskListQuery = listQuery(['createdAt', 'updatedAt', 'name']);
export const RunListQuery = pageQuery();
