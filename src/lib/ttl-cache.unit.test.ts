import { describe, expect, it } from 'vitest';
import { TtlCache } from './ttl-cache.ts';

describe('TtlCache', () => {
  it('answers an entry until it expires, then forgets it', () => {
    const cache = new TtlCache<string, number>(1000);
    cache.set('a', 1, 5000);
    expect(cache.get('a', 4999)).toBe(1);
    expect(cache.get('a', 5000)).toBeUndefined();
    expect(cache.get('a', 0)).toBeUndefined();
  });

  it('stores nothing with a TTL of 0', () => {
    const cache = new TtlCache<string, number>(0);
    cache.set('a', 1);
    expect(cache.get('a')).toBeUndefined();
  });

  it('drops the oldest entry past its bound; a rewritten entry counts as new', () => {
    const cache = new TtlCache<string, number>(60_000, 2);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('a', 3);
    cache.set('c', 4);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([3, undefined, 4]);
  });

  it('deletes one key, the matching values, or everything', () => {
    const cache = new TtlCache<string, { account: string }>(60_000);
    cache.set('t1', { account: 'x' });
    cache.set('t2', { account: 'x' });
    cache.set('t3', { account: 'y' });
    cache.set('t4', { account: 'z' });
    cache.deleteWhere((v) => v.account === 'x');
    cache.delete('t3');
    expect([cache.get('t1'), cache.get('t2'), cache.get('t3'), cache.get('t4')]).toEqual([
      undefined,
      undefined,
      undefined,
      { account: 'z' },
    ]);
    cache.clear();
    expect(cache.get('t4')).toBeUndefined();
  });
});
