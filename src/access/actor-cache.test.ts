import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness } from '../../test/harness.ts';
import type { Actor } from '../context.ts';
import type { App } from '../http/types.ts';
import { ActorCache } from './actor-cache.ts';

const actor = (tokenId: string, accountId: string): Actor => ({
  kind: 'pat',
  accountId,
  tokenId,
  scopes: new Set(['account']),
  providerPermissions: {},
  defaultProviderPermission: 'read',
  creditBalance: 1,
});

describe('ActorCache', () => {
  it('keeps an entry until its TTL or the token expiry, whichever is first', () => {
    const cache = new ActorCache(1000);
    cache.set('a', actor('t1', 'acc1'), 10_000, 0);
    cache.set('b', actor('t2', 'acc1'), 500, 0);
    expect(cache.get('a', 999)?.tokenId).toBe('t1');
    expect(cache.get('a', 1000)).toBeUndefined();
    expect(cache.get('b', 499)?.tokenId).toBe('t2');
    expect(cache.get('b', 500)).toBeUndefined();
  });

  it('evicts by token and by account; a TTL of 0 caches nothing', () => {
    const cache = new ActorCache(1000);
    cache.set('a', actor('t1', 'acc1'), 10_000, 0);
    cache.set('b', actor('t2', 'acc2'), 10_000, 0);
    cache.evict({ tokenId: 't1' });
    expect(cache.get('a', 1)).toBeUndefined();
    cache.evict({ accountId: 'acc2' });
    expect(cache.get('b', 1)).toBeUndefined();
    const off = new ActorCache(0);
    off.set('a', actor('t1', 'acc1'), 10_000, 0);
    expect(off.get('a', 1)).toBeUndefined();
  });
});

