import { eq } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { call, createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import { accounts, creditHolds, creditTransactions } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';
import { creditStats, returnIdleLeases } from './service.ts';

// 1 credit per prompt token, 2 per completion token.
const MODELS = 'fake-model=1000000/2000000';

/**
 * Two instances over one database (PGlite or PostgreSQL), each with its own leases, serving the same accounts
 * at once through the gateway.
 */
describe('credit leases on two instances', () => {
  let fake: FakeLlm;
  let h: TestHarness;
  let apps: App[];
  beforeAll(async () => {
    fake = await startFakeLlm();
    h = await createHarness({ LLM_BASE_URL: fake.url, LLM_MODELS: MODELS });
    apps = [h.app, await h.extraApp({})];
  });
  afterAll(async () => {
    await h.close();
    await fake.close();
  });

  const db = () => h.database.db;
  const settled = () =>
    Promise.all(
      apps.map(async (a) => {
        await a.deps.background.drain();
        await returnIdleLeases(a.deps);
      }),
    );
  const balanceOf = async (id: string) =>
    (await db().select({ b: accounts.creditBalance }).from(accounts).where(eq(accounts.id, id)))[0]?.b ?? Number.NaN;
  const ledgerOf = (id: string) => db().select().from(creditTransactions).where(eq(creditTransactions.accountId, id));
  const complete = (app: App, token: string) =>
    call(app, 'POST', '/api/v1/chat/completions', {
      token,
      body: { model: 'fake-model', messages: [{ role: 'user', content: 'q' }], max_tokens: 20 },
    });

  it('serve a burst from leases; once they are given back the balance equals the ledger, one row per charge', async () => {
    const u = await createUser(h.app);
    const token = await u.pat(['llm-all']);
    const takesBefore = apps.map((a) => creditStats(a.deps).takes);
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => complete(apps[i % 2] as App, token)));
    expect(answers.map((r) => r.statusCode)).toEqual(answers.map(() => 200));
    // The fake reports 7 prompt tokens and 1 completion token: 9 credits a request.
    expect(answers.every((r) => r.headers['x-credits-consumed'] === '9')).toBe(true);
    const takes = apps.map((a, i) => creditStats(a.deps).takes - (takesBefore[i] ?? 0));
    expect(takes.reduce((a, b) => a + b, 0)).toBeLessThan(40);
    await Promise.all(apps.map((a) => a.deps.background.drain()));
    // While leases are out, the balance plus what they hold equals the ledger.
    const leased = (await db().select().from(creditHolds).where(eq(creditHolds.accountId, u.account.id))).reduce(
      (a, r) => a + r.amount,
      0,
    );
    const rows = await ledgerOf(u.account.id);
    expect((await balanceOf(u.account.id)) + leased).toBe(rows.reduce((a, r) => a + r.amount, 0));
    await settled();
    const after = await ledgerOf(u.account.id);
    expect(after.filter((r) => r.type === 'llm')).toHaveLength(200);
    expect(new Set(after.map((r) => r.requestId)).size).toBe(after.length);
    expect(await balanceOf(u.account.id)).toBe(100000 - 200 * 9);
    expect(await balanceOf(u.account.id)).toBe(after.reduce((a, r) => a + r.amount, 0));
    expect(await db().select().from(creditHolds).where(eq(creditHolds.accountId, u.account.id))).toEqual([]);
  }, 60_000);

  it('/metrics reports the instance’s lease takes, batches and the requests that waited on a take', async () => {
    const app = apps[0] as App;
    const u = await createUser(app);
    const token = await u.pat(['llm-all']);
    await Promise.all(Array.from({ length: 20 }, () => complete(app, token)));
    await app.deps.background.drain();
    const text = (await call(app, 'GET', '/metrics')).body;
    const figure = (pattern: RegExp) => Number(pattern.exec(text)?.[1]);
    const stats = creditStats(app.deps);
    // The first of the burst, at least, waited on the take that made the account's lease.
    expect(stats.waits).toBeGreaterThanOrEqual(1);
    expect(figure(/^credit_lease_waits (\d+)$/m)).toBe(stats.waits);
    expect(figure(/^credit_writes\{kind="lease_takes"\} (\d+)$/m)).toBe(stats.takes);
    expect(figure(/^credit_writes\{kind="batches"\} (\d+)$/m)).toBe(stats.batches);
    expect(figure(/^credit_writes\{kind="charges"\} (\d+)$/m)).toBe(stats.charges);
    await settled();
  });

  it('never overdraw an account by more than one request, from both instances at once', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3000 }),
        fc.array(
          fc.record({
            instance: fc.integer({ min: 0, max: 1 }),
            prompt: fc.integer({ min: 0, max: 20 }),
            completion: fc.integer({ min: 0, max: 20 }),
          }),
          { minLength: 2, maxLength: 40 },
        ),
        async (start, requests) => {
          const u = await createUser(h.app);
          const token = await u.pat(['llm-all']);
          await db().update(accounts).set({ creditBalance: start }).where(eq(accounts.id, u.account.id));
          fake.enqueue(...requests.map(({ prompt, completion }) => ({ content: 'x', usage: { prompt, completion } })));
          const statuses = await Promise.all(
            requests.map(async (r) => (await complete(apps[r.instance] as App, token)).statusCode),
          );
          fake.reset();
          expect(statuses.every((s) => s === 200 || s === 402)).toBe(true);
          await settled();
          const final = await balanceOf(u.account.id);
          const rows = (await ledgerOf(u.account.id)).filter((r) => r.type === 'llm');
          const spent = rows.reduce((s, r) => s - r.amount, 0);
          expect(final).toBe(start - spent);
          const maxCost = Math.max(...requests.map((x) => x.prompt + 2 * x.completion));
          expect(final).toBeGreaterThanOrEqual(-maxCost);
          expect(rows.length).toBeLessThanOrEqual(statuses.filter((s) => s === 200).length);
        },
      ),
      { numRuns: Number(process.env.FC_RUNS ?? 8) },
    );
  }, 180_000);
});
