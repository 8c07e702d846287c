import { z } from 'zod';
import type { AgentTool, AgentToolGroup } from '../../agent/tool-group.ts';
import type { ServiceContext } from '../../context.ts';
import type { AgentRow } from '../../db/schema/index.ts';
import { ValidationError } from '../../lib/errors.ts';
import { CreateTask, type Task, UpdateTask } from './schema.ts';
import * as service from './service.ts';

/**
 * The `account-tasks` built-in group: the agent lists, creates, changes and deletes its owner's tasks of this
 * agent from chat ("remind me every Monday at 9"), through the same validation and scope checks as the API
 * (the chat's caller needs `agents-all`). Offered only in the owner's own chats, never to a channel's end users.
 */

const TaskId = z.object({ taskId: z.string().min(1).max(100) });
const UpdateArgs = UpdateTask.extend(TaskId.shape).strict();

/** The arguments checked against `schema`; a 422 naming each bad field (the model reads it and tries again). */
function parse<S extends z.ZodType>(schema: S, args: Record<string, unknown>): z.output<S> {
  const parsed = schema.safeParse(args);
  if (parsed.success) return parsed.data;
  const details = parsed.error.issues.map((i) => ({ field: i.path.join('.') || '(arguments)', message: i.message }));
  throw new ValidationError(`Invalid arguments: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`, details);
}

const jsonSchema = (schema: z.ZodType) => {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
  return rest;
};

/** What the model is shown of a task: no timestamps it has no use for. */
const brief = (t: Task) => ({
  id: t.id,
  name: t.name,
  prompt: t.prompt,
  cronExpression: t.cronExpression,
  timezone: t.timezone,
  schedule: t.schedule,
  enabled: t.enabled,
  nextRunAt: t.nextRunAt,
  lastRun: t.lastRun ? { status: t.lastRun.status, finishedAt: t.lastRun.finishedAt, error: t.lastRun.error } : null,
});

const CRON_HELP =
  'cronExpression has 5 fields: minute hour day-of-month month day-of-week (0 or 7 = Sunday), e.g. "0 9 * * 1" for every Monday at 09:00; timezone is an IANA name such as Europe/Paris (default UTC): use the user\'s zone when you know it.';

export function taskTools(ctx: ServiceContext, agent: AgentRow): AgentTool[] {
  const source = 'account-tasks';
  return [
    {
      name: 'tasks-list',
      description: 'List the scheduled tasks you run for the user (each sends you its prompt on its schedule).',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
      mode: 'read',
      source,
      async run() {
        const page = await service.listTasks(ctx, agent.id, {
          page: 1,
          limit: 100,
          sortBy: 'createdAt',
          sortOrder: 'asc',
        });
        return page.data.map(brief);
      },
    },
    {
      name: 'tasks-create',
      description: `Schedule a task: at each time of the schedule you are sent its prompt and act on it (a reminder, a digest, a check). ${CRON_HELP}`,
      parameters: jsonSchema(CreateTask),
      mode: 'write',
      source,
      async run(args) {
        return brief(await service.createTask(ctx, agent.id, parse(CreateTask, args)));
      },
    },
    {
      name: 'tasks-update',
      description: `Change a scheduled task (by the id tasks-list gave): only the fields given change; enabled false pauses it. ${CRON_HELP}`,
      parameters: jsonSchema(UpdateArgs),
      mode: 'write',
      source,
      async run(args) {
        const { taskId, ...patch } = parse(UpdateArgs, args);
        return brief(await service.updateTask(ctx, agent.id, taskId, patch));
      },
    },
    {
      name: 'tasks-delete',
      description: 'Delete a scheduled task (by the id tasks-list gave) when the user asks you to.',
      parameters: jsonSchema(TaskId.strict()),
      mode: 'write',
      source,
      async run(args) {
        const { taskId } = parse(TaskId, args);
        await service.deleteTask(ctx, agent.id, taskId);
        return { deleted: taskId };
      },
    },
  ];
}

/** The `account-tasks` group: the owner's tasks are the owner's to manage, so a channel's end users never get it. */
export const taskToolGroup: AgentToolGroup = {
  name: 'account-tasks',
  ownerOnly: true,
  tools: (ctx, run) => taskTools(ctx, run.agent),
};
