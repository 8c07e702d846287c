import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type TestHarness } from '../../../test/harness.ts';

/**
 * Issue 10 item 6: input PostgreSQL cannot store, or of the wrong JSON type, reached oidc-provider's adapter
 * and answered `500 server_error`. Each is the caller's fault: an RFC 6749 error body, 400 or 401.
 */
describe('OAuth endpoints refuse bad input without a 500', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  const form = (url: string, body: string) =>
    h.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: body,
    });
  const register = (body: unknown) =>
    h.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });

  it('NUL in client_id: an unknown client on /oauth/authorize, /auth/token and /auth/revoke', async () => {
    const authorize = await h.app.inject({
      method: 'GET',
      url: '/oauth/authorize?client_id=a%00b&response_type=code&redirect_uri=https://app.example.test/cb&code_challenge=abc&code_challenge_method=S256',
    });
    expect(authorize.statusCode).toBe(400);
    expect(authorize.body).toContain('<p>client is invalid</p>');
    for (const url of ['/api/v1/auth/token', '/api/v1/auth/revoke']) {
      const res = await form(url, 'grant_type=refresh_token&refresh_token=x&token=x&client_id=a%00b');
      expect(res.statusCode, url).toBe(401);
      expect(res.json(), url).toEqual({ error: 'invalid_client', error_description: 'client authentication failed' });
    }
  });

  it('registration: a non-array redirect_uris and NUL in client_name are 400 invalid metadata', async () => {
    for (const redirect_uris of [{ a: 1 }, 'https://app.example.test/cb', [1]]) {
      const res = await register({ redirect_uris });
      expect(res.statusCode, JSON.stringify(redirect_uris)).toBe(400);
      expect(res.json().error_description).toBe('redirect_uris must be an array of strings');
    }
    const nul = await register({ redirect_uris: ['https://app.example.test/cb'], client_name: 'a\u0000b' });
    expect(nul.statusCode).toBe(400);
    expect(nul.json()).toEqual({
      error: 'invalid_client_metadata',
      error_description: 'Text must not contain NUL (\\u0000) characters',
    });
    const ok = await register({ redirect_uris: ['https://app.example.test/cb'], client_name: 'Fine' });
    expect(ok.statusCode).toBe(201);
  });
});
