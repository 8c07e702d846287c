import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness } from './harness.ts';

describe('smoke', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('GET /api/v1/accounts/me with a PAT shows the starting credits', async () => {
    const u = await createUser(h.app);
    const pat = await u.pat(['account']);
    const res = await call(h.app, 'GET', '/api/v1/accounts/me', { token: pat });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: u.account.id, creditBalance: 100000 });
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  });
});
