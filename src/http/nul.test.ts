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

/**
 * Issue 10 item 6: a lone surrogate (`\ud800` as a JSON escape) cannot be stored: text columns would silently
 * turn it into U+FFFD and jsonb columns refuse it (a 500). Every JSON body is checked once, where it is parsed.
 */
describe('lone surrogates in JSON bodies', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  const expected = {
    error: 'BadRequestError',
    message: 'Text must not contain unpaired surrogates (a lone \\uD800-\\uDFFF escape)',
    statusCode: 400,
  };
  // Raw JSON text: the escape reaches the server exactly as an attacker would send it.
  const cases: Array<[string, string, (token: string) => string, 'session' | 'none']> = [
    [
      'POST',
      '/api/v1/auth/signup',
      () => '{"email":"s@example.test","password":"password-1","name":"A\\ud800"}',
      'none',
    ],
    ['PUT', '/api/v1/accounts/me', () => '{"name":"x\\udfffy"}', 'session'],
    ['POST', '/api/v1/auth/pat', () => '{"name":"t\\ud800","scopes":["account"]}', 'session'],
    [
      'POST',
      '/api/v1/auth/pat',
      () => '{"name":"t","scopes":["account"],"provider_permissions":{"gh\\ud800":"read"}}',
      'session',
    ],
    [
      'POST',
      '/api/v1/auth-clients',
      () =>
        '{"name":"c","type":"public","redirectUris":["https://app.example.test/cb"],"branding":{"description":"\\udc00"}}',
      'session',
    ],
    ['PUT', '/api/v1/auth-clients/x', () => '{"name":"\\ud800"}', 'session'],
    // A key is a string too; and a high surrogate at the very end of a string.
    ['PUT', '/api/v1/accounts/me', () => '{"\\ud800":1,"name":"ok"}', 'session'],
    ['PUT', '/api/v1/accounts/me', () => '{"name":"ok\\ud83d"}', 'session'],
  ];

  it.each(cases)('%s %s answers 400, never 500', async (method, url, body, auth) => {
    const u = await createUser(h.app);
    const res = await h.app.inject({
      method: method as 'POST',
      url,
      headers: {
        'content-type': 'application/json',
        ...(auth === 'session' ? { authorization: `Bearer ${u.sessionToken}` } : {}),
      },
      payload: body(u.sessionToken),
    });
    expect(res.json()).toEqual(expected);
    expect(res.statusCode).toBe(400);
  });

  it('dynamic client registration (parsed by oidc-provider) answers 400 invalid_client_metadata', async () => {
    for (const payload of [
      '{"client_name":"a\\ud800","redirect_uris":["https://x.example.test/cb"]}',
      '{"client_name":"ok","redirect_uris":["https://x.example.test/cb"],"logo_uri":"https://x.example.test/\\ud800"}',
    ]) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/api/v1/auth/register',
        headers: { 'content-type': 'application/json' },
        payload,
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'invalid_client_metadata', error_description: expected.message });
    }
  });

  it('a surrogate pair written as escapes is a character like any other', async () => {
    const u = await createUser(h.app);
    const res = await h.app.inject({
      method: 'PUT',
      url: '/api/v1/accounts/me',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${u.sessionToken}` },
      payload: '{"name":"Ada \\ud83d\\ude00"}',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().name).toBe('Ada 😀');
  });
});
