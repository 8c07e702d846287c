import { z } from 'zod';
import type { OAuthServer } from '../access/oauth/server.ts';
import type { App } from '../http/types.ts';
import { AppError } from '../lib/errors.ts';
import { listAgents } from '../modules/agents/index.ts';
import {
  CreateTask,
  createTask,
  deleteTask,
  getAccountTask,
  listAccountTasks,
  listRuns,
  previewSchedule,
  runTaskNow,
  UpdateTask,
  updateTask,
} from '../modules/scheduled-tasks/index.ts';
import { TIMEZONE_SCRIPT } from './assets.ts';
import { formIssues, send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { formOf, idParam, type PageBase, pageRouter, text } from './page-route.ts';
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

const TaskParams = z.object({
  taskId: idParam(TASK_ID, (id) => `Scheduled task ${id.slice(0, 40)} not found`),
});
const TaskForm = formOf({ agentId: text, name: text, prompt: text, cronExpression: text, timezone: text });
const EnabledForm = formOf({ enabled: text });

const draftOf = (form: z.infer<typeof TaskForm>): TaskDraft => ({
  agentId: form.agentId,
  name: form.name,
  prompt: form.prompt,
  cronExpression: form.cronExpression,
  timezone: form.timezone || 'UTC',
});

/** The scheduled tasks in the account pages (`/account/tasks`), over the scheduled-tasks services. */
export async function taskPageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const pages = pageRouter(app, oauth);

  async function renderList(
    { reply, current, ctx, csrf }: PageBase,
    opts: { error?: string; notice?: string; draft?: TaskDraft; preview?: PreviewView } = {},
    status = 200,
  ) {
    const [tasks, agents] = await Promise.all([
      listAccountTasks(ctx, { page: 1, limit: 500, sortBy: 'createdAt', sortOrder: 'asc' }),
      listAgents(ctx, { page: 1, limit: 100, sortBy: 'createdAt', sortOrder: 'asc' }),
    ]);
    return send(
      reply,
      tasksPage({
        user: current.user,
        csrf: csrf(),
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

  /** A refusal on the list (404, or 409 for a task that cannot do it); faults of ours stay 500s. */
  const refused = (page: PageBase, err: AppError) =>
    err.statusCode < 500 ? renderList(page, { error: err.message }, err.statusCode) : undefined;
  // Sign-in comes back to the list: a task's page or form may be gone by then.
  const onList = { returnTo: TASKS_PATH, refused };
  const onTask = { ...onList, params: TaskParams };

  pages.get(TASKS_PATH, {}, (page) => renderList(page, takeFlash(page.req, page.reply)));

  /** The form again with the schedule in words and its next five runs (nothing is saved). */
  pages.post(`${TASKS_PATH}/preview`, { ...onList, form: TaskForm }, async (page) => {
    const draft = draftOf(page.form);
    try {
      const preview = previewSchedule(draft.cronExpression, draft.timezone);
      return renderList(page, { draft, preview });
    } catch (err) {
      if (err instanceof AppError && err.statusCode < 500) {
        return renderList(page, { error: err.message, draft }, err.statusCode);
      }
      throw err;
    }
  });

  pages.post(TASKS_PATH, { ...onList, form: TaskForm }, async (page) => {
    const draft = draftOf(page.form);
    const parsed = CreateTask.safeParse({
      name: draft.name,
      prompt: draft.prompt,
      cronExpression: draft.cronExpression,
      timezone: draft.timezone,
    });
    if (!parsed.success) {
      return renderList(page, { error: formIssues(parsed.error), draft }, 422);
    }
    try {
      await createTask(page.ctx, draft.agentId || 'default', parsed.data);
      return redirectWithFlash(page.req, page.reply, TASKS_PATH, { notice: NOTICES.created });
    } catch (err) {
      if (err instanceof AppError && err.statusCode < 500) {
        return renderList(page, { error: err.message, draft }, err.statusCode);
      }
      throw err;
    }
  });

  /** A task's page: the task, the form that edits it, its run history. */
  async function renderTask(
    { reply, current, ctx, csrf }: PageBase,
    taskId: string,
    opts: { notice?: string; error?: string; draft?: Omit<TaskDraft, 'agentId'> } = {},
    status = 200,
  ) {
    const task = await getAccountTask(ctx, taskId);
    const [runs, agents] = await Promise.all([
      listRuns(ctx, task.agentId, task.id, { page: 1, limit: RUNS_SHOWN }),
      listAgents(ctx, { page: 1, limit: 100, sortBy: 'createdAt', sortOrder: 'asc' }),
    ]);
    return send(
      reply,
      taskRunsPage({
        user: current.user,
        csrf: csrf(),
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

  pages.get(`${TASKS_PATH}/:taskId`, onTask, (page) =>
    renderTask(page, page.params.taskId, takeFlash(page.req, page.reply)),
  );

  /** Saves the edit form: name, prompt, schedule and zone; a refusal shows the form again with what it held. */
  pages.post(`${TASKS_PATH}/:taskId`, { ...onTask, form: TaskForm }, async (page) => {
    const { taskId } = page.params;
    const { agentId: _, ...draft } = draftOf(page.form);
    const parsed = UpdateTask.safeParse(draft);
    if (!parsed.success) {
      return renderTask(page, taskId, { error: formIssues(parsed.error), draft }, 422);
    }
    const task = await getAccountTask(page.ctx, taskId);
    try {
      await updateTask(page.ctx, task.agentId, task.id, parsed.data);
    } catch (err) {
      if (err instanceof AppError && err.statusCode < 500 && err.statusCode !== 404) {
        return renderTask(page, taskId, { error: err.message, draft }, err.statusCode);
      }
      throw err;
    }
    return redirectWithFlash(page.req, page.reply, taskPath(task.id), { notice: NOTICES.saved });
  });

  pages.post(
    `${TASKS_PATH}/:taskId/enabled`,
    { ...onTask, form: EnabledForm },
    async ({ req, reply, ctx, params, form }) => {
      const task = await getAccountTask(ctx, params.taskId);
      const enabled = form.enabled === 'true';
      await updateTask(ctx, task.agentId, task.id, { enabled });
      return redirectWithFlash(req, reply, TASKS_PATH, { notice: NOTICES[enabled ? 'enabled' : 'paused'] });
    },
  );

  pages.post(`${TASKS_PATH}/:taskId/run`, onTask, async ({ req, reply, ctx, params }) => {
    const task = await getAccountTask(ctx, params.taskId);
    await runTaskNow(ctx, task.agentId, task.id);
    return redirectWithFlash(req, reply, taskPath(task.id), { notice: NOTICES.queued });
  });

  pages.post(`${TASKS_PATH}/:taskId/delete`, onTask, async ({ req, reply, ctx, params }) => {
    const task = await getAccountTask(ctx, params.taskId);
    await deleteTask(ctx, task.agentId, task.id);
    return redirectWithFlash(req, reply, TASKS_PATH, { notice: NOTICES.deleted });
  });
}
