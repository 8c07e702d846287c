import { eq, like } from 'drizzle-orm';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { type FakeTelegram, startFakeTelegram } from '../../../test/fakes/telegram.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { runQueuedJobs } from '../../../test/jobs.ts';
import {
  accounts,
  creditTransactions,
  jobs,
  messages,
  scheduledTaskRuns,
  scheduledTasks,
} from '../../db/schema/index.ts';
import { JobWorker } from '../../jobs/worker.ts';
import { newId } from '../../lib/ids.ts';
import { runChannelJobs } from '../channels/test-support.ts';
import { taskJobs } from './jobs.ts';
import * as repo from './repo.ts';
import { dispatchDueTasks, INTERRUPTED_ERROR } from './runs.ts';
import { MAX_TASKS_PER_ACCOUNT } from './service.ts';

const silent = pino({ level: 'silent' });
const MINUTE = 60_000;

describe('scheduled tasks', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  let tg: FakeTelegram;

  beforeAll(async () => {
    llm = await startFakeLlm();
    tg = await startFakeTelegram();
    // The dispatcher reads every account's due tasks: on PostgreSQL this file gets a database of its own.
    h = await createHarness(
      {
        LLM_BASE_URL: llm.url,
        LLM_MODELS: 'fake-model=1000000/2000000',
        TELEGRAM_API_URL: tg.url,
        CHANNEL_SEND_INTERVAL_MS: '0',
      },
      { privateDatabase: true },
    );
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
    await tg?.close();
  });
  beforeEach(async () => {
    llm.reset();
    llm.requests.length = 0;
    llm.maxInFlight = 0;
    // Each test dispatches with its own clock: no task of an earlier test may be due in it.
    await h.database.db.delete(scheduledTasks);
    await h.database.db.delete(jobs).where(like(jobs.type, 'tasks.%'));
  });

  const as = (u: TestUser) => ({ token: u.sessionToken });
  const makeAgent = async (u: TestUser, body: Record<string, unknown> = {}) => {
    const res = await call(h.app, 'POST', '/api/v1/agents', { ...as(u), body: { name: 'Helper', ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string };
  };
  const tasksUrl = (agentId: string) => `/api/v1/agents/${agentId}/scheduled-tasks`;
  const makeTask = async (u: TestUser, agentId: string, body: Record<string, unknown> = {}) => {
    const res = await call(h.app, 'POST', tasksUrl(agentId), {
      ...as(u),
      body: { name: 'Digest', prompt: 'Summarize my week.', cronExpression: '0 9 * * 1', ...body },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string; nextRunAt: string | null };
  };
  const jobContext = (attempt = 1) => ({
    jobId: 'job_test',
    attempt,
    signal: new AbortController().signal,
    log: silent,
  });
  /** The queued task runs, run as the worker would (the worker is off in tests). */
  const runJobs = () => runQueuedJobs(h.app, taskJobs, 'tasks.run');
  const runsOf = (taskId: string) =>
    h.database.db.select().from(scheduledTaskRuns).where(eq(scheduledTaskRuns.taskId, taskId));
  // Charges are written by group commit just after each model call: wait for them before reading.
  const balanceOf = async (u: TestUser) => {
    await h.app.deps.background.drain();
    return (await h.database.db.select().from(accounts).where(eq(accounts.id, u.account.id)))[0]?.creditBalance ?? 0;
  };
  const spentOn = async (u: TestUser) => {
    await h.app.deps.background.drain();
    return (await h.database.db.select().from(creditTransactions).where(eq(creditTransactions.accountId, u.account.id)))
      .filter((t) => t.amount < 0)
      .reduce((sum, t) => sum - t.amount, 0);
  };
  /** Local wall-clock time of an instant in a zone, as "Mon 09:00". */
  const localTime = (iso: string, timeZone: string) =>
    new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'short', hour: '2-digit', minute: '2-digit' }).format(
      new Date(iso),
    );

  describe('API', () => {
    it('creates a task (201) with defaults, its schedule in words and its next run in its zone', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const before = Date.now();
      const res = await call(h.app, 'POST', tasksUrl(agent.id), {
        ...as(u),
        body: {
          name: ' Monday digest ',
          prompt: 'Summarize my week.',
          cronExpression: '0  9 * * 1',
          timezone: 'Europe/Paris',
        },
      });
      expect(res.statusCode, res.body).toBe(201);
      const task = res.json();
      expect(task).toEqual({
        id: expect.stringMatching(/^task_/),
        agentId: agent.id,
        name: 'Monday digest',
        prompt: 'Summarize my week.',
        cronExpression: '0 9 * * 1',
        timezone: 'Europe/Paris',
        enabled: true,
        schedule: 'At 09:00, only on Monday',
        nextRunAt: expect.any(String),
        lastRun: null,
        disabledReason: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect(localTime(task.nextRunAt, 'Europe/Paris')).toBe('Mon 09:00');
      expect(Date.parse(task.nextRunAt) - before).toBeGreaterThan(0);
      expect(Date.parse(task.nextRunAt) - before).toBeLessThanOrEqual(7 * 24 * 3600 * 1000);

      const utc = await makeTask(u, agent.id, { cronExpression: '30 6 * * *' });
      expect((await call(h.app, 'GET', `${tasksUrl(agent.id)}/${utc.id}`, as(u))).json()).toMatchObject({
        timezone: 'UTC',
        enabled: true,
      });
      expect(localTime(utc.nextRunAt ?? '', 'UTC')).toMatch(/ 06:30$/);
    });

    it('refuses a bad expression or zone with a 422 naming the field', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const post = (body: Record<string, unknown>) =>
        call(h.app, 'POST', tasksUrl(agent.id), {
          ...as(u),
          body: { name: 'x', prompt: 'y', cronExpression: '0 9 * * 1', ...body },
        });
      const six = await post({ cronExpression: '0 0 9 * * 1' });
      expect(six.statusCode).toBe(422);
      expect(six.json()).toEqual({
        error: 'ValidationError',
        message: 'cronExpression must have 5 fields (minute hour day-of-month month day-of-week); "0 0 9 * * 1" has 6',
        statusCode: 422,
        details: [
          {
            field: 'body.cronExpression',
            message:
              'cronExpression must have 5 fields (minute hour day-of-month month day-of-week); "0 0 9 * * 1" has 6',
          },
        ],
      });
      expect((await post({ cronExpression: '0 25 * * *' })).json().message).toBe(
        'cronExpression: the hour field "25" is not valid',
      );
      expect((await post({ cronExpression: '0 9 31 2 *' })).json().message).toBe(
        'cronExpression "0 9 31 2 *" never matches a date',
      );
      const zone = await post({ timezone: 'Europe/Atlantis' });
      expect(zone.statusCode).toBe(422);
      expect(zone.json().details).toEqual([
        { field: 'body.timezone', message: '"Europe/Atlantis" is not an IANA time zone name (such as Europe/Paris)' },
      ]);
      const missing = await call(h.app, 'POST', tasksUrl(agent.id), { ...as(u), body: { name: 'x' } });
      expect(missing.statusCode).toBe(422);
      expect(
        missing
          .json()
          .details.map((d: { field: string }) => d.field)
          .sort(),
      ).toEqual(['body.cronExpression', 'body.prompt']);
      expect((await post({ color: 'red' })).json().details).toEqual([
        { field: 'body.color', message: 'is not an allowed field' },
      ]);
      expect(await h.database.db.select().from(scheduledTasks)).toEqual([]);
    });

    it('lists (paginated, sortable), gets, updates partially and deletes; `default` is the default agent', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const a = await makeTask(u, 'default', { name: 'Alpha' });
      const b = await makeTask(u, agent.id, { name: 'Beta' });
      const other = await makeAgent(u, { name: 'Other' });
      await makeTask(u, other.id, { name: 'Gamma' });

      const list = await call(h.app, 'GET', `${tasksUrl(agent.id)}?sortBy=name&sortOrder=asc&limit=1`, as(u));
      expect(list.statusCode).toBe(200);
      expect(list.json()).toEqual({
        data: [expect.objectContaining({ id: a.id, name: 'Alpha' })],
        pagination: { page: 1, limit: 1, total: 2, hasMore: true },
      });
      expect(
        (await call(h.app, 'GET', `${tasksUrl('default')}?page=2&limit=1&sortBy=name&sortOrder=asc`, as(u))).json()
          .data,
      ).toEqual([expect.objectContaining({ id: b.id })]);
      expect((await call(h.app, 'GET', `${tasksUrl(agent.id)}?sortBy=color`, as(u))).statusCode).toBe(422);

      const paused = await call(h.app, 'PUT', `${tasksUrl(agent.id)}/${a.id}`, { ...as(u), body: { enabled: false } });
      expect(paused.statusCode, paused.body).toBe(200);
      expect(paused.json()).toMatchObject({
        id: a.id,
        name: 'Alpha',
        enabled: false,
        nextRunAt: null,
        cronExpression: '0 9 * * 1',
      });
      const resumed = await call(h.app, 'PUT', `${tasksUrl(agent.id)}/${a.id}`, {
        ...as(u),
        body: { enabled: true, cronExpression: '15 18 * * *', timezone: 'America/New_York' },
      });
      expect(resumed.json()).toMatchObject({ enabled: true, schedule: 'At 18:15', timezone: 'America/New_York' });
      expect(localTime(resumed.json().nextRunAt, 'America/New_York')).toMatch(/ 18:15$/);
      const renamed = await call(h.app, 'PUT', `${tasksUrl(agent.id)}/${a.id}`, {
        ...as(u),
        body: { name: 'Renamed' },
      });
      // A change that is not the schedule keeps the next run.
      expect(renamed.json()).toMatchObject({ name: 'Renamed', nextRunAt: resumed.json().nextRunAt });
      expect(
        (await call(h.app, 'PUT', `${tasksUrl(agent.id)}/${a.id}`, { ...as(u), body: { timezone: 'Nowhere/Else' } }))
          .statusCode,
      ).toBe(422);

      // The task is addressed under its own agent only.
      expect((await call(h.app, 'GET', `${tasksUrl(other.id)}/${a.id}`, as(u))).statusCode).toBe(404);
      const del = await call(h.app, 'DELETE', `${tasksUrl(agent.id)}/${a.id}`, as(u));
      expect(del.statusCode).toBe(204);
      expect(del.body).toBe('');
      const gone = await call(h.app, 'GET', `${tasksUrl(agent.id)}/${a.id}`, as(u));
      expect(gone.statusCode).toBe(404);
      expect(gone.json()).toEqual({
        error: 'NotFoundError',
        message: `Scheduled task ${a.id} not found`,
        statusCode: 404,
      });
      expect((await call(h.app, 'GET', tasksUrl('agt_nope'), as(u))).json()).toEqual({
        error: 'NotFoundError',
        message: 'Agent agt_nope not found',
        statusCode: 404,
      });
    });

    it('deleting the agent disables its tasks with a reason: readable and deletable, never enabled or run', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const task = await makeTask(u, agent.id);
      expect((await call(h.app, 'DELETE', `/api/v1/agents/${agent.id}`, as(u))).statusCode).toBe(204);
      const got = await call(h.app, 'GET', `${tasksUrl(agent.id)}/${task.id}`, as(u));
      expect(got.statusCode).toBe(200);
      expect(got.json()).toMatchObject({ enabled: false, nextRunAt: null, disabledReason: 'Its agent was deleted' });
      expect((await call(h.app, 'GET', tasksUrl(agent.id), as(u))).json().pagination.total).toBe(1);
      const enable = await call(h.app, 'PUT', `${tasksUrl(agent.id)}/${task.id}`, {
        ...as(u),
        body: { enabled: true },
      });
      expect(enable.statusCode).toBe(409);
      expect(enable.json().message).toBe(`Agent ${agent.id} was deleted: its tasks cannot be enabled`);
      const run = await call(h.app, 'POST', `${tasksUrl(agent.id)}/${task.id}/run`, as(u));
      expect(run.statusCode).toBe(409);
      expect(run.json().message).toBe('The task is disabled: Its agent was deleted');
      expect(await dispatchDueTasks(h.app.deps, new Date(Date.now() + 30 * 24 * 3600 * 1000))).toBe(0);
      expect((await call(h.app, 'DELETE', `${tasksUrl(agent.id)}/${task.id}`, as(u))).statusCode).toBe(204);
      expect((await call(h.app, 'GET', tasksUrl(agent.id), as(u))).statusCode).toBe(404);
    });

    it(`an account holds at most ${MAX_TASKS_PER_ACCOUNT} tasks (409 past it)`, async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      await h.database.db.insert(scheduledTasks).values(
        Array.from({ length: MAX_TASKS_PER_ACCOUNT }, (_, i) => ({
          id: newId('scheduledTask'),
          accountId: u.account.id,
          agentId: agent.id,
          name: `t${i}`,
          prompt: 'p',
          cronExpression: '0 9 * * 1',
          timezone: 'UTC',
          enabled: false,
          runAs: {},
        })),
      );
      const res = await call(h.app, 'POST', tasksUrl(agent.id), {
        ...as(u),
        body: { name: 'one more', prompt: 'p', cronExpression: '0 9 * * 1' },
      });
      expect(res.statusCode).toBe(409);
      expect(res.json().message).toBe(`An account may have at most ${MAX_TASKS_PER_ACCOUNT} scheduled tasks`);
    });

    it('a task keeps the provider permissions of whoever last wrote it', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const reader = await u.pat(['agents-all'], { default_provider_permission: 'read' });
      const res = await call(h.app, 'POST', tasksUrl(agent.id), {
        token: reader,
        body: { name: 'r', prompt: 'p', cronExpression: '0 9 * * 1' },
      });
      expect(res.statusCode, res.body).toBe(201);
      const [row] = await h.database.db.select().from(scheduledTasks).where(eq(scheduledTasks.id, res.json().id));
      expect(row?.runAs).toEqual({
        scopes: ['agents-all'],
        providerPermissions: {},
        defaultProviderPermission: 'read',
        allowedKnowledgeBaseIds: null,
      });
    });
  });

  describe('runs', () => {
    it('a due occurrence runs once: the prompt goes to the agent in a conversation of its own, billed to the owner', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u, { personality: 'Be brief.' });
      const task = await makeTask(u, agent.id, { cronExpression: '*/5 * * * *', prompt: 'What is on today?' });
      const due = new Date(Date.parse(task.nextRunAt ?? '') + 1000);

      // Not yet due: nothing happens.
      expect(await dispatchDueTasks(h.app.deps, new Date(Date.parse(task.nextRunAt ?? '') - 1000))).toBe(0);
      expect(await dispatchDueTasks(h.app.deps, due)).toBe(1);
      expect(await dispatchDueTasks(h.app.deps, due)).toBe(0);
      const [queued] = await runsOf(task.id);
      expect(queued).toMatchObject({
        status: 'queued',
        trigger: 'schedule',
        scheduledFor: new Date(task.nextRunAt ?? ''),
      });
      const [row] = await h.database.db.select().from(scheduledTasks).where(eq(scheduledTasks.id, task.id));
      expect(row?.nextRunAt?.getTime()).toBe(Date.parse(task.nextRunAt ?? '') + 5 * MINUTE);

      llm.enqueue({ content: 'Two meetings and a dentist.', usage: { prompt: 100, completion: 6 } });
      const balance = await balanceOf(u);
      await runJobs();
      expect(llm.requests).toHaveLength(1);
      expect(llm.requests[0]?.messages.at(-1)).toMatchObject({ role: 'user', content: 'What is on today?' });
      expect(llm.requests[0]?.messages[0]?.content).toContain('Be brief.');
      const [done] = await runsOf(task.id);
      expect(done).toMatchObject({
        status: 'succeeded',
        attempts: 1,
        output: 'Two meetings and a dentist.',
        error: null,
        conversationId: expect.stringMatching(/^conv_/),
      });
      expect(done?.creditsConsumed).toBeGreaterThan(0);
      expect(balance - (await balanceOf(u))).toBe(done?.creditsConsumed);
      // The ledger says it was this task's run, not an agent chat.
      const charges = (
        await h.database.db.select().from(creditTransactions).where(eq(creditTransactions.accountId, u.account.id))
      ).filter((t) => t.amount < 0);
      expect(charges.map((t) => [t.type, t.description, -t.amount])).toEqual([
        ['task', 'Task Digest', done?.creditsConsumed],
      ]);
      const stored = await h.database.db
        .select()
        .from(messages)
        .where(eq(messages.conversationId, done?.conversationId ?? ''));
      expect(stored.map((m) => [m.role, m.content])).toEqual([
        ['user', 'What is on today?'],
        ['assistant', 'Two meetings and a dentist.'],
      ]);

      const api = await call(h.app, 'GET', `${tasksUrl(agent.id)}/${task.id}/runs`, as(u));
      expect(api.json()).toEqual({
        data: [
          {
            id: done?.id,
            taskId: task.id,
            trigger: 'schedule',
            status: 'succeeded',
            scheduledFor: task.nextRunAt,
            startedAt: expect.any(String),
            finishedAt: expect.any(String),
            attempts: 1,
            creditsConsumed: done?.creditsConsumed,
            conversationId: done?.conversationId,
            output: 'Two meetings and a dentist.',
            error: null,
          },
        ],
        pagination: { page: 1, limit: 20, total: 1, hasMore: false },
      });
      expect((await call(h.app, 'GET', `${tasksUrl(agent.id)}/${task.id}`, as(u))).json().lastRun).toMatchObject({
        id: done?.id,
        status: 'succeeded',
      });
      // A second run of the same job does not run the occurrence again.
      await taskJobs['tasks.run'].run(h.app.deps, { runId: done?.id ?? '' }, jobContext(2));
      expect(llm.requests).toHaveLength(1);
    });

    it('occurrences missed while the service was down run once, not once per missed slot', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const task = await makeTask(u, agent.id, { cronExpression: '*/5 * * * *' });
      const restart = new Date(Date.parse(task.nextRunAt ?? '') + 3 * 24 * 3600 * 1000 + 7 * MINUTE);
      expect(await dispatchDueTasks(h.app.deps, restart)).toBe(1);
      expect(await runsOf(task.id)).toHaveLength(1);
      const [row] = await h.database.db.select().from(scheduledTasks).where(eq(scheduledTasks.id, task.id));
      // The next occurrence is the first after the restart.
      expect(row?.nextRunAt?.getTime()).toBeGreaterThan(restart.getTime());
      expect(row?.nextRunAt?.getTime()).toBeLessThanOrEqual(restart.getTime() + 5 * MINUTE);
    });

    it('two instances over one database run each occurrence exactly once', async () => {
      const second = await h.extraApp();
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const made = [];
      for (let i = 0; i < 12; i++)
        made.push(await makeTask(u, agent.id, { name: `t${i}`, cronExpression: '* * * * *' }));
      const now = new Date(Date.now() + 2 * MINUTE);
      const counts = await Promise.all([
        dispatchDueTasks(h.app.deps, now),
        dispatchDueTasks(second.deps, now),
        dispatchDueTasks(h.app.deps, now),
        dispatchDueTasks(second.deps, now),
      ]);
      expect(counts.reduce((a, b) => a + b, 0)).toBe(12);
      const runs = await h.database.db
        .select()
        .from(scheduledTaskRuns)
        .where(eq(scheduledTaskRuns.accountId, u.account.id));
      expect(runs).toHaveLength(12);
      expect(new Set(runs.map((r) => r.taskId)).size).toBe(12);
      const queuedJobs = await h.database.db.select().from(jobs).where(eq(jobs.type, 'tasks.run'));
      expect(queuedJobs).toHaveLength(12);
    });

    it('a run interrupted by a crash is recorded as failed and not run again (no double charge)', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const task = await makeTask(u, agent.id, { cronExpression: '* * * * *' });
      await dispatchDueTasks(h.app.deps, new Date(Date.now() + 2 * MINUTE));
      const [run] = await runsOf(task.id);
      // The instance that took the run died after marking it running (its job's lease then runs out).
      await repo.startRun(h.database.db, run?.id ?? '', new Date());
      const balance = await balanceOf(u);
      await runJobs();
      expect(llm.requests).toHaveLength(0);
      expect((await runsOf(task.id))[0]).toMatchObject({ status: 'failed', error: INTERRUPTED_ERROR, attempts: 1 });
      expect(await balanceOf(u)).toBe(balance);
    });

    it('transient upstream faults are retried (3 attempts in all) and never charged; the last one fails the run', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const task = await makeTask(u, agent.id, { cronExpression: '* * * * *' });
      await dispatchDueTasks(h.app.deps, new Date(Date.now() + 2 * MINUTE));
      const [run] = await runsOf(task.id);
      const runId = run?.id ?? '';
      const attempt = (n: number) => taskJobs['tasks.run'].run(h.app.deps, { runId }, jobContext(n));
      llm.enqueue({ status: 503 }, { status: 503 }, { status: 503 });
      await expect(attempt(1)).rejects.toThrow();
      expect((await runsOf(task.id))[0]).toMatchObject({ status: 'retrying', attempts: 1 });
      await expect(attempt(2)).rejects.toThrow();
      await attempt(3);
      const [failed] = await runsOf(task.id);
      expect(failed).toMatchObject({ status: 'failed', attempts: 3, creditsConsumed: 0 });
      expect(failed?.error).toMatch(/503|unavailable/i);
      expect(await spentOn(u)).toBe(0);

      // A retried run that then succeeds is charged once.
      const other = await makeTask(u, agent.id, { cronExpression: '*/2 * * * *', name: 'second' });
      await dispatchDueTasks(h.app.deps, new Date(Date.parse(other.nextRunAt ?? '') + 1000));
      const [second] = await runsOf(other.id);
      llm.enqueue({ status: 429 }, { content: 'fine', usage: { prompt: 50, completion: 1 } });
      await expect(taskJobs['tasks.run'].run(h.app.deps, { runId: second?.id ?? '' }, jobContext(1))).rejects.toThrow();
      await taskJobs['tasks.run'].run(h.app.deps, { runId: second?.id ?? '' }, jobContext(2));
      const [ok] = await runsOf(other.id);
      expect(ok).toMatchObject({ status: 'succeeded', attempts: 2, output: 'fine' });
      expect(await spentOn(u)).toBe(ok?.creditsConsumed);
    });

    it('a failure after credits were consumed is final: the run records what it cost and is not retried', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u, { enabledBuiltInTools: ['agent-memory'] });
      const task = await makeTask(u, agent.id, { cronExpression: '* * * * *' });
      await dispatchDueTasks(h.app.deps, new Date(Date.now() + 2 * MINUTE));
      llm.enqueue(
        { toolCalls: [{ name: 'memory-search', arguments: { query: 'plans' } }], usage: { prompt: 80, completion: 3 } },
        { status: 502 },
      );
      await runJobs();
      const [run] = await runsOf(task.id);
      expect(run).toMatchObject({ status: 'failed', attempts: 1 });
      expect(run?.creditsConsumed).toBeGreaterThan(0);
      expect(run?.creditsConsumed).toBe(await spentOn(u));
    });

    it('disabled tasks, a deleted agent and an empty balance fail the run without a model call', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const paused = await makeTask(u, agent.id, { cronExpression: '* * * * *', name: 'paused' });
      const broke = await makeTask(u, agent.id, { cronExpression: '* * * * *', name: 'broke' });
      await dispatchDueTasks(h.app.deps, new Date(Date.now() + 2 * MINUTE));
      await call(h.app, 'PUT', `${tasksUrl(agent.id)}/${paused.id}`, { ...as(u), body: { enabled: false } });
      await h.database.db.update(accounts).set({ creditBalance: 0 }).where(eq(accounts.id, u.account.id));
      await runJobs();
      expect(llm.requests).toHaveLength(0);
      expect((await runsOf(paused.id))[0]).toMatchObject({
        status: 'failed',
        error: 'The task was disabled before it ran',
      });
      expect((await runsOf(broke.id))[0]).toMatchObject({ status: 'failed', error: 'The account has no credits left' });

      const v = await createUser(h.app);
      const gone = await makeAgent(v);
      const orphan = await makeTask(v, gone.id, { cronExpression: '* * * * *' });
      await dispatchDueTasks(h.app.deps, new Date(Date.now() + 2 * MINUTE));
      // The agent goes between the dispatch and the run (its row removed under the service's feet).
      await h.app.deps.database.db.execute(`DELETE FROM agents WHERE id = '${gone.id}'`);
      await runJobs();
      expect(llm.requests).toHaveLength(0);
      expect((await runsOf(orphan.id))[0]).toMatchObject({ status: 'failed', error: 'Its agent was deleted' });
      const [row] = await h.database.db.select().from(scheduledTasks).where(eq(scheduledTasks.id, orphan.id));
      expect(row).toMatchObject({ enabled: false, nextRunAt: null, disabledReason: 'Its agent was deleted' });
    });

    it("runs count against the agent's usage limits: past them the run fails with the limit message, no model call", async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u, {
        usageLimits: { dailyMessagesPerUser: 1, limitReachedMessage: 'Enough for today.' },
      });
      const task = await makeTask(u, agent.id, { cronExpression: '*/2 * * * *' });
      const first = Date.parse(task.nextRunAt ?? '');
      await dispatchDueTasks(h.app.deps, new Date(first + 1000));
      await runJobs();
      await dispatchDueTasks(h.app.deps, new Date(first + 2 * MINUTE + 1000));
      await runJobs();
      expect(llm.requests).toHaveLength(1);
      const runs = (await runsOf(task.id)).sort((a, b) => a.scheduledFor.getTime() - b.scheduledFor.getTime());
      expect(runs.map((r) => r.status)).toEqual(['succeeded', 'failed']);
      expect(runs[1]).toMatchObject({
        error: 'A usage limit of the agent stopped the run: Enough for today.',
        creditsConsumed: 0,
      });
    });

    it("a run's answer is pushed once to the people linked on the agent's Telegram channel", async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const botToken = tg.addBot(777, 'tasks_bot');
      const channel = await call(h.app, 'POST', '/api/v1/messaging-channels', {
        ...as(u),
        body: { type: 'telegram', agentId: agent.id, config: { botToken } },
      });
      expect(channel.statusCode, channel.body).toBe(201);
      const channelId = channel.json().id as string;
      const code = (await call(h.app, 'POST', `/api/v1/messaging-channels/${channelId}/link-account`, as(u))).json()
        .code as string;
      const hook = await h.app.inject({
        method: 'POST',
        url: '/api/v1/messaging-channels/telegram/webhook',
        headers: {
          'content-type': 'application/json',
          'x-telegram-bot-api-secret-token': tg.webhooks.get(botToken)?.secret_token ?? '',
        },
        payload: JSON.stringify({
          update_id: 1,
          message: {
            message_id: 1,
            date: Math.floor(Date.now() / 1000),
            chat: { id: 4242, type: 'private' },
            from: { id: 4242, is_bot: false, first_name: 'Ada' },
            text: `/start ${code}`,
          },
        }),
      });
      expect(hook.statusCode).toBe(200);
      await runChannelJobs(h, u.account.id);
      tg.reset();

      const task = await makeTask(u, agent.id, { cronExpression: '* * * * *' });
      await dispatchDueTasks(h.app.deps, new Date(Date.now() + 2 * MINUTE));
      llm.enqueue({ content: 'Your Monday digest: all quiet.' });
      const [outcome] = await runJobs();
      expect(outcome).toMatchObject({ status: 'succeeded', pushed: 1 });
      await runChannelJobs(h, u.account.id);
      expect(tg.sent()).toMatchObject([{ chatId: '4242', text: 'Your Monday digest: all quiet.' }]);
      expect((await runsOf(task.id))[0]).toMatchObject({ status: 'succeeded' });
    });

    it('run now: 202 with the queued manual run, which then runs like a scheduled one', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const task = await makeTask(u, agent.id);
      const res = await call(h.app, 'POST', `${tasksUrl(agent.id)}/${task.id}/run`, as(u));
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toEqual({
        id: expect.stringMatching(/^trun_/),
        taskId: task.id,
        trigger: 'manual',
        status: 'queued',
        scheduledFor: expect.any(String),
        startedAt: null,
        finishedAt: null,
        attempts: 0,
        creditsConsumed: 0,
        conversationId: null,
        output: null,
        error: null,
      });
      llm.enqueue({ content: 'Done now.' });
      await runJobs();
      expect((await runsOf(task.id))[0]).toMatchObject({ status: 'succeeded', output: 'Done now.', trigger: 'manual' });
      // The schedule is untouched.
      expect((await call(h.app, 'GET', `${tasksUrl(agent.id)}/${task.id}`, as(u))).json().nextRunAt).toBe(
        task.nextRunAt,
      );
    });

    it('many tasks due at the same minute all run, at most the worker concurrency at a time', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      for (let i = 0; i < 7; i++) await makeTask(u, agent.id, { name: `t${i}`, cronExpression: '* * * * *' });
      // The first three answers wait until three calls are in flight (10 s at most), so a busy machine that starts
      // the runs slowly still shows whether the worker runs three at once.
      const threeInFlight = new Promise<void>((resolve) => {
        const since = Date.now();
        const check = () => (llm.inFlight >= 3 || Date.now() - since > 10_000 ? resolve() : setTimeout(check, 5));
        check();
      });
      for (let i = 0; i < 7; i++)
        llm.enqueue(
          i < 3 ? { content: `answer ${i}`, until: threeInFlight } : { content: `answer ${i}`, delayMs: 150 },
        );
      expect(await dispatchDueTasks(h.app.deps, new Date(Date.now() + 2 * MINUTE))).toBe(7);
      const worker = new JobWorker({
        deps: h.app.deps,
        catalog: taskJobs,
        concurrency: 3,
        pollIntervalMs: 20,
        leaseMs: 30_000,
      });
      worker.start();
      try {
        await expect
          .poll(
            async () =>
              (
                await h.database.db
                  .select()
                  .from(scheduledTaskRuns)
                  .where(eq(scheduledTaskRuns.accountId, u.account.id))
              )
                .map((r) => r.status)
                .filter((s) => s === 'succeeded').length,
            { timeout: 20_000, interval: 50 },
          )
          .toBe(7);
      } finally {
        await worker.stop(5000);
      }
      expect(llm.requests).toHaveLength(7);
      expect(llm.maxInFlight).toBe(3);
    });
  });

  describe('account-tasks tool', () => {
    it('the agent creates a task from a scripted conversation, under the same validation', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u, { enabledBuiltInTools: ['account-tasks'] });
      llm.enqueue(
        {
          toolCalls: [
            {
              name: 'tasks-create',
              arguments: {
                name: 'Report reminder',
                prompt: 'Remind me to send the report.',
                cronExpression: '0 9 * * 8',
              },
            },
          ],
        },
        {
          toolCalls: [
            {
              name: 'tasks-create',
              arguments: {
                name: 'Report reminder',
                prompt: 'Remind me to send the report.',
                cronExpression: '0 9 * * 1',
                timezone: 'Europe/Paris',
              },
            },
          ],
        },
        { content: 'Done: every Monday at 09:00.' },
      );
      const res = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
        ...as(u),
        body: { messages: [{ role: 'user', content: 'Remind me every Monday at 9 to send the report.' }] },
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().choices[0].message.content).toBe('Done: every Monday at 09:00.');
      expect(llm.requests[0]?.tools?.map((t) => t.function.name).sort()).toEqual([
        'tasks-create',
        'tasks-delete',
        'tasks-list',
        'tasks-update',
      ]);
      // The first call was refused with the API's message, which the model read.
      const refused = llm.requests[1]?.messages.at(-1);
      expect(refused?.role).toBe('tool');
      expect(refused?.content).toContain('the day-of-week field \\"8\\" is not valid');
      const tasks = await h.database.db.select().from(scheduledTasks).where(eq(scheduledTasks.accountId, u.account.id));
      expect(tasks).toEqual([
        expect.objectContaining({
          agentId: agent.id,
          name: 'Report reminder',
          prompt: 'Remind me to send the report.',
          cronExpression: '0 9 * * 1',
          timezone: 'Europe/Paris',
          enabled: true,
        }),
      ]);

      llm.enqueue({ toolCalls: [{ name: 'tasks-list', arguments: {} }] }, { content: 'You have one.' });
      await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
        ...as(u),
        body: { messages: [{ role: 'user', content: 'What do you remind me of?' }] },
      });
      // Tool output reaches the model wrapped as untrusted data; the task is in it, schedule in words.
      const listed = llm.requests[4]?.messages.at(-1)?.content ?? '';
      expect(listed).toContain(`"id":"${tasks[0]?.id}"`);
      expect(listed).toContain('"schedule":"At 09:00, only on Monday"');
    });

    it('an end user other than the owner never gets the tools; a token without agents-all cannot use them', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u, { enabledBuiltInTools: ['account-tasks'] });
      llm.enqueue({ content: 'hi' });
      await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
        ...as(u),
        body: { messages: [{ role: 'user', content: 'hello' }], user: 'customer-42' },
      });
      expect(llm.requests[0]?.tools).toBeUndefined();

      const user = await u.pat(['agents-use']);
      llm.enqueue(
        { toolCalls: [{ name: 'tasks-create', arguments: { name: 'x', prompt: 'y', cronExpression: '0 9 * * 1' } }] },
        { content: 'I could not.' },
      );
      const res = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
        token: user,
        body: { messages: [{ role: 'user', content: 'Schedule something.' }] },
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(llm.requests[2]?.messages.at(-1)?.content).toContain('Missing required scope: agents-all');
      expect(
        await h.database.db.select().from(scheduledTasks).where(eq(scheduledTasks.accountId, u.account.id)),
      ).toEqual([]);
    });
  });

  describe("a task acts with its writer's whole restriction set", () => {
    /** The user's default base (a page on anvils) and a second one, "Private" (a page on salaries). */
    const basesOf = async (u: TestUser) => {
      const def = (await call(h.app, 'GET', '/api/v1/knowledge/bases', as(u))).json().data[0].id as string;
      const other = (
        await call(h.app, 'POST', '/api/v1/knowledge/bases', { ...as(u), body: { name: 'Private' } })
      ).json().id as string;
      for (const [kb, slug, title, content] of [
        [def, 'anvils', 'Anvils', 'Acme sells anvils to coyotes.'],
        [other, 'salaries', 'Salaries', 'Secret anvils budget.'],
      ]) {
        const put = await call(h.app, 'PUT', `/api/v1/knowledge/bases/${kb}/pages/${slug}`, {
          ...as(u),
          body: { title, content },
        });
        expect(put.statusCode, put.body).toBe(200);
      }
      return { def, other };
    };
    const knowledgeAgent = (u: TestUser) => makeAgent(u, { enabledBuiltInTools: ['knowledge-base', 'account-tasks'] });
    /** Runs the task now (asked by the session, which changes nothing of the task) with a scripted model. */
    const runWithScript = async (u: TestUser, agentId: string, taskId: string, def: string) => {
      llm.requests.length = 0;
      llm.enqueue(
        { toolCalls: [{ name: 'knowledge-search', arguments: { query: 'anvils', kbId: def } }] },
        { toolCalls: [{ name: 'knowledge-search', arguments: { query: 'anvils' } }] },
        { content: 'Done.' },
      );
      const queued = await call(h.app, 'POST', `${tasksUrl(agentId)}/${taskId}/run`, as(u));
      expect(queued.statusCode, queued.body).toBe(202);
      const [outcome] = await runJobs();
      expect(outcome).toMatchObject({ status: 'succeeded' });
      const run = (await runsOf(taskId)).find((r) => r.id === queued.json().id);
      const told = llm.requests.slice(1, 3).map((r) => r.messages.at(-1)?.content ?? '');
      return { conversationId: run?.conversationId ?? '', told };
    };
    /** Everything the run's conversation holds, as the given token reads it through the API. */
    const conversationText = async (token: string, agentId: string, conversationId: string) => {
      const res = await call(h.app, 'GET', `/api/v1/agents/${agentId}/conversations/${conversationId}/messages`, {
        token,
      });
      expect(res.statusCode, res.body).toBe(200);
      const stored = await h.database.db.select().from(messages).where(eq(messages.conversationId, conversationId));
      return { api: res.body, stored: JSON.stringify(stored) };
    };
    const expectLimitedRun = async (
      token: string,
      agentId: string,
      run: { conversationId: string; told: string[] },
      def: string,
    ) => {
      expect(run.told[0]).toContain(`This token may not use knowledge base ${def}`);
      expect(run.told[1]).toContain('"slug":"salaries"');
      const text = await conversationText(token, agentId, run.conversationId);
      for (const seen of [text.api, text.stored]) {
        expect(seen).not.toContain('coyotes');
        expect(seen).not.toContain('"slug":"anvils"');
        expect(seen).toContain('salaries');
      }
    };

    it('created over REST by a PAT limited to one base: the run is refused the others, the allowed one works', async () => {
      const u = await createUser(h.app);
      const { def, other } = await basesOf(u);
      const agent = await knowledgeAgent(u);
      const limited = await u.pat(['agents-all'], {
        knowledge_base_ids: [other],
        provider_permissions: { github: 'read-write' },
        default_provider_permission: 'read',
      });
      expect((await call(h.app, 'GET', `/api/v1/knowledge/bases/${def}`, { token: limited })).statusCode).toBe(403);
      const res = await call(h.app, 'POST', tasksUrl(agent.id), {
        token: limited,
        body: { name: 'Digest', prompt: 'Search every base for anvils.', cronExpression: '0 9 * * 1' },
      });
      expect(res.statusCode, res.body).toBe(201);
      const [row] = await h.database.db.select().from(scheduledTasks).where(eq(scheduledTasks.id, res.json().id));
      expect(row?.runAs).toEqual({
        scopes: ['agents-all'],
        providerPermissions: { github: 'read-write' },
        defaultProviderPermission: 'read',
        allowedKnowledgeBaseIds: [other],
      });
      const run = await runWithScript(u, agent.id, res.json().id, def);
      await expectLimitedRun(limited, agent.id, run, def);
    });

    it("created by the agent's own tasks-create tool in a limited token's chat: the run keeps the limit", async () => {
      const u = await createUser(h.app);
      const { def, other } = await basesOf(u);
      const agent = await knowledgeAgent(u);
      const limited = await u.pat(['agents-all'], { knowledge_base_ids: [other] });
      llm.enqueue(
        {
          toolCalls: [
            {
              name: 'tasks-create',
              arguments: { name: 'Anvils', prompt: 'Search every base for anvils.', cronExpression: '0 9 * * 1' },
            },
          ],
        },
        { content: 'Scheduled.' },
      );
      const chat = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
        token: limited,
        body: { messages: [{ role: 'user', content: 'Every Monday, look for anvils in all my bases.' }] },
      });
      expect(chat.statusCode, chat.body).toBe(200);
      const [task] = await h.database.db
        .select()
        .from(scheduledTasks)
        .where(eq(scheduledTasks.accountId, u.account.id));
      expect(task?.runAs).toMatchObject({ scopes: ['agents-all'], allowedKnowledgeBaseIds: [other] });
      const run = await runWithScript(u, agent.id, task?.id ?? '', def);
      await expectLimitedRun(limited, agent.id, run, def);
    });

    it("changed by a differently limited token: the runs take the changer's set (whoever last wrote it)", async () => {
      const u = await createUser(h.app);
      const { def, other } = await basesOf(u);
      const agent = await knowledgeAgent(u);
      const task = await makeTask(u, agent.id, { prompt: 'Search every base for anvils.' });
      // Written by the session: every base.
      const open = await runWithScript(u, agent.id, task.id, def);
      expect(open.told[0]).toContain('"slug":"anvils"');

      const limited = await u.pat(['agents-all'], { knowledge_base_ids: [other], default_provider_permission: 'read' });
      const put = await call(h.app, 'PUT', `${tasksUrl(agent.id)}/${task.id}`, { token: limited, body: { name: 'x' } });
      expect(put.statusCode, put.body).toBe(200);
      const [row] = await h.database.db.select().from(scheduledTasks).where(eq(scheduledTasks.id, task.id));
      expect(row?.runAs).toEqual({
        scopes: ['agents-all'],
        providerPermissions: {},
        defaultProviderPermission: 'read',
        allowedKnowledgeBaseIds: [other],
      });
      const run = await runWithScript(u, agent.id, task.id, def);
      await expectLimitedRun(limited, agent.id, run, def);
    });

    it('a task written by a token of more scopes runs with the ones a run needs only', async () => {
      const u = await createUser(h.app);
      const { def } = await basesOf(u);
      const agent = await knowledgeAgent(u);
      const wide = await u.pat(['agents-all', 'account', 'connections', 'llm-all']);
      const res = await call(h.app, 'POST', tasksUrl(agent.id), {
        token: wide,
        body: { name: 'n', prompt: 'p', cronExpression: '0 9 * * 1' },
      });
      expect(res.statusCode, res.body).toBe(201);
      const [row] = await h.database.db.select().from(scheduledTasks).where(eq(scheduledTasks.id, res.json().id));
      expect(row?.runAs).toMatchObject({
        scopes: ['account', 'agents-all', 'connections', 'llm-all'],
        allowedKnowledgeBaseIds: null,
      });
      // An unlimited writer's run reaches every base.
      const run = await runWithScript(u, agent.id, res.json().id, def);
      expect(run.told[0]).toContain('"slug":"anvils"');
      // A stored set without agents-all (written by hand, or a scope since taken away) runs nothing at all.
      await h.database.db
        .update(scheduledTasks)
        .set({ runAs: { scopes: ['account'], providerPermissions: {}, defaultProviderPermission: 'read' } })
        .where(eq(scheduledTasks.id, res.json().id));
      await call(h.app, 'POST', `${tasksUrl(agent.id)}/${res.json().id}/run`, as(u));
      const [outcome] = await runJobs();
      expect(outcome).toEqual({
        status: 'failed',
        error: 'ForbiddenError: Missing required scope: agents-all or agents-use',
      });
    });

    it('a task kept in the old shape (provider permissions only) still runs: those kept, no knowledge base', async () => {
      const u = await createUser(h.app);
      const { def } = await basesOf(u);
      const agent = await knowledgeAgent(u);
      const task = await makeTask(u, agent.id, { prompt: 'Search every base for anvils.' });
      await h.database.db
        .update(scheduledTasks)
        .set({ runAs: { providerPermissions: { github: 'read-write' }, defaultProviderPermission: 'read-write' } })
        .where(eq(scheduledTasks.id, task.id));
      const run = await runWithScript(u, agent.id, task.id, def);
      expect(run.told[0]).toContain(`This token may not use knowledge base ${def}`);
      expect(run.told[1]).toContain('This token may not use any knowledge base');
      const text = await conversationText(u.sessionToken, agent.id, run.conversationId);
      expect(text.stored).not.toContain('coyotes');
      // Saving it again stores the writer's whole set: the session's, every base.
      await call(h.app, 'PUT', `${tasksUrl(agent.id)}/${task.id}`, { ...as(u), body: { enabled: true } });
      const again = await runWithScript(u, agent.id, task.id, def);
      expect(again.told[0]).toContain('"slug":"anvils"');
    });
  });

  const ownedTaskUrl = async (o: TestUser, suffix = '') => {
    const agent = await makeAgent(o);
    const task = await makeTask(o, agent.id);
    return `${tasksUrl(agent.id)}/${task.id}${suffix}`;
  };
  guardTests(
    () => h,
    [
      {
        method: 'POST',
        url: tasksUrl('agt_x'),
        scopes: ['agents-all'],
        body: { name: 'g', prompt: 'p', cronExpression: '0 9 * * 1' },
        ownedUrl: async (o) => tasksUrl((await makeAgent(o)).id),
      },
      {
        method: 'GET',
        url: tasksUrl('agt_x'),
        scopes: ['agents-all'],
        ownedUrl: async (o) => tasksUrl((await makeAgent(o)).id),
      },
      { method: 'GET', url: `${tasksUrl('agt_x')}/task_x`, scopes: ['agents-all'], ownedUrl: (o) => ownedTaskUrl(o) },
      {
        method: 'PUT',
        url: `${tasksUrl('agt_x')}/task_x`,
        scopes: ['agents-all'],
        body: { name: 'renamed' },
        ownedUrl: (o) => ownedTaskUrl(o),
      },
      {
        method: 'DELETE',
        url: `${tasksUrl('agt_x')}/task_x`,
        scopes: ['agents-all'],
        ownedUrl: (o) => ownedTaskUrl(o),
      },
      {
        method: 'GET',
        url: `${tasksUrl('agt_x')}/task_x/runs`,
        scopes: ['agents-all'],
        ownedUrl: (o) => ownedTaskUrl(o, '/runs'),
      },
      {
        method: 'POST',
        url: `${tasksUrl('agt_x')}/task_x/run`,
        scopes: ['agents-all'],
        ownedUrl: (o) => ownedTaskUrl(o, '/run'),
      },
    ],
  );
});
