import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import { creditTransactions } from '../../db/schema/index.ts';
import { newId } from '../../lib/ids.ts';
import { creditUsage } from './service.ts';

describe('credit usage per day and kind', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('sums the charges of the last 30 UTC days per kind, every day present, nothing else counted', async () => {
    const u = await createUser(h.app);
    const other = await createUser(h.app);
    const row = (accountId: string, type: string, amount: number, at: string) => ({
      id: newId('creditTransaction'),
      accountId,
      type,
      amount,
      balanceAfter: 0,
      createdAt: new Date(at),
    });
    await h.database.db.insert(creditTransactions).values([
      row(u.account.id, 'llm', -100, '2026-11-28T09:00:00Z'),
      row(u.account.id, 'llm', -50, '2026-11-28T09:30:00Z'),
      row(u.account.id, 'task', -300, '2026-11-28T00:00:00Z'),
      row(u.account.id, 'agent', -70, '2026-11-27T23:59:59.999Z'),
      row(u.account.id, 'mcp', -20, '2026-10-30T00:00:00Z'),
      row(u.account.id, 'sandbox', -7, '2026-11-15T12:00:00Z'),
      row(u.account.id, 'knowledge', -11, '2026-11-15T13:00:00Z'),
      row(u.account.id, 'knowledge', -999, '2026-10-29T23:59:59Z'), // before the window
      row(u.account.id, 'sandbox', -5, '2026-11-29T00:00:00Z'), // after today
      row(u.account.id, 'topup', 1000, '2026-11-15T12:00:00Z'), // an addition, not usage
      row(other.account.id, 'llm', -400, '2026-11-28T09:00:00Z'), // another account's
    ]);
    const usage = await creditUsage(u.ctx, 30, new Date('2026-11-28T10:00:00Z'));
    expect(usage).toHaveLength(30);
    expect(usage[0]?.day).toBe('2026-10-30');
    expect(usage[29]?.day).toBe('2026-11-28');
    const zero = { llm: 0, agent: 0, mcp: 0, task: 0, sandbox: 0, knowledge: 0 };
    const nonEmpty = usage.filter((d) => d.total > 0);
    expect(nonEmpty).toEqual([
      { day: '2026-10-30', credits: { ...zero, mcp: 20 }, total: 20 },
      { day: '2026-11-15', credits: { ...zero, sandbox: 7, knowledge: 11 }, total: 18 },
      { day: '2026-11-27', credits: { ...zero, agent: 70 }, total: 70 },
      { day: '2026-11-28', credits: { ...zero, llm: 150, task: 300 }, total: 450 },
    ]);
    expect(usage.find((d) => d.day === '2026-11-01')).toEqual({ day: '2026-11-01', credits: zero, total: 0 });
  });
});