describe('ActorCache.resolve', () => {
  const later = () => new Date(Date.now() + 60_000);

  /** A token read that waits until `release()` (which answers the last read started): counts its reads. */
  const gatedReads = (tokenIdOf: (read: number) => string = () => 't1') => {
    const reads = { count: 0, release: () => {} };
    const load = () => {
      const tokenId = tokenIdOf(++reads.count);
      return new Promise<{ actor: Actor; expiresAt: Date }>((resolve) => {
        reads.release = () => resolve({ actor: actor(tokenId, 'acc1'), expiresAt: later() });
      });
    };
    return { reads, load };
  };

  it('answers a cached actor itself, not a promise, so the request guard admits it at once', async () => {
    const cache = new ActorCache(60_000);
    const miss = cache.resolve('h', async () => ({ actor: actor('t1', 'acc1'), expiresAt: later() }));
    expect(miss).toBeInstanceOf(Promise);
    await miss;
    const hit = cache.resolve('h', () => Promise.reject(new Error('no read on a hit')));
    expect(hit).not.toBeInstanceOf(Promise);
    expect((hit as Actor).tokenId).toBe('t1');
  });

  it('makes one read for concurrent misses of a token and caches it', async () => {
    const cache = new ActorCache(60_000);
    let reads = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const load = async () => {
      reads++;
      await gate;
      return { actor: actor('t1', 'acc1'), expiresAt: later() };
    };
    const all = Promise.all(Array.from({ length: 200 }, () => cache.resolve('h', load)));
    release();
    expect((await all).every((a) => a.tokenId === 't1')).toBe(true);
    expect(reads).toBe(1);
    await cache.resolve('h', load);
    expect(reads).toBe(1);
  });

  it('shares a failed read with its waiters only; the next request reads again', async () => {
    const cache = new ActorCache(60_000);
    let reads = 0;
    const failing = async () => {
      reads++;
      throw new Error('invalid');
    };
    const outcomes = await Promise.allSettled([cache.resolve('h', failing), cache.resolve('h', failing)]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(reads).toBe(1);
    await expect(cache.resolve('h', failing)).rejects.toThrow('invalid');
    expect(reads).toBe(2);
  });

  it('reads a busy token again in the last fifth of its entry’s life, while the entry still answers', async () => {
    const cache = new ActorCache(1000);
    const { reads, load } = gatedReads((read) => `t${read}`);
    const first = cache.resolve('h', load);
    reads.release();
    expect((await first).tokenId).toBe('t1');
    const start = Date.now();
    // Before the last fifth: the entry answers and nothing is read.
    expect((await cache.resolve('h', load, start + 700)).tokenId).toBe('t1');
    expect(reads.count).toBe(1);
    // In the last fifth: the entry still answers at once, and one read starts, shared by later requests.
    expect((await cache.resolve('h', load, start + 900)).tokenId).toBe('t1');
    expect((await cache.resolve('h', load, start + 910)).tokenId).toBe('t1');
    expect(reads.count).toBe(2);
    reads.release();
    await new Promise((r) => setImmediate(r));
    expect(cache.get('h')?.tokenId).toBe('t2'); // cached for a whole TTL again
    expect((await cache.resolve('h', load)).tokenId).toBe('t2');
    expect(reads.count).toBe(2);
  });

  it('drops the entry when reading it ahead of time fails (the token was revoked elsewhere)', async () => {
    const cache = new ActorCache(1000);
    await cache.resolve('h', async () => ({ actor: actor('t1', 'acc1'), expiresAt: later() }));
    const revoked = async (): Promise<{ actor: Actor; expiresAt: Date }> => {
      throw new Error('Invalid or revoked personal access token');
    };
    expect((await cache.resolve('h', revoked, Date.now() + 900)).tokenId).toBe('t1');
    await new Promise((r) => setImmediate(r));
    expect(cache.get('h')).toBeUndefined();
    await expect(cache.resolve('h', revoked)).rejects.toThrow('revoked');
  });

  it('does not cache a read that an eviction overtook, and later requests read afresh', async () => {
    const cache = new ActorCache(60_000);
    const { reads, load } = gatedReads();
    const before = cache.resolve('h', load);
    cache.evict({ tokenId: 't1' }); // revoked while the read was in flight
    const first = reads.release;
    const after = cache.resolve('h', load);
    expect(reads.count).toBe(2);
    first();
    reads.release();
    await Promise.all([before, after]);
    expect(cache.get('h')?.tokenId).toBe('t1'); // the read that began after the eviction
    const stale = new ActorCache(60_000);
    const p = stale.resolve('x', load);
    stale.evict({ accountId: 'acc1' });
    reads.release();
    await p;
    expect(stale.get('x')).toBeUndefined();
  });
});

describe('token cache in the auth guard', () => {
  let h: TestHarness;
  let app: App;
  beforeAll(async () => {
    h = await createHarness();
    app = await h.extraApp({ AUTH_CACHE_TTL_MS: '60000' });
  });
  afterAll(() => h.close());

  it('a revoked PAT stops working at once on the instance that revoked it', async () => {
    const u = await createUser(app);
    const created = await call(app, 'POST', '/api/v1/auth/pat', {
      token: u.sessionToken,
      body: { name: 'cached', scopes: ['account'] },
    });
    const { id, personal_access_token: pat } = created.json();
    expect((await call(app, 'GET', '/api/v1/accounts/me', { token: pat })).statusCode).toBe(200);
    expect((await call(app, 'DELETE', `/api/v1/auth/pats/${id}`, { token: u.sessionToken })).statusCode).toBe(204);
    expect((await call(app, 'GET', '/api/v1/accounts/me', { token: pat })).statusCode).toBe(401);
  });

  it('a session stops working at once after logout', async () => {
    const u = await createUser(app);
    expect((await call(app, 'GET', '/api/v1/accounts/me', { token: u.sessionToken })).statusCode).toBe(200);
    expect((await call(app, 'POST', '/api/v1/auth/logout', { token: u.sessionToken })).statusCode).toBe(204);
    expect((await call(app, 'GET', '/api/v1/accounts/me', { token: u.sessionToken })).statusCode).toBe(401);
  });
});
