import { afterEach, describe, expect, it } from 'vitest';
import { workerSlotDatabaseUrl } from './worker-slot.ts';

describe('workerSlotDatabaseUrl', () => {
  const urls = ['postgres://h/sb_1', 'postgres://h/sb_2', 'postgres://h/sb_3'];
  const before = process.env.VITEST_POOL_ID;
  afterEach(() => {
    if (before === undefined) delete process.env.VITEST_POOL_ID;
    else process.env.VITEST_POOL_ID = before;
  });

  it('gives workers with different VITEST_POOL_IDs different databases, and one id the same database', () => {
    const chosen = ['1', '2', '3'].map((id) => workerSlotDatabaseUrl(urls, id));
    expect(new Set(chosen).size).toBe(3);
    expect(chosen.sort()).toEqual([...urls].sort());
    for (const id of ['1', '2', '3']) expect(workerSlotDatabaseUrl(urls, id)).toBe(workerSlotDatabaseUrl(urls, id));
  });

  it('reads VITEST_POOL_ID from the environment, slot 1 when it is unset', () => {
    const byEnv = (id: string | undefined) => {
      if (id === undefined) delete process.env.VITEST_POOL_ID;
      else process.env.VITEST_POOL_ID = id;
      return workerSlotDatabaseUrl(urls);
    };
    expect(byEnv('1')).not.toBe(byEnv('2'));
    expect(byEnv('2')).toBe(byEnv('2'));
    expect(byEnv(undefined)).toBe(urls[0]);
  });

  it('refuses when the run prepared no database', () => {
    expect(() => workerSlotDatabaseUrl([], '1')).toThrow('The test run prepared no PostgreSQL database');
  });
});
