import type { FastifyReply, FastifyRequest } from 'fastify';
import { serviceContextOf } from '../auth/guard.ts';
import type { OAuthServer } from '../auth/oauth/server.ts';
import type { App } from '../http/types.ts';
import { AppError, NotFoundError } from '../lib/errors.ts';
import { listAgents } from '../modules/agents/service.ts';
import { CreateTask, UpdateTask } from '../modules/scheduled-tasks/schema.ts';
import {
  createTask,
  deleteTask,
  getAccountTask,
  listAccountTasks,
  listRuns,
  previewSchedule,
  runTaskNow,
  updateTask,
} from '../modules/scheduled-tasks/service.ts';
import { TIMEZONE_SCRIPT } from './assets.ts';
import { type Form, formIssues, one, pageHelpers, type SignedIn, send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { type PreviewView, TASKS_PATH, type TaskDraft, taskPath, taskRunsPage, tasksPage } from './task-pages.ts';

const TASK_ID = /^task_[A-Za-z0-9_-]{1,96}$/;
const NOTICES = {
  created: 'Task created.',
  saved: 'Task saved.',
  paused: 'Task paused: it will not run until you enable it.',
  enabled: 'Task enabled.',
  queued: 'Run queued: it starts within moments; its result appears in the run history.',
  deleted: 'Task deleted.',
} as const;
/** The zones the form suggests (any IANA name is accepted). */
const ZONES: string[] = (() => {
  try {
    return Intl.supportedValuesOf('timeZone');
  } catch {
    return ['UTC'];
  }
})();
const RUNS_SHOWN = 50;

/** The scheduled tasks in the account pages (`/account/tasks`), over the scheduled-tasks services. */
export async function taskPageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const { csrf, csrfOk, signedIn, csrfFailed } = pageHelpers(app, oauth);
  const page = { schema: { hide: true }, config: { auth: 'public' as const } };

  async function renderList(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    opts: { error?: string; notice?: string; draft?: TaskDraft; preview?: PreviewView } = {},
    status = 200,
  ) {
    const ctx = serviceContextOf(req, current.actor);
    const [tasks, agents] = await Promise.all([
      listAccountTasks(ctx, { page: 1, limit: 500, sortBy: 'createdAt', sortOrder: 'asc' }),
      listAgents(ctx, { page: 1, limit: 100, sortBy: 'createdAt', sortOrder: 'asc' }),
    ]);
    return send(
      reply,
      tasksPage({
        user: current.user,
        csrf: csrf(req, reply),
        tasks: tasks.data,
        agents: agents.data,
        zones: ZONES,
        script: TIMEZONE_SCRIPT.path,
        ...opts,
      }),
      status,
      { scripts: true },
    );
  }

  /** The task of the URL, or the list with the refusal (404, or 409 for a task that cannot do it). */
  async function withTask(
    req: FastifyRequest,
    reply: FastifyReply,
    then: (current: SignedIn, taskId: string) => Promise<FastifyReply>,
  ): Promise<FastifyReply> {
    const current = await signedIn(req, reply, TASKS_PATH);
    if (!current) return reply;
    const { taskId } = req.params as { taskId: string };
    try {
      if (!TASK_ID.test(taskId)) throw new NotFoundError(`Scheduled task ${taskId.slice(0, 40)} not found`);
      return await then(current, taskId);
    } catch (err) {
      if (!(err instanceof AppError) || err.statusCode >= 500) throw err;
      return renderList(req, reply, current, { error: err.message }, err.statusCode);
    }
  }

  const draftOf = (form: Form): TaskDraft => ({
    agentId: one(form, 'agentId'),
    name: one(form, 'name'),
    prompt: one(form, 'prompt'),
    cronExpression: one(form, 'cronExpression'),
    timezone: one(form, 'timezone') || 'UTC',
  });

  app.get(TASKS_PATH, page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    return renderList(req, reply, current, takeFlash(req, reply));
  });

  /** The form again with the schedule in words and its next five runs (nothing is saved). */
  app.post(`${TASKS_PATH}/preview`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await signedIn(req, reply, TASKS_PATH);
    if (!current) return reply;
    const draft = draftOf(form);
    try {
      const preview = previewSchedule(draft.cronExpression, draft.timezone);
      return renderList(req, reply, current, { draft, preview });
    } catch (err) {
      if (err instanceof AppError && err.statusCode < 500) {
        return renderList(req, reply, current, { error: err.message, draft }, err.statusCode);
      }
      throw err;
    }
  });

  app.post(TASKS_PATH, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await signedIn(req, reply, TASKS_PATH);
    if (!current) return reply;
    const draft = draftOf(form);
    const parsed = CreateTask.safeParse({
      name: draft.name,
      prompt: draft.prompt,
      cronExpression: draft.cronExpression,
      timezone: draft.timezone,
    });
    if (!parsed.success) {
      return renderList(req, reply, current, { error: formIssues(parsed.error), draft }, 422);
    }
    try {
      await createTask(serviceContextOf(req, current.actor), draft.agentId || 'default', parsed.data);
      return redirectWithFlash(req, reply, TASKS_PATH, { notice: NOTICES.created });
    } catch (err) {
      if (err instanceof AppError && err.statusCode < 500) {
        return renderList(req, reply, current, { error: err.message, draft }, err.statusCode);
      }
      throw err;
    }
  });

  /** A task's page: the task, the form that edits it, its run history. */
  async function renderTask(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    taskId: string,
    opts: { notice?: string; error?: string; draft?: Omit<TaskDraft, 'agentId'> } = {},
    status = 200,
  ) {
    const ctx = serviceContextOf(req, current.actor);
    const task = await getAccountTask(ctx, taskId);
    const [runs, agents] = await Promise.all([
      listRuns(ctx, task.agentId, task.id, { page: 1, limit: RUNS_SHOWN }),
      listAgents(ctx, { page: 1, limit: 100, sortBy: 'createdAt', sortOrder: 'asc' }),
    ]);
    return send(
      reply,
      taskRunsPage({
        user: current.user,
        csrf: csrf(req, reply),
        task,
        agent: agents.data.find((a) => a.id === task.agentId),
        runs: runs.data,
        total: runs.pagination.total,
        zones: ZONES,
        ...opts,
      }),
      status,
    );
  }

  app.get(`${TASKS_PATH}/:taskId`, page, (req, reply) =>
    withTask(req, reply, (current, taskId) => renderTask(req, reply, current, taskId, takeFlash(req, reply))),
  );

  /** Saves the edit form: name, prompt, schedule and zone; a refusal shows the form again with what it held. */
  app.post(`${TASKS_PATH}/:taskId`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withTask(req, reply, async (current, taskId) => {
      const { agentId: _, ...draft } = draftOf(form);
      const parsed = UpdateTask.safeParse(draft);
      if (!parsed.success) {
        return renderTask(req, reply, current, taskId, { error: formIssues(parsed.error), draft }, 422);
      }
      const ctx = serviceContextOf(req, current.actor);
      const task = await getAccountTask(ctx, taskId);
      try {
        await updateTask(ctx, task.agentId, task.id, parsed.data);
      } catch (err) {
        if (err instanceof AppError && err.statusCode < 500 && err.statusCode !== 404) {
          return renderTask(req, reply, current, taskId, { error: err.message, draft }, err.statusCode);
        }
        throw err;
      }
      return redirectWithFlash(req, reply, taskPath(task.id), { notice: NOTICES.saved });
    });
  });

  app.post(`${TASKS_PATH}/:taskId/enabled`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withTask(req, reply, async (current, taskId) => {
      const ctx = serviceContextOf(req, current.actor);
      const task = await getAccountTask(ctx, taskId);
      const enabled = one(form, 'enabled') === 'true';
      await updateTask(ctx, task.agentId, task.id, { enabled });
      return redirectWithFlash(req, reply, TASKS_PATH, { notice: NOTICES[enabled ? 'enabled' : 'paused'] });
    });
  });

  app.post(`${TASKS_PATH}/:taskId/run`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withTask(req, reply, async (current, taskId) => {
      const ctx = serviceContextOf(req, current.actor);
      const task = await getAccountTask(ctx, taskId);
      await runTaskNow(ctx, task.agentId, task.id);
      return redirectWithFlash(req, reply, taskPath(task.id), { notice: NOTICES.queued });
    });
  });

  app.post(`${TASKS_PATH}/:taskId/delete`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withTask(req, reply, async (current, taskId) => {
      const ctx = serviceContextOf(req, current.actor);
      const task = await getAccountTask(ctx, taskId);
      await deleteTask(ctx, task.agentId, task.id);
      return redirectWithFlash(req, reply, TASKS_PATH, { notice: NOTICES.deleted });
    });
  });
}
