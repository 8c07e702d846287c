import { randomBytes } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import { rowsOf } from '../../db/rows.ts';
import { accounts, creditHolds, creditTransactions } from '../../db/schema/index.ts';
import { BATCH_MAX, type BankCharge, type BankHold, CreditBank } from './bank.ts';
import { LEASE_MAX_CREDITS } from './lease.ts';
import { adjustBalance } from './repo.ts';

const charge = (cost: number, n: number): BankCharge => ({
  type: 'llm',
  cost,
  description: `charge ${n}`,
  model: 'm',
  promptTokens: n,
  completionTokens: 1,
  requestId: `req_${n}`,
});

/**
 * The bounds of the credit bank, on a real database (PGlite, or PostgreSQL with TEST_DB=pg): how a lease is
 * sized and topped up, what caps it, how many charges one transaction writes, and what a failed batch does.
 */
describe('credit bank: lease sizing, batch bound and retries', () => {
  let h: TestHarness;
  const banks: CreditBank[] = [];
  /** A bank whose rate clock stands still unless a test moves it: sizing depends on no real timing. */
  const bank = (clock: () => number = () => 1_000_000) => {
    const b = new CreditBank(h.database.asyncCommitDb, h.app.log, undefined, clock);
    banks.push(b);
    return b;
  };
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(async () => {
    for (const b of banks) await b.close().catch(() => {});
    await h.close();
  });

  const db = () => h.database.db;
  const balanceOf = async (id: string) =>
    (await db().select({ b: accounts.creditBalance }).from(accounts).where(eq(accounts.id, id)))[0]?.b ?? Number.NaN;
  const leased = async (id: string) =>
    (await db().select().from(creditHolds).where(eq(creditHolds.accountId, id))).reduce((a, r) => a + r.amount, 0);
  const charges = (id: string) =>
    db()
      .select()
      .from(creditTransactions)
      .where(and(eq(creditTransactions.accountId, id), eq(creditTransactions.type, 'llm')));
  const ledgerSum = async (id: string) =>
    (await db().select().from(creditTransactions).where(eq(creditTransactions.accountId, id))).reduce(
      (a, r) => a + r.amount,
      0,
    );
  /** Sets the balance through the ledger (a grant or a refund row), so it still equals the ledger. */
  const setBalance = async (id: string, creditBalance: number) => {
    const delta = creditBalance - (await balanceOf(id));
    await adjustBalance(db(), { accountId: id, amount: delta, type: delta > 0 ? 'grant' : 'refund' });
  };
  /** Every credit is in the balance, a lease row or a ledger row: balance + leased == ledger. */
  const expectWhole = async (id: string) =>
    expect((await balanceOf(id)) + (await leased(id))).toBe(await ledgerSum(id));

  it('tops a lease that runs low up from the balance, sized from the account’s recent rate, before it runs out', async () => {
    const b = bank();
    const u = await createUser(h.app);
    const id = u.account.id;
    // Alone, a request leases exactly its own hold.
    const h1 = await b.hold(id, 100);
    expect([b.stats.takes, await leased(id), await balanceOf(id)]).toEqual([1, 100, 99_900]);
    // Overlapping the first, it takes the rate of the last second (2 requests, 200 credits): 200 more.
    const h2 = await b.hold(id, 100);
    expect([b.stats.takes, await leased(id), await balanceOf(id)]).toEqual([2, 300, 99_700]);
    // Served from the lease in memory; it leaves the lease below half of what its take left free (200), so a
    // top-up to the rate (now 300 credits a second) starts in the background.
    const h3 = await b.hold(id, 100);
    expect(b.stats.takes).toBe(3);
    // The next request finds its credits there: no take on its path.
    const h4 = await b.hold(id, 100);
    expect([b.stats.takes, await leased(id), await balanceOf(id)]).toEqual([3, 600, 99_400]);
    // Each was admitted with the balance users see: nothing answered yet (a hold in flight is not a charge).
    expect([h1, h2, h3, h4].map((x) => x.balanceBefore)).toEqual([100_000, 100_000, 100_000, 100_000]);

    await Promise.all([h1, h2, h3, h4].map((x, i) => b.settle(x, charge(30, i))));
    await expectWhole(id);
    await b.returnIdle();
    expect(await leased(id)).toBe(0);
    expect(await balanceOf(id)).toBe(100_000 - 4 * 30);
    expect((await charges(id)).map((r) => r.amount)).toEqual([-30, -30, -30, -30]);
  });

  it('tops a steady stream’s lease up ahead of need: no request waits on a take once the lease is sized', async () => {
    let clock = 1_000_000;
    const b = bank(() => clock);
    const u = await createUser(h.app);
    const id = u.account.id;
    // 200 requests a second (5 ms apart by the bank's clock), 10 in flight, each costing its whole hold: the
    // lease is spent quickly and topped up again and again.
    const inFlight: Array<{ hold: BankHold; n: number }> = [];
    let waitsAfterWarmUp = 0;
    for (let n = 0; n < 400; n++) {
      clock += 5;
      if (n === 200) waitsAfterWarmUp = b.stats.waits; // the rate is known: a second of requests
      inFlight.push({ hold: await b.hold(id, 50), n });
      if (inFlight.length > 10) {
        const done = inFlight.shift();
        if (done) void b.settle(done.hold, charge(50, done.n));
      }
      await new Promise((r) => setTimeout(r, 1)); // the database answers meanwhile, as between real requests
    }
    expect(b.stats.waits - waitsAfterWarmUp).toBe(0);
    expect(b.stats.takes).toBeGreaterThan(3);
    await Promise.all(inFlight.map((f) => b.settle(f.hold, charge(50, f.n))));
    await b.returnIdle();
    expect(await leased(id)).toBe(0);
    expect(await balanceOf(id)).toBe(100_000 - 400 * 50);
    expect(await charges(id)).toHaveLength(400);
    await expectWhole(id);
  });

  it('never leases more than half of what is available, however high the rate; a request’s own hold still goes', async () => {
    const b = bank();
    const u = await createUser(h.app);
    const id = u.account.id;
    await setBalance(id, 10_000);
    // A large request alone makes the recent rate 8,000 credits; it costs nothing and its lease goes back.
    const big = await b.hold(id, 8000);
    await b.settle(big, charge(0, 0));
    expect([await balanceOf(id), await leased(id)]).toEqual([10_000, 0]);

    // Following it within the second, the next request's lease is sized from the rate (8,001 credits), bounded
    // by half of the 10,000 available: 5,000. The one after is served from it in memory.
    const h1 = await b.hold(id, 1);
    expect([await leased(id), await balanceOf(id)]).toEqual([5000, 5000]);
    const h2 = await b.hold(id, 1);
    expect([b.stats.takes, await leased(id), await balanceOf(id)]).toEqual([2, 5000, 5000]);
    // A hold larger than half of what is available is still admitted whole (balance + free > 0): it takes
    // exactly its need, 5,000, of which 4,998 were free in the lease already.
    const h3 = await b.hold(id, 5000);
    expect([await leased(id), await balanceOf(id)]).toEqual([5002, 4998]);
    expect(h3.balanceBefore).toBe(10_000);

    await Promise.all([h1, h2, h3].map((x, i) => b.settle(x, charge(1, i + 1))));
    await b.returnIdle();
    expect([await leased(id), await balanceOf(id)]).toEqual([0, 10_000 - 3]);
    await expectWhole(id);
  });

  it('caps what a lease takes at LEASE_MAX_CREDITS', async () => {
    const b = bank();
    const u = await createUser(h.app);
    const id = u.account.id;
    await setBalance(id, 10 * LEASE_MAX_CREDITS);
    const big = await b.hold(id, 3 * LEASE_MAX_CREDITS);
    await b.settle(big, charge(0, 0));
    // The rate asks for 3 × LEASE_MAX_CREDITS + 1 and half of the balance is 5 ×: the cap decides.
    const h1 = await b.hold(id, 1);
    expect(await leased(id)).toBe(LEASE_MAX_CREDITS);
    const h2 = await b.hold(id, 1); // served from the lease
    expect(await leased(id)).toBe(LEASE_MAX_CREDITS);
    expect(await balanceOf(id)).toBe(10 * LEASE_MAX_CREDITS - LEASE_MAX_CREDITS);
    expect(b.free(id)).toBe(LEASE_MAX_CREDITS - 2);
    await Promise.all([h1, h2].map((x, i) => b.settle(x, charge(2, i + 1))));
    await b.returnIdle();
    expect(await balanceOf(id)).toBe(10 * LEASE_MAX_CREDITS - 4);
    await expectWhole(id);
  });

  it(`writes a burst larger than BATCH_MAX (${BATCH_MAX}) in several transactions within the bound, one row per charge`, async () => {
    const b = bank();
    const u = await createUser(h.app);
    const id = u.account.id;
    const n = 2 * BATCH_MAX + BATCH_MAX / 2;
    const holds = await Promise.all(Array.from({ length: n }, () => b.hold(id, 10)));
    const cost = (i: number) => 1 + (i % 7);
    await Promise.all(holds.map((x, i) => b.settle(x, charge(cost(i), i))));
    // The rows one transaction wrote share its id (xmin): each batch is one transaction.
    const result = await db().execute(sql`
      SELECT xmin::text AS tx, count(*)::int AS n FROM credit_transactions
      WHERE account_id = ${id} AND type = 'llm' GROUP BY 1`);
    const perTransaction = rowsOf<{ n: number }>(result).map((r) => Number(r.n));
    expect(perTransaction.reduce((a, x) => a + x, 0)).toBe(n);
    expect(Math.max(...perTransaction)).toBeLessThanOrEqual(BATCH_MAX);
    expect(perTransaction.length).toBeGreaterThanOrEqual(Math.ceil(n / BATCH_MAX));
    expect(perTransaction.length).toBeLessThanOrEqual(6);
    // None merged, none lost, none twice: each charge is its own row with its own amount.
    const rows = await charges(id);
    expect(rows).toHaveLength(n);
    const byRequest = new Map(rows.map((r) => [r.requestId, r.amount]));
    expect(byRequest.size).toBe(n);
    for (let i = 0; i < n; i++) expect(byRequest.get(`req_${i}`)).toBe(-cost(i));
    await b.returnIdle();
    const spent = Array.from({ length: n }, (_, i) => cost(i)).reduce((a, x) => a + x, 0);
    expect(await balanceOf(id)).toBe(100_000 - spent);
    await expectWhole(id);
  }, 60_000);

  /**
   * A trigger that fails the batch's transaction with a serialization failure (SQLSTATE 40001) the first
   * `times` times it inserts a ledger row of this account: the database rolls back the whole statement (ledger
   * rows, the lease's row and the balance), as it would after a real conflict. A sequence counts the attempts:
   * it is not rolled back with them.
   */
  async function failBatches(accountId: string, times: number): Promise<() => Promise<void>> {
    const s = randomBytes(4).toString('hex');
    await db().execute(sql.raw(`CREATE SEQUENCE fail_seq_${s}`));
    await db().execute(
      sql.raw(`CREATE FUNCTION fail_fn_${s}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.account_id = '${accountId}' THEN
            IF nextval('fail_seq_${s}') <= ${times} THEN
              RAISE EXCEPTION 'provoked serialization failure' USING ERRCODE = '40001';
            END IF;
          END IF;
          RETURN NEW;
        END $$`),
    );
    await db().execute(
      sql.raw(
        `CREATE TRIGGER fail_tr_${s} BEFORE INSERT ON credit_transactions FOR EACH ROW EXECUTE FUNCTION fail_fn_${s}()`,
      ),
    );
    return async () => {
      await db().execute(sql.raw(`DROP TRIGGER fail_tr_${s} ON credit_transactions`));
      await db().execute(sql.raw(`DROP FUNCTION fail_fn_${s}()`));
      await db().execute(sql.raw(`DROP SEQUENCE fail_seq_${s}`));
    };
  }

  it('retries a batch whose transaction failed: every charge written once, the lease and balance charged once', async () => {
    const b = bank();
    const u = await createUser(h.app);
    const id = u.account.id;
    const holds = await Promise.all(Array.from({ length: 20 }, () => b.hold(id, 40)));
    await b.takesDone(); // a top-up ahead of need may still be on its way
    const leasedBefore = await leased(id);
    const undo = await failBatches(id, 2);
    try {
      await Promise.all(holds.map((x, i) => b.settle(x, charge(3, i))));
    } finally {
      await undo();
    }
    expect(b.stats.batches).toBe(1); // written by its third attempt
    const rows = await charges(id);
    expect(rows).toHaveLength(20);
    expect(new Set(rows.map((r) => r.requestId)).size).toBe(20);
    // The failed attempts left nothing behind: the lease shrank by the 60 credits charged, once.
    expect(await leased(id)).toBe(leasedBefore - 60);
    await expectWhole(id);
    await b.returnIdle();
    expect(await balanceOf(id)).toBe(100_000 - 60);
  });

  it('gives a batch up after its retries: its charges are lost, never credits', async () => {
    const b = bank();
    const u = await createUser(h.app);
    const id = u.account.id;
    const holds = await Promise.all(Array.from({ length: 5 }, () => b.hold(id, 40)));
    const undo = await failBatches(id, 100);
    let outcomes: PromiseSettledResult<void>[];
    try {
      outcomes = await Promise.allSettled(holds.map((x, i) => b.settle(x, charge(3, i))));
    } finally {
      await undo();
    }
    expect(outcomes.map((o) => o.status)).toEqual(holds.map(() => 'rejected'));
    expect(await charges(id)).toEqual([]);
    await expectWhole(id);
    // The lease's row still holds the credits; given back, the balance is whole.
    await b.returnIdle();
    expect([await leased(id), await balanceOf(id)]).toEqual([0, 100_000]);
  });

  it('retries a batch whose PostgreSQL connection was closed under it (PostgreSQL only)', async (t) => {
    if (h.database.driver !== 'pg') t.skip(); // one process, one connection: nothing to close
    const b = bank();
    const u = await createUser(h.app);
    const id = u.account.id;
    const holds: BankHold[] = await Promise.all(Array.from({ length: 10 }, () => b.hold(id, 40)));
    await b.takesDone();
    const leasedBefore = await leased(id);
    const locker = new pg.Client({ connectionString: h.config.databaseUrl });
    await locker.connect();
    try {
      const lockerPid = Number((await locker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [id]);
      const settled = Promise.all(holds.map((x, i) => b.settle(x, charge(5, i))));
      // The batch waits on the account's row lock; its connection is then terminated.
      // Polled from another connection: inside the locker's transaction pg_stat_activity stays one snapshot.
      const blocked = async (not = 0) => {
        for (let i = 0; i < 500; i++) {
          const result = await db().execute(
            sql`SELECT pid FROM pg_stat_activity WHERE ${lockerPid} = ANY(pg_blocking_pids(pid)) AND pid <> ${not}`,
          );
          const [row] = rowsOf<{ pid: number }>(result);
          if (row) return Number(row.pid);
          await new Promise((r) => setTimeout(r, 20));
        }
        throw new Error('the batch never waited on the lock');
      };
      const first = await blocked();
      await locker.query('SELECT pg_terminate_backend($1)', [first]);
      // Its retry, on another connection, waits on the same lock until the locker lets go.
      await blocked(first);
      await locker.query('ROLLBACK');
      await settled;
    } finally {
      await locker.end();
    }
    const rows = await charges(id);
    expect(rows).toHaveLength(10);
    expect(new Set(rows.map((r) => r.requestId)).size).toBe(10);
    expect(await leased(id)).toBe(leasedBefore - 50);
    await expectWhole(id);
    await b.returnIdle();
    expect(await balanceOf(id)).toBe(100_000 - 50);
  });
});
