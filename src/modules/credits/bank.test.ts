import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import { accounts, creditHolds, creditTransactions } from '../../db/schema/index.ts';
import { BackgroundTasks } from '../../lib/background.ts';
import { CreditsExhaustedError } from '../../lib/errors.ts';
import { BATCH_MAX, type BankCharge, CreditBank } from './bank.ts';
import { LEASE_BUSY_RATE, LEASE_TTL_MS } from './lease.ts';

const charge = (cost: number, n: number): BankCharge => ({
  type: 'llm',
  cost,
  description: `charge ${n}`,
  model: 'm',
  promptTokens: n,
  completionTokens: 1,
  requestId: `req_${n}`,
});

describe('credit bank: group commit and leases', () => {
  let h: TestHarness;
  const banks: CreditBank[] = [];
  const bank = () => {
    const b = new CreditBank(h.database.asyncCommitDb, h.app.log);
    banks.push(b);
    return b;
  };
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(async () => {
    for (const b of banks) await b.close();
    await h.close();
  });

  const db = () => h.database.db;
  const balanceOf = async (id: string) =>
    (await db().select({ b: accounts.creditBalance }).from(accounts).where(eq(accounts.id, id)))[0]?.b;
  const ledger = (id: string) =>
    db()
      .select()
      .from(creditTransactions)
      .where(eq(creditTransactions.accountId, id))
      .orderBy(asc(creditTransactions.createdAt), asc(creditTransactions.promptTokens));
  const leaseRows = (id: string) => db().select().from(creditHolds).where(eq(creditHolds.accountId, id));

  it('charges queued while a batch is written share one promise, resolved once the last of them is written', async () => {
    const b = bank();
    const u = await createUser(h.app);
    const n = 2 * BATCH_MAX + 1;
    const holds = await Promise.all(Array.from({ length: n }, () => b.hold(u.account.id, 1)));
    // The first BATCH_MAX start a batch at once; the rest queue while it is written: more than one batch holds.
    const first = holds.slice(0, BATCH_MAX).map((hold, i) => b.settle(hold, charge(1, i)));
    const rest = holds.slice(BATCH_MAX).map((hold, i) => b.settle(hold, charge(1, BATCH_MAX + i)));
    expect(new Set(first).size).toBe(1);
    expect(new Set(rest).size).toBe(1);
    expect(rest[0]).not.toBe(first[0]);
    await rest[0];
    // Resolved only once the third batch (the one charge over two full ones) was written too.
    expect(b.stats.batches).toBe(3);
    expect((await ledger(u.account.id)).filter((row) => row.type === 'llm')).toHaveLength(n);
  });

  it('writes a burst of 300 charges in a few batches: one ledger row per charge, and the balance equals the ledger', async () => {
    const b = bank();
    const users = [await createUser(h.app), await createUser(h.app)];
    const holds = await Promise.all(
      Array.from({ length: 300 }, (_, i) => b.hold((users[i % 2] ?? users[0])?.account.id ?? '', 20)),
    );
    // The burst is served from leases: a few takes, not one write per request.
    expect(b.stats.takes).toBeLessThanOrEqual(6);
    // Costs 0..9: a zero cost writes no row.
    const costs = holds.map((_, i) => (i * 7) % 10);
    const written = holds.map((hold, i) => b.settle(hold, charge(costs[i] ?? 0, i)));
    await Promise.all(written);
    expect(b.stats.batches).toBeLessThanOrEqual(2);
    await b.returnIdle();
    for (const [k, u] of users.entries()) {
      const mine = costs.filter((_, i) => i % 2 === k);
      const rows = (await ledger(u.account.id)).filter((r) => r.type === 'llm');
      expect(rows).toHaveLength(mine.filter((c) => c > 0).length);
      expect(new Set(rows.map((r) => r.requestId)).size).toBe(rows.length);
      const spent = mine.reduce((a, c) => a + c, 0);
      expect(rows.reduce((a, r) => a - r.amount, 0)).toBe(spent);
      expect(await balanceOf(u.account.id)).toBe(100000 - spent);
      expect(await leaseRows(u.account.id)).toEqual([]);
    }
  });

  it('numbers balanceAfter in the order of the charges within a batch', async () => {
    const b = bank();
    const u = await createUser(h.app);
    const holds = await Promise.all([1, 2, 3].map(() => b.hold(u.account.id, 50)));
    await Promise.all(holds.map((hold, i) => b.settle(hold, charge([5, 7, 9][i] ?? 0, i))));
    const rows = (await ledger(u.account.id)).filter((r) => r.type === 'llm');
    expect(rows.map((r) => [r.amount, r.balanceAfter])).toEqual([
      [-5, 99995],
      [-7, 99988],
      [-9, 99979],
    ]);
  });

  it('close() writes what is queued and gives every lease back', async () => {
    const b = new CreditBank(h.database.asyncCommitDb, h.app.log);
    const u = await createUser(h.app);
    const holds = await Promise.all(Array.from({ length: 40 }, () => b.hold(u.account.id, 30)));
    expect((await leaseRows(u.account.id)).length).toBeGreaterThan(0);
    const pending = holds.map((hold, i) => b.settle(hold, charge(3, i)));
    await b.close(); // before the batching window has passed
    await Promise.all(pending);
    expect((await ledger(u.account.id)).filter((r) => r.type === 'llm')).toHaveLength(40);
    expect(await balanceOf(u.account.id)).toBe(100000 - 120);
    expect(await leaseRows(u.account.id)).toEqual([]);
  });

  it('gives requests that follow each other closely a lease; draining background work gives it back', async () => {
    const background = new BackgroundTasks(h.app.log);
    // Requests 10 ms apart by the bank's clock, however long the database takes here.
    let clock = Date.now();
    const b = new CreditBank(h.database.asyncCommitDb, h.app.log, background, () => (clock += 10));
    banks.push(b);
    const u = await createUser(h.app);
    for (let i = 0; i < 40; i++) {
      const hold = await b.hold(u.account.id, 20);
      background.track('settle', b.settle(hold, charge(2, i)));
    }
    // One at a time: the first leases its own hold; from the second on, a lease sized from the rate serves them.
    expect(b.stats.takes).toBeLessThanOrEqual(LEASE_BUSY_RATE + 2);
    await background.drain();
    expect(await leaseRows(u.account.id)).toEqual([]);
    expect(await balanceOf(u.account.id)).toBe(100000 - 80);
    expect((await ledger(u.account.id)).filter((r) => r.type === 'llm')).toHaveLength(40);
  });

  it('refuses at a zero balance, admits while above zero, and overdraws by at most one hold', async () => {
    const b = bank();
    const u = await createUser(h.app);
    await db().update(accounts).set({ creditBalance: 25 }).where(eq(accounts.id, u.account.id));
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, () => b.hold(u.account.id, 40)));
    const admitted = outcomes.filter((o) => o.status === 'fulfilled');
    expect(admitted).toHaveLength(1);
    for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(CreditsExhaustedError);
    expect(await balanceOf(u.account.id)).toBe(25 - 40);
    const [hold] = admitted.map((o) => (o as PromiseFulfilledResult<Awaited<ReturnType<CreditBank['hold']>>>).value);
    if (!hold) throw new Error('no hold');
    expect(hold.balanceBefore).toBe(25);
    await b.settle(hold, charge(30, 0));
    await b.returnIdle();
    expect(await balanceOf(u.account.id)).toBe(-5);
    await expect(b.hold(u.account.id, 1)).rejects.toBeInstanceOf(CreditsExhaustedError);
  });

  it('renews a lease a request still holds from, with no charge to write, before it can expire', async () => {
    const b = bank();
    const u = await createUser(h.app);
    const expiry = async () => (await leaseRows(u.account.id))[0]?.expiresAt.getTime() ?? 0;
    const hold = await b.hold(u.account.id, 100); // a long call: its lease must outlive LEASE_TTL_MS
    const first = await expiry();
    expect(first).toBeGreaterThan(Date.now());
    // A third of the lease's lifetime later, by the clock the bank reads (its timers stay real).
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + LEASE_TTL_MS / 3 + 1000 });
    try {
      await expect.poll(expiry, { timeout: 5_000, interval: 50 }).toBeGreaterThanOrEqual(first + LEASE_TTL_MS / 3);
    } finally {
      vi.useRealTimers();
    }
    await b.settle(hold, charge(10, 0));
  });
});

