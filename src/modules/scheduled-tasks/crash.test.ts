import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { call, createHarness, createUser, TEST_ENCRYPTION_KEYS, type TestHarness } from '../../../test/harness.ts';
import { startScript } from '../../../test/server-process.ts';
import { testDatabaseTarget } from '../../../test/test-database.ts';
import { accounts, creditHolds, creditTransactions, scheduledTaskRuns } from '../../db/schema/index.ts';
import { JobWorker } from '../../jobs/worker.ts';
import { releaseExpiredHolds } from '../credits/service.ts';
import { taskJobs } from './jobs.ts';
import { dispatchDueTasks, INTERRUPTED_ERROR } from './runs.ts';

const MODELS = 'fake-model=1000000/2000000';

/**
 * A worker process killed with SIGKILL while a task run waits on the model: the run is recorded as failed once
 * the job's lease runs out and another worker claims it, the prompt is never sent again, and nothing is
 * charged (the dead process's credit lease goes back when it expires). Two processes on one database: this
 * needs PostgreSQL (the embedded database serves one process at a time).
 */
describe.skipIf(testDatabaseTarget().kind !== 'pg')('a scheduled task run interrupted by a crash', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  beforeAll(async () => {
    llm = await startFakeLlm();
    h = await createHarness({ LLM_BASE_URL: llm.url, LLM_MODELS: MODELS }, { privateDatabase: true });
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
  });

  it('fails the run without running it again or charging for it', async () => {
    const u = await createUser(h.app);
    const agent = (
      await call(h.app, 'POST', '/api/v1/agents', { token: u.sessionToken, body: { name: 'Night' } })
    ).json();
    const task = (
      await call(h.app, 'POST', `/api/v1/agents/${agent.id}/scheduled-tasks`, {
        token: u.sessionToken,
        body: { name: 'Nightly', prompt: 'Check the servers.', cronExpression: '* * * * *' },
      })
    ).json();
    expect(await dispatchDueTasks(h.app.deps, new Date(Date.now() + 2 * 60_000))).toBe(1);
    const balance = (await h.database.db.select().from(accounts).where(eq(accounts.id, u.account.id)))[0]
      ?.creditBalance;
    // The model takes its time: the worker is killed while it waits.
    llm.enqueue({ content: 'never delivered', delayMs: 60_000 });

    const worker = startScript('test/job-worker-process.ts', {
      DATA_DIR: h.config.dataDir,
      DATABASE_URL: h.config.databaseUrl ?? '',
      ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS,
      LLM_BASE_URL: llm.url,
      LLM_MODELS: MODELS,
      LOG_LEVEL: 'warn',
      WORKER_CATALOG: 'tasks',
      JOBS_LEASE_MS: '1000',
      JOBS_POLL_INTERVAL_MS: '50',
    });
    await expect
      .poll(() => llm.requests.length, { timeout: 60_000, interval: 50, message: `no model call:\n${worker.stderr()}` })
      .toBe(1);
    const [running] = await h.database.db.select().from(scheduledTaskRuns).where(eq(scheduledTaskRuns.taskId, task.id));
    expect(running).toMatchObject({ status: 'running', attempts: 1, conversationId: expect.stringMatching(/^conv_/) });
    expect(await worker.kill()).toBe('SIGKILL');

    const rescuer = new JobWorker({
      deps: h.app.deps,
      catalog: taskJobs,
      concurrency: 1,
      pollIntervalMs: 20,
      leaseMs: 30_000,
    });
    const deadline = Date.now() + 30_000;
    while ((await rescuer.runOnce()) === 0) {
      if (Date.now() > deadline) throw new Error('the run was not claimed again');
      await new Promise((r) => setTimeout(r, 50));
    }
    const [failed] = await h.database.db.select().from(scheduledTaskRuns).where(eq(scheduledTaskRuns.taskId, task.id));
    expect(failed).toMatchObject({ status: 'failed', error: INTERRUPTED_ERROR, attempts: 1, creditsConsumed: 0 });
    expect(llm.requests).toHaveLength(1);

    // Nothing charged: once the dead process's lease expires and is swept, the balance is whole again.
    await h.database.db
      .update(creditHolds)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(creditHolds.accountId, u.account.id));
    await releaseExpiredHolds({ db: h.database.db });
    expect(
      await h.database.db.select().from(creditTransactions).where(eq(creditTransactions.accountId, u.account.id)),
    ).toEqual([expect.objectContaining({ type: 'grant' })]);
    expect((await h.database.db.select().from(accounts).where(eq(accounts.id, u.account.id)))[0]?.creditBalance).toBe(
      balance,
    );
  }, 120_000);
});
