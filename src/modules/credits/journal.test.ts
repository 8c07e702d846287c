import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import { rowsOf } from '../../db/rows.ts';
import { accounts, creditHolds, creditTransactions } from '../../db/schema/index.ts';
import { ServiceUnavailableError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type BankCharge, CreditBank } from './bank.ts';
import { ChargeJournal, JOURNAL_DIR } from './journal.ts';
import { LEASE_TTL_MS } from './lease.ts';
import * as repo from './repo.ts';

const bankCharge = (cost: number): BankCharge => ({
  type: 'llm',
  cost,
  description: 'call',
  model: 'm',
  promptTokens: 1,
  completionTokens: 1,
  requestId: null,
});

/** Issue 39: a charge written again (an answer lost, a journal replayed) counts once; the backlog is bounded. */
describe('credit charges: written once, journal replay, backlog bound', () => {
  let h: TestHarness;
  const dirs: string[] = [];
  const banks: CreditBank[] = [];
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(async () => {
    for (const b of banks) await b.close();
    await h.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const db = () => h.database.db;
  async function state(accountId: string) {
    const ledger = await db().select().from(creditTransactions).where(eq(creditTransactions.accountId, accountId));
    const [row] = await db().select().from(accounts).where(eq(accounts.id, accountId));
    const leases = await db().select().from(creditHolds).where(eq(creditHolds.accountId, accountId));
    return {
      charges: ledger.filter((r) => r.type === 'llm').map((r) => [r.id, r.amount, r.balanceAfter]),
      ledger: ledger.reduce((a, r) => a + r.amount, 0),
      balance: row?.creditBalance ?? Number.NaN,
      leased: leases.reduce((a, r) => a + r.amount, 0),
    };
  }
  /** A lease of `amount` taken as an instance takes it, and a charge of `cost` served from it. */
  async function leaseWithCharge(accountId: string, amount: number, cost: number) {
    const leaseId = newId('creditHold');
    const expiresAt = new Date(Date.now() + LEASE_TTL_MS);
    await repo.takeLease(db(), { id: leaseId, accountId, need: amount, want: amount, free: 0, expiresAt });
    const charge: repo.LeaseCharge = {
      id: newId('creditTransaction'),
      leaseId,
      accountId,
      cost,
      type: 'llm',
      description: 'call',
      model: 'm',
      promptTokens: 1,
      completionTokens: 1,
      requestId: null,
      at: new Date(),
    };
    return { leaseId, charge, expiresAt };
  }

  it('a batch written twice (its answer lost with the connection) charges the ledger and the lease once', async () => {
    const u = await createUser(h.app);
    const { leaseId, charge, expiresAt } = await leaseWithCharge(u.account.id, 100, 30);
    const batch = {
      charges: [charge],
      leases: [{ leaseId, accountId: u.account.id, charged: 30, close: false }],
      expiresAt,
    };
    const first = await repo.writeLeaseBatch(db(), batch);
    const once = await state(u.account.id);
    expect(once.charges).toEqual([[charge.id, -30, u.account.creditBalance - 30]]);
    expect(once.leased).toBe(70);
    expect(once.balance + once.leased).toBe(once.ledger);

    expect(await repo.writeLeaseBatch(db(), batch)).toEqual(first);
    expect(await state(u.account.id)).toEqual(once);
    // Given back: what the lease still holds returns to the balance, and the balance equals the ledger.
    await repo.writeLeaseBatch(db(), {
      charges: [charge],
      leases: [{ leaseId, accountId: u.account.id, charged: 30, close: true }],
      expiresAt,
    });
    const closed = await state(u.account.id);
    expect(closed).toEqual({ ...once, balance: u.account.creditBalance - 30, leased: 0 });
    expect(closed.balance).toBe(closed.ledger);
  });

  it('finds which of a batch’s charges are written already by key, not by reading the ledger (PostgreSQL only)', async (t) => {
    if (h.database.driver !== 'pg') t.skip(); // PGlite counts no scans
    const accountId = (await createUser(h.app)).account.id;
    const { leaseId, charge, expiresAt } = await leaseWithCharge(accountId, 1000, 1);
    // A ledger of several pages that no ANALYZE has seen, as a new database's is until autovacuum comes by.
    const another = (i: number) => ({ ...charge, id: newId('creditTransaction'), requestId: `r${i}` });
    const written = another(0);
    const earlier = [written, ...Array.from({ length: 299 }, (_, i) => another(i + 1))];
    const lease = (charged: number) => [{ leaseId, accountId, charged, close: false }];
    await repo.writeLeaseBatch(db(), { charges: earlier, leases: lease(300), expiresAt });
    const scans = await db().transaction(async (tx) => {
      // One charge new, one written already: the batch looks both up.
      await repo.writeLeaseBatch(tx, { charges: [charge, written], leases: lease(2), expiresAt });
      const result = await tx.execute(
        sql`SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'credit_transactions'`,
      );
      const [row] = rowsOf<{ seq_scan: string; idx_scan: string }>(result);
      return { seq: Number(row?.seq_scan), index: Number(row?.idx_scan) };
    });
    expect(scans.seq).toBe(0);
    expect(scans.index).toBeGreaterThan(0);
    expect((await state(accountId)).charges).toHaveLength(301);
  });

  it('charges journaled by a stopped instance are written once on start, however often the journal is replayed', async () => {
    const u = await createUser(h.app);
    const dataDir = mkdtempSync(join(tmpdir(), 'sb-journal-'));
    dirs.push(dataDir);
    const { charge } = await leaseWithCharge(u.account.id, 100, 30);
    const journaled = () => new ChargeJournal(dataDir, h.app.log).write([charge]);
    const replay = async (charges = 1) => {
      const b = new CreditBank(h.database.asyncCommitDb, h.app.log, undefined, Date.now, {
        journal: new ChargeJournal(dataDir, h.app.log),
      });
      banks.push(b);
      expect(b.recover()).toBe(charges);
      await b.flush();
      expect(readdirSync(join(dataDir, JOURNAL_DIR))).toEqual([]);
    };

    journaled();
    await replay();
    const after = await state(u.account.id);
    // Written, and the stopped instance's lease given back with it: the balance equals the ledger.
    expect(after.charges).toEqual([[charge.id, -30, u.account.creditBalance - 30]]);
    expect(after).toMatchObject({
      balance: u.account.creditBalance - 30,
      leased: 0,
      ledger: u.account.creditBalance - 30,
    });

    // Replayed again (a crash after its charges were written, before it was cleared), with a charge not written yet.
    const next = await leaseWithCharge(u.account.id, 50, 20);
    new ChargeJournal(dataDir, h.app.log).write([charge, next.charge]);
    await replay(2);
    const again = await state(u.account.id);
    expect(again.charges).toEqual([...after.charges, [next.charge.id, -20, u.account.creditBalance - 50]]);
    expect(again).toMatchObject({
      balance: u.account.creditBalance - 50,
      leased: 0,
      ledger: u.account.creditBalance - 50,
    });
  });

  it('at CREDITS_BACKLOG_MAX charges unwritten (requests in flight counted), a paid request answers 503', async () => {
    const u = await createUser(h.app);
    const b = new CreditBank(h.database.asyncCommitDb, h.app.log, undefined, Date.now, { backlogMax: 3 });
    banks.push(b);
    const holds = [await b.hold(u.account.id, 5), await b.hold(u.account.id, 5), await b.hold(u.account.id, 5)];
    const refused = await b.hold(u.account.id, 5).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ServiceUnavailableError);
    expect(refused).toMatchObject({ statusCode: 503, headers: { 'Retry-After': '5' } });
    // Its charge written, one more is admitted.
    const [first, ...rest] = holds;
    if (!first) throw new Error('no hold');
    await b.settle(first, bankCharge(2));
    const again = await b.hold(u.account.id, 5);
    for (const hold of [...rest, again]) b.charge(hold, bankCharge(2));
    await b.returnIdle();
    const after = await state(u.account.id);
    expect(after.charges).toHaveLength(4);
    expect(after.balance).toBe(after.ledger);
  });
});