describe('credit bank: an instance that died', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('leaves its leases to expire; the next take on the account gives them back first', async () => {
    const db = h.database.db;
    const u = await createUser(h.app);
    const dead = new CreditBank(h.database.asyncCommitDb, h.app.log);
    const holds = await Promise.all(Array.from({ length: 20 }, () => dead.hold(u.account.id, 100)));
    await Promise.all(holds.slice(0, 10).map((hold, i) => dead.settle(hold, charge(10, i))));
    await dead.close(); // the ten in flight keep its lease: what a crash leaves
    const rows = await db.select().from(creditHolds).where(eq(creditHolds.accountId, u.account.id));
    expect(rows).toHaveLength(1);
    const ledgerSum = async () =>
      (await db.select().from(creditTransactions).where(eq(creditTransactions.accountId, u.account.id))).reduce(
        (a, r) => a + r.amount,
        0,
      );
    const balance = async () =>
      (await db.select().from(accounts).where(eq(accounts.id, u.account.id)))[0]?.creditBalance ?? Number.NaN;
    // Balance plus what is leased equals the ledger at every commit.
    expect((await balance()) + (rows[0]?.amount ?? 0)).toBe(await ledgerSum());

    await db
      .update(creditHolds)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(creditHolds.accountId, u.account.id));
    const next = new CreditBank(h.database.asyncCommitDb, h.app.log);
    const hold = await next.hold(u.account.id, 5);
    expect(hold.balanceBefore).toBe(100000 - 100);
    await next.settle(hold, charge(5, 99));
    await next.close();
    expect(await db.select().from(creditHolds).where(eq(creditHolds.accountId, u.account.id))).toEqual([]);
    expect(await balance()).toBe(await ledgerSum());
    expect(await balance()).toBe(100000 - 105);
  });
});
