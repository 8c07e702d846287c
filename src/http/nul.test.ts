import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness } from '../../test/harness.ts';

/** Found by the property test: PostgreSQL refuses NUL in text, which must be the caller's 400, not our 500. */
describe('NUL characters in input', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  const expected = {
    error: 'BadRequestError',
    message: 'Text must not contain NUL (\\u0000) characters',
    statusCode: 400,
  };

  it('in a path parameter', async () => {
    const u = await createUser(h.app);
    const res = await call(h.app, 'DELETE', '/api/v1/auth/pats/%00', { token: u.sessionToken });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(expected);
  });

  it('in a JSON body', async () => {
    const res = await call(h.app, 'POST', '/api/v1/auth/signup', {
      body: { email: 'nul@example.test', password: 'nul-password', name: 'A\u0000B' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(expected);
  });
});
