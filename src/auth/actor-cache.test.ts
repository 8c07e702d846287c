import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness } from '../../test/harness.ts';
import type { App } from '../http/types.ts';
import type { Actor } from '../lib/context.ts';
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
