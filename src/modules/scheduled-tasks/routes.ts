import { z } from 'zod';
import type { App } from '../../http/types.ts';
import { paginated } from '../../lib/pagination.ts';
import { AgentParams } from '../agents/index.ts';
import { CreateTask, RunListQuery, Task, TaskListQuery, TaskParams, TaskRun, UpdateTask } from './schema.ts';
import * as service from './service.ts';

/** SPEC §4 "Scheduled tasks", with the runs (`/runs`, `/run`) as extensions. Every route needs `agents-all`. */
export async function scheduledTaskRoutes(app: App): Promise<void> {
  const tags = ['Scheduled tasks'];
  const config = { scopes: ['agents-all' as const] };
  const base = '/agents/:agentId/scheduled-tasks';

  app.post(
    base,
    {
      schema: {
        tags,
        summary: 'Create a scheduled task',
        description:
          '`cronExpression` is the standard 5-field form read in `timezone` (an IANA name, default UTC); a bad field or zone is a 422 naming it. `enabled` defaults to true.',
        params: AgentParams,
        body: CreateTask,
        response: { 201: Task },
      },
      config,
    },
    async (req, reply) => reply.code(201).send(await service.createTask(req.ctx, req.params.agentId, req.body)),
  );
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List an agent's scheduled tasks",
        params: AgentParams,
        querystring: TaskListQuery,
        response: { 200: paginated(Task) },
      },
      config,
    },
    async (req) => service.listTasks(req.ctx, req.params.agentId, req.query),
  );
  app.get(
    `${base}/:taskId`,
    { schema: { tags, summary: 'Get a scheduled task', params: TaskParams, response: { 200: Task } }, config },
    async (req) => service.getTask(req.ctx, req.params.agentId, req.params.taskId),
  );
  app.put(
    `${base}/:taskId`,
    {
      schema: {
        tags,
        summary: 'Update a scheduled task',
        description:
          'Changes only the fields given (`{"enabled": false}` pauses it); the next run is computed again when the schedule changes or the task is enabled.',
        params: TaskParams,
        body: UpdateTask,
        response: { 200: Task },
      },
      config,
    },
    async (req) => service.updateTask(req.ctx, req.params.agentId, req.params.taskId, req.body),
  );
  app.delete(
    `${base}/:taskId`,
    {
      schema: {
        tags,
        summary: 'Delete a scheduled task and its runs',
        params: TaskParams,
        response: { 204: z.undefined() },
      },
      config,
    },
    async (req, reply) => {
      await service.deleteTask(req.ctx, req.params.agentId, req.params.taskId);
      return reply.code(204).send();
    },
  );
  app.get(
    `${base}/:taskId/runs`,
    {
      schema: {
        tags,
        summary: "List a task's runs, newest first (extension)",
        params: TaskParams,
        querystring: RunListQuery,
        response: { 200: paginated(TaskRun) },
      },
      config,
    },
    async (req) => service.listRuns(req.ctx, req.params.agentId, req.params.taskId, req.query),
  );
  app.post(
    `${base}/:taskId/run`,
    {
      schema: {
        tags,
        summary: 'Run a task now (extension)',
        description:
          'Queues a `manual` run and answers it `queued` (202); follow it with GET .../runs. A disabled task is not run (409).',
        params: TaskParams,
        response: { 202: TaskRun },
      },
      config,
    },
    async (req, reply) =>
      reply.code(202).send(await service.runTaskNow(req.ctx, req.params.agentId, req.params.taskId)),
  );
}
