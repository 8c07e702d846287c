import { describe, expect, it } from 'vitest';
import { AccountCache } from './account-cache.ts';

describe('AccountCache', () => {
  it('loads once per account and key until evicted; eviction drops only that account', async () => {
    const cache = new AccountCache<string>(60_000);
    let loads = 0;
    const load = (v: string) => async () => {
      loads++;
      return v;
    };
    expect(await cache.get('acc1', 'k', load('a'))).toBe('a');
    expect(await cache.get('acc1', 'k', load('b'))).toBe('a');
    expect(await cache.get('acc2', 'k', load('c'))).toBe('c');
    expect(loads).toBe(2);
    cache.evict('acc1');
    expect(await cache.get('acc1', 'k', load('d'))).toBe('d');
    expect(await cache.get('acc2', 'k', load('e'))).toBe('c');
    cache.evict(undefined);
    expect(await cache.get('acc2', 'k', load('f'))).toBe('f');
  });

  it('keeps no read that overlapped an eviction, no undefined, nothing with a TTL of 0', async () => {
    const cache = new AccountCache<string | undefined>(60_000);
    let release = () => {};
    const slow = cache.get('acc', 'k', () => new Promise<string>((r) => (release = () => r('old'))));
    cache.evict('acc');
    release();
    expect(await slow).toBe('old');
    expect(await cache.get('acc', 'k', async () => 'new')).toBe('new');
    expect(await cache.get('acc', 'gone', async () => undefined)).toBeUndefined();
    expect(await cache.get('acc', 'gone', async () => 'found')).toBe('found');
    const off = new AccountCache<string>(0);
    await off.get('acc', 'k', async () => 'a');
    expect(await off.get('acc', 'k', async () => 'b')).toBe('b');
  });
});
