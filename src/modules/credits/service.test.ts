import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, publicContext, type TestHarness } from '../../../test/harness.ts';
import { accounts, creditTransactions } from '../../db/schema/index.ts';
import { placeHold } from './repo.ts';
import { addCredits, releaseExpiredHolds } from './service.ts';

describe('credit ledger', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  const balanceOf = async (id: string) =>
    (await h.database.db.select({ b: accounts.creditBalance }).from(accounts).where(eq(accounts.id, id)))[0]?.b;

  it('tops up exactly once per idempotency key, also when calls race', async () => {
    const u = await createUser(h.app);
    const ctx = publicContext(h.app);
    const key = `topup-${u.account.id}`;
    const first = await addCredits(ctx, { accountId: u.account.id, amount: 5000, idempotencyKey: key });
    expect(first.duplicate).toBe(false);
    expect(first.transaction).toMatchObject({ amount: 5000, balanceAfter: 105000, type: 'topup', idempotencyKey: key });
    const again = await addCredits(ctx, { accountId: u.account.id, amount: 5000, idempotencyKey: key });
    expect(again).toEqual({ transaction: first.transaction, duplicate: true });

    const raceKey = `race-${u.account.id}`;
    const raced = await Promise.all(
      Array.from({ length: 6 }, () =>
        addCredits(ctx, { accountId: u.account.id, amount: 100, idempotencyKey: raceKey }),
      ),
    );
    expect(raced.filter((r) => !r.duplicate)).toHaveLength(1);
    expect(await balanceOf(u.account.id)).toBe(105100);
    const rows = await h.database.db
      .select()
      .from(creditTransactions)
      .where(eq(creditTransactions.accountId, u.account.id));
    expect(rows.map((r) => r.type).sort()).toEqual(['grant', 'topup', 'topup']);
    expect(rows.reduce((s, r) => s + r.amount, 0)).toBe(105100);
  });

  it('refuses a non-positive amount and an unknown account', async () => {
    const ctx = publicContext(h.app);
    const u = await createUser(h.app);
    await expect(addCredits(ctx, { accountId: u.account.id, amount: 0, idempotencyKey: 'k0' })).rejects.toMatchObject({
      statusCode: 422,
    });
    await expect(
      addCredits(ctx, { accountId: 'acct_nobody', amount: 5, idempotencyKey: 'k-nobody' }),
    ).rejects.toMatchObject({ name: 'NotFoundError', statusCode: 404, message: 'No account acct_nobody' });
  });

  it('gives back holds that were never settled once they expire', async () => {
    const u = await createUser(h.app);
    const held = await placeHold(h.database.db, {
      id: `hold_test_${u.account.id}`,
      accountId: u.account.id,
      amount: 700,
      expiresAt: new Date(Date.now() - 1000),
    });
    expect(held).toBe(99300);
    // On a shared PostgreSQL database another process's sweep (a started server's job) may release it first:
    // what counts is that it is given back, once.
    await releaseExpiredHolds({ db: h.database.db });
    expect(await balanceOf(u.account.id)).toBe(100000);
    await releaseExpiredHolds({ db: h.database.db });
    expect(await balanceOf(u.account.id)).toBe(100000);
  });

  it('lists transactions newest first with type and date filters', async () => {
    const u = await createUser(h.app);
    await addCredits(publicContext(h.app), {
      accountId: u.account.id,
      amount: 42,
      idempotencyKey: `l-${u.account.id}`,
    });
    const token = await u.pat(['account']);
    const all = await call(h.app, 'GET', '/api/v1/credit-transactions', { token });
    expect(all.statusCode).toBe(200);
    const body = all.json();
    expect(body.pagination).toEqual({ page: 1, limit: 20, total: 2, hasMore: false });
    expect(body.data.map((t: { type: string }) => t.type)).toEqual(['topup', 'grant']);
    expect(body.data[1]).toMatchObject({ amount: 100000, balanceAfter: 100000, description: 'Welcome credits' });

    const grants = await call(h.app, 'GET', '/api/v1/credit-transactions?type=grant', { token });
    expect(grants.json().data).toHaveLength(1);
    const future = await call(
      h.app,
      'GET',
      `/api/v1/credit-transactions?from=${new Date(Date.now() + 60_000).toISOString()}`,
      {
        token,
      },
    );
    expect(future.json().pagination.total).toBe(0);
    const bad = await call(h.app, 'GET', '/api/v1/credit-transactions?type=bogus', { token });
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({ error: 'ValidationError', details: [{ field: 'query.type' }] });
  });

  it('guards the list: 401 without a token, 403 without the account scope', async () => {
    const u = await createUser(h.app);
    expect((await call(h.app, 'GET', '/api/v1/credit-transactions')).statusCode).toBe(401);
    const res = await call(h.app, 'GET', '/api/v1/credit-transactions', { token: await u.pat(['llm-all']) });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({
      error: 'ForbiddenError',
      message: 'Missing required scope: account',
      statusCode: 403,
    });
  });
});
