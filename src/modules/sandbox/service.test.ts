import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { accounts, creditTransactions } from '../../db/schema/index.ts';
import { runBilled, sandboxCost } from './service.ts';

/** Billing of sandbox runs (SPEC §8): per started second, at least one, at the language's rate; 402 at zero. */
describe('billed sandbox runs', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  /** Python's first run loads Pyodide: seconds of CPU, many more on a machine running other suites. */
  const PY = { timeout: 90_000 };
  // Charges are written after the answer, with the next batch: wait for it before reading the books.
  const balanceOf = async (id: string) => {
    await h.app.deps.background.drain();
    return (await h.database.db.select({ b: accounts.creditBalance }).from(accounts).where(eq(accounts.id, id)))[0]?.b;
  };
  const sandboxRows = async (u: TestUser) => {
    await h.app.deps.background.drain();
    return h.database.db
      .select()
      .from(creditTransactions)
      .where(and(eq(creditTransactions.accountId, u.account.id), eq(creditTransactions.type, 'sandbox')));
  };

  it('the sandbox is not started at boot', async () => {
    const fresh = await h.extraApp();
    expect(fresh.deps.sandbox.started).toBe(false);
  });

  it('a short JavaScript run costs one second at 2 credits, as one sandbox transaction', async () => {
    const u = await createUser(h.app);
    const before = await balanceOf(u.account.id);
    const r = await runBilled(
      u.ctx,
      { language: 'javascript', code: 'return args.n + 1', args: { n: 41 }, secrets: {} },
      { description: 'Tool weather test' },
    );
    expect(r).toMatchObject({ result: 42, error: null, creditsCharged: 2 });
    expect(await balanceOf(u.account.id)).toBe((before ?? 0) - 2);
    const rows = await sandboxRows(u);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ amount: -2, type: 'sandbox', description: 'Tool weather test (javascript, 1 s)' });
  });

  it('an infinite loop is stopped at its limit and billed for every started second of it', async () => {
    const u = await createUser(h.app);
    const before = (await balanceOf(u.account.id)) ?? 0;
    const r = await runBilled(u.ctx, {
      language: 'typescript',
      code: 'let i: number = 0; while (true) { i++; }',
      args: {},
      secrets: {},
      timeoutMs: 1200,
    });
    expect(r.error?.name).toBe('TimeoutError');
    expect(r.durationMs).toBeGreaterThanOrEqual(1200);
    expect(r.creditsCharged).toBe(sandboxCost(r.durationMs, 2));
    expect(r.creditsCharged).toBeGreaterThanOrEqual(4);
    expect(await balanceOf(u.account.id)).toBe(before - r.creditsCharged);
    expect((await sandboxRows(u)).map((row) => row.amount)).toEqual([-r.creditsCharged]);
  });

  it(
    'Python runs in the process sandbox at 4 credits a second; a stopped loop is billed for its time',
    PY,
    async () => {
      const u = await createUser(h.app);
      const before = (await balanceOf(u.account.id)) ?? 0;
      const ok = await runBilled(u.ctx, {
        language: 'python',
        code: 'result = args["n"] * 2',
        args: { n: 21 },
        secrets: {},
      });
      expect(ok).toMatchObject({ result: 42, error: null, creditsCharged: 4 });
      const loop = await runBilled(u.ctx, {
        language: 'python',
        code: 'while True:\n    pass',
        args: {},
        secrets: {},
        timeoutMs: 1500,
      });
      expect(loop.error?.name).toBe('TimeoutError');
      expect(loop.creditsCharged).toBe(sandboxCost(loop.durationMs, 4));
      expect(loop.creditsCharged).toBeGreaterThanOrEqual(8);
      expect(await balanceOf(u.account.id)).toBe(before - 4 - loop.creditsCharged);
      expect((await sandboxRows(u)).map((row) => row.description).sort()).toEqual(
        [`Code sandbox run (python, ${loop.creditsCharged / 4} s)`, 'Code sandbox run (python, 1 s)'].sort(),
      );
    },
  );

  it('402 at a zero balance: nothing runs and nothing is charged', async () => {
    const u = await createUser(h.app);
    await h.database.db.update(accounts).set({ creditBalance: 0 }).where(eq(accounts.id, u.account.id));
    await expect(
      runBilled(u.ctx, { language: 'javascript', code: 'return 1', args: {}, secrets: {} }),
    ).rejects.toMatchObject({ statusCode: 402, name: 'CreditsExhaustedError' });
    expect(await balanceOf(u.account.id)).toBe(0);
    expect(await sandboxRows(u)).toHaveLength(0);
  });

  it('code that does not compile costs nothing', async () => {
    const u = await createUser(h.app);
    const before = await balanceOf(u.account.id);
    const r = await runBilled(u.ctx, { language: 'javascript', code: 'return (', args: {}, secrets: {} });
    expect(r).toMatchObject({ error: { name: 'SyntaxError' }, creditsCharged: 0 });
    expect(await balanceOf(u.account.id)).toBe(before);
    expect(await sandboxRows(u)).toHaveLength(0);
  });

  it('the rates are settings', async () => {
    const dear = await h.extraApp({ SANDBOX_CREDITS_PER_SECOND: '7' });
    const u = await createUser(dear);
    const r = await runBilled(u.ctx, { language: 'javascript', code: 'return 1', args: {}, secrets: {} });
    expect(r.creditsCharged).toBe(7);
  });

  it('a memory bomb is stopped while other requests keep answering', async () => {
    // A roomier cap: filling it takes seconds, so the requests below surely run while it grows.
    const roomy = await h.extraApp({ SANDBOX_MEMORY_MB: '512' });
    const u = await createUser(roomy);
    let settled = false;
    const bomb = runBilled(u.ctx, {
      language: 'javascript',
      code: 'const keep = []; while (true) keep.push(new Array(50000).fill("x".repeat(64)));',
      args: {},
      secrets: {},
    }).finally(() => {
      settled = true;
    });
    const answered: number[] = [];
    for (let i = 0; i < 5; i++) {
      answered.push((await call(roomy, 'GET', '/api/v1/accounts/me', { token: u.sessionToken })).statusCode);
    }
    expect(answered).toEqual([200, 200, 200, 200, 200]);
    expect(settled).toBe(false);
    const r = await bomb;
    expect(r.error).toEqual({ name: 'MemoryLimitError', message: 'The run used more than its 512 MB of memory' });
    expect(r.creditsCharged).toBe(sandboxCost(r.durationMs, 2));
  });

  it('a Python memory bomb is stopped while other requests keep answering', PY, async () => {
    const u = await createUser(h.app);
    // A process already loaded, so the bomb starts at once.
    await runBilled(u.ctx, { language: 'python', code: 'result = 1', args: {}, secrets: {} });
    let settled = false;
    const bomb = runBilled(u.ctx, {
      language: 'python',
      code: 'import time\nkeep = []\nwhile True:\n    keep.append(bytearray(4 * 1024 * 1024))\n    time.sleep(0.02)',
      args: {},
      secrets: {},
    }).finally(() => {
      settled = true;
    });
    const answered: number[] = [];
    for (let i = 0; i < 5; i++) {
      answered.push((await call(h.app, 'GET', '/api/v1/accounts/me', { token: u.sessionToken })).statusCode);
    }
    expect(answered).toEqual([200, 200, 200, 200, 200]);
    expect(settled).toBe(false);
    const r = await bomb;
    expect(r.error?.name).toBe('MemoryLimitError');
    expect(r.creditsCharged).toBe(sandboxCost(r.durationMs, 4));
  });
});
