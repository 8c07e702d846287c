import { eq, inArray, sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeOAuthProvider, fakeProvidersEnv, startFakeOAuthProvider } from '../test/fakes/oauth-provider.ts';
import { call, createHarness, createUser, type TestHarness } from '../test/harness.ts';
import { enqueueJob, JOB_CATALOG } from './composition.ts';
import {
  accounts,
  connections,
  creditHolds,
  jobs,
  oauthArtifacts,
  sessions,
  signInAttempts,
  toolTestRuns,
} from './db/schema/index.ts';
import { JobWorker } from './jobs/worker.ts';
import { connectAcme } from './modules/connections/test-support.ts';
import { placeHold } from './modules/credits/repo.ts';

/**
 * The service's own jobs, enqueued and run through the queue and a worker as the scheduler would have them
 * run, over a database of this file's own (they act on every account's rows).
 */
describe('service jobs', () => {
  let h: TestHarness;
  let fake: FakeOAuthProvider;
  let worker: JobWorker;
  beforeAll(async () => {
    fake = await startFakeOAuthProvider();
    h = await createHarness(fakeProvidersEnv(fake), { privateDatabase: true });
    worker = new JobWorker({
      deps: h.app.deps,
      catalog: JOB_CATALOG,
      concurrency: 2,
      pollIntervalMs: 20,
      leaseMs: 30_000,
    });
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  const db = () => h.database.db;
  const jobRow = async (id: string | undefined) =>
    (
      await db()
        .select()
        .from(jobs)
        .where(eq(jobs.id, id ?? ''))
    )[0];

  it('connections.refresh-expiring refreshes a token nearing expiry through the provider, and leaves fresh ones', async () => {
    const u = await createUser(h.app);
    const soon = await connectAcme(h.app, u);
    const fresh = await connectAcme(h.app, await createUser(h.app));
    await db()
      .update(connections)
      .set({ expiresAt: new Date(Date.now() + 4 * 60_000) })
      .where(eq(connections.id, soon));
    const before = await db()
      .select()
      .from(connections)
      .where(inArray(connections.id, [soon, fresh]));
    const tokenOf = (rows: typeof before, id: string) =>
      h.keyRing.decrypt(rows.find((r) => r.id === id)?.accessTokenEnc ?? '', id);
    fake.reset();

    const id = await enqueueJob(db(), 'connections.refresh-expiring', {});
    expect(await worker.runOnce()).toBe(1);
    expect(await jobRow(id)).toMatchObject({ status: 'succeeded', attempts: 1, lastError: null });
    expect(fake.counts.refresh).toBe(1);
    const after = await db()
      .select()
      .from(connections)
      .where(inArray(connections.id, [soon, fresh]));
    expect(tokenOf(after, soon)).not.toBe(tokenOf(before, soon));
    expect(after.find((r) => r.id === soon)).toMatchObject({ status: 'active', refreshFailures: 0 });
    expect(after.find((r) => r.id === soon)?.expiresAt?.getTime()).toBeGreaterThan(Date.now() + 30 * 60_000);
    expect(tokenOf(after, fresh)).toBe(tokenOf(before, fresh));
  });

  it('credits.release-expired-holds gives back a hold whose request never settled', async () => {
    const u = await createUser(h.app);
    const holdId = `hold_job_${u.account.id}`;
    await placeHold(db(), { id: holdId, accountId: u.account.id, amount: 900, expiresAt: new Date(Date.now() - 1000) });
    const live = `hold_live_${u.account.id}`;
    await placeHold(db(), { id: live, accountId: u.account.id, amount: 100, expiresAt: new Date(Date.now() + 60_000) });
    const balance = async () =>
      (await db().select().from(accounts).where(eq(accounts.id, u.account.id)))[0]?.creditBalance;
    expect(await balance()).toBe(99_000);

    const id = await enqueueJob(db(), 'credits.release-expired-holds', {});
    expect(await worker.runOnce()).toBe(1);
    expect(await jobRow(id)).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(await balance()).toBe(99_900);
    const holds = await db().select().from(creditHolds).where(eq(creditHolds.accountId, u.account.id));
    expect(holds.map((hold) => hold.id)).toEqual([live]);
  });

  it('oauth.sweep-expired deletes authorization artifacts a minute past their expiry, and keeps the others', async () => {
    const artifact = (idHash: string, expiresAt: Date | null) => ({ model: 'Session', idHash, payload: {}, expiresAt });
    const tag = `sweep-${Date.now()}`;
    await db()
      .insert(oauthArtifacts)
      .values([
        artifact(`${tag}-old`, new Date(Date.now() - 120_000)),
        artifact(`${tag}-just-expired`, new Date(Date.now() - 10_000)),
        artifact(`${tag}-live`, new Date(Date.now() + 600_000)),
      ]);
    const id = await enqueueJob(db(), 'oauth.sweep-expired', {});
    expect(await worker.runOnce()).toBe(1);
    expect(await jobRow(id)).toMatchObject({ status: 'succeeded', attempts: 1 });
    const left = await db()
      .select({ idHash: oauthArtifacts.idHash })
      .from(oauthArtifacts)
      .where(sql`${oauthArtifacts.idHash} LIKE ${`${tag}-%`}`);
    expect(left.map((r) => r.idHash).sort()).toEqual([`${tag}-just-expired`, `${tag}-live`]);
  });

  it('auth.sweep-sign-in-attempts and tools.sweep-test-runs delete the windows, sessions and runs that ended, and keep the others', async () => {
    const tag = `sweep-${Date.now()}`;
    await db()
      .insert(signInAttempts)
      .values([
        { key: `${tag}-spent`, count: 3, resetAt: new Date(Date.now() - 1000) },
        { key: `${tag}-live`, count: 3, resetAt: new Date(Date.now() + 60_000) },
      ]);
    const u = await createUser(h.app);
    const tool = await call(h.app, 'POST', '/api/v1/tools', {
      token: u.sessionToken,
      body: { name: 'sweep', language: 'javascript', parameters: { type: 'object' }, code: 'return 1;' },
    });
    const run = (id: string, expiresAt: Date) => ({
      id: `${tag}-${id}`,
      accountId: u.account.id,
      toolId: tool.json().id,
      runEnc: 'v1.x.y.z',
      expiresAt,
    });
    await db()
      .insert(toolTestRuns)
      .values([run('expired', new Date(Date.now() - 1000)), run('live', new Date(Date.now() + 60_000))]);
    const session = (id: string, expiresAt: Date) => ({
      id: `${tag}-${id}`,
      accountId: u.account.id,
      tokenHash: `${tag}-${id}`,
      expiresAt,
    });
    await db()
      .insert(sessions)
      .values([session('expired', new Date(Date.now() - 1000)), session('live', new Date(Date.now() + 60_000))]);
    for (const type of ['auth.sweep-sign-in-attempts', 'tools.sweep-test-runs'] as const) {
      const id = await enqueueJob(db(), type, {});
      expect(await worker.runOnce()).toBe(1);
      expect(await jobRow(id)).toMatchObject({ status: 'succeeded', attempts: 1 });
    }
    const windows = await db()
      .select({ key: signInAttempts.key })
      .from(signInAttempts)
      .where(sql`${signInAttempts.key} LIKE ${`${tag}-%`}`);
    expect(windows.map((r) => r.key)).toEqual([`${tag}-live`]);
    const runs = await db()
      .select({ id: toolTestRuns.id })
      .from(toolTestRuns)
      .where(sql`${toolTestRuns.id} LIKE ${`${tag}-%`}`);
    expect(runs.map((r) => r.id)).toEqual([`${tag}-live`]);
    const left = await db().select({ id: sessions.id }).from(sessions).where(eq(sessions.accountId, u.account.id));
    // The user's own sign-in session (createUser's) is live too.
    expect(left.map((r) => r.id).filter((id) => id.startsWith(tag))).toEqual([`${tag}-live`]);
  });

  it('jobs.cleanup deletes succeeded jobs after JOBS_RETENTION_DAYS and dead ones after JOBS_DEAD_RETENTION_DAYS', async () => {
    expect(h.config.jobs).toMatchObject({ retentionDays: 7, deadRetentionDays: 30 });
    const aged = async (status: 'succeeded' | 'dead' | 'queued', days: number) => {
      const id = await enqueueJob(
        db(),
        'credits.release-expired-holds',
        {},
        { runAt: new Date(Date.now() + 3600_000) },
      );
      await db()
        .update(jobs)
        .set({
          status,
          finishedAt: status === 'queued' ? null : sql`now() - ${days} * interval '1 day'`,
          createdAt: sql`now() - ${days} * interval '1 day'`,
        })
        .where(eq(jobs.id, id ?? ''));
      return id ?? '';
    };
    const old = [await aged('succeeded', 8), await aged('dead', 31)];
    const kept = [await aged('succeeded', 6), await aged('dead', 8), await aged('queued', 40)];

    const id = await enqueueJob(db(), 'jobs.cleanup', {});
    expect(await worker.runOnce()).toBe(1);
    expect(await jobRow(id)).toMatchObject({ status: 'succeeded' });
    const left = (
      await db()
        .select({ id: jobs.id })
        .from(jobs)
        .where(inArray(jobs.id, [...old, ...kept]))
    ).map((r) => r.id);
    expect(left.sort()).toEqual([...kept].sort());
  });
});
