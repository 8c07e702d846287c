import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SCOPES } from '../../src/access/scopes.ts';
import type { App } from '../../src/http/types.ts';
import { createHarness, createUser, type TestHarness, type TestUser } from '../harness.ts';
import { listeningApp, obtainTokens } from './oauth-helpers.ts';

const REFUSAL = {
  error: 'ForbiddenError',
  message: 'This endpoint requires a session token (sign in), not an access token',
  statusCode: 403,
};

/**
 * Issue 10 item 1: a third-party app granted `account` (and a PAT holding every scope) must not manage the
 * account's credentials. Before the fix, such a token could rotate the secret of the user's own confidential
 * client, rewrite its redirect URIs, list and revoke PATs, and so take over the user's other grants.
 */
describe('credential management is first-party only', () => {
  let h: TestHarness;
  let app: App;
  let base: string;
  const redirectUri = 'https://partner.example.test/callback';

  beforeAll(async () => {
    h = await createHarness();
    ({ app, base } = await listeningApp(h));
  });
  afterAll(() => h.close());

  const send = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };

  async function thirdPartyToken(user: TestUser): Promise<string> {
    const owner = await createUser(app);
    const created = await send('POST', '/api/v1/auth-clients', owner.sessionToken, {
      name: 'Partner App',
      type: 'confidential',
      redirectUris: [redirectUri],
    });
    expect(created.status).toBe(201);
    const c = created.body as { id: string; clientSecret: string };
    const cfg = await client.discovery(new URL(base), c.id, undefined, client.ClientSecretBasic(c.clientSecret), {
      execute: [client.allowInsecureRequests],
    });
    const { tokens, consentPage } = await obtainTokens(
      base,
      cfg,
      { email: user.account.email, password: user.password },
      { redirect_uri: redirectUri, scope: 'account' },
    );
    expect(tokens.scope).toBe('account');
    expect(consentPage).toContain('Apps never manage your sign-in credentials');
    return tokens.access_token;
  }

  it('an OAuth token with account and a PAT with every scope get 403 on every credential route; the session works', async () => {
    const user = await createUser(app);
    // The user's own confidential client and a PAT: what the chain went after.
    const own = await send('POST', '/api/v1/auth-clients', user.sessionToken, {
      name: 'My own app',
      type: 'confidential',
      redirectUris: ['https://mine.example.test/cb'],
    });
    expect(own.status).toBe(201);
    const ownId = (own.body as { id: string }).id;
    const pat = await send('POST', '/api/v1/auth/pat', user.sessionToken, { name: 'laptop', scopes: ['account'] });
    expect(pat.status).toBe(201);
    const patId = (pat.body as { id: string }).id;

    const oauthToken = await thirdPartyToken(user);
    const everything = await user.pat([...ALL_SCOPES]);
    // The token works where `account` is the gate: the refusals below are the session rule, not a bad token.
    expect((await send('GET', '/api/v1/accounts/me', oauthToken)).status).toBe(200);

    const routes: [string, string, unknown?][] = [
      ['POST', '/api/v1/auth-clients', { name: 'Evil', type: 'public', redirectUris: ['https://evil.example/cb'] }],
      ['PUT', `/api/v1/auth-clients/${ownId}`, { redirectUris: ['https://evil.example/cb'] }],
      ['PUT', `/api/v1/auth-clients/${ownId}/secret`],
      ['DELETE', `/api/v1/auth-clients/${ownId}`],
      ['POST', '/api/v1/auth/pat', { name: 'stolen', scopes: ['account'] }],
      ['GET', '/api/v1/auth/pats'],
      ['DELETE', `/api/v1/auth/pats/${patId}`],
      ['DELETE', '/api/v1/accounts/me'],
    ];
    for (const token of [oauthToken, everything]) {
      for (const [method, path, body] of routes) {
        const res = await send(method, path, token, body);
        expect({ route: `${method} ${path}`, ...res }).toEqual({
          route: `${method} ${path}`,
          status: 403,
          body: REFUSAL,
        });
      }
    }

    // Nothing changed: the client keeps its redirect URI, the PAT still works, the account is there.
    const after = await send('GET', `/api/v1/auth-clients/${ownId}`, user.sessionToken);
    expect(after.body).toMatchObject({ redirectUris: ['https://mine.example.test/cb'] });
    expect(
      (await send('GET', '/api/v1/accounts/me', (pat.body as { personal_access_token: string }).personal_access_token))
        .status,
    ).toBe(200);

    // The account's own session still does all of it.
    const s = user.sessionToken;
    expect((await send('PUT', `/api/v1/auth-clients/${ownId}`, s, { name: 'Renamed' })).status).toBe(200);
    expect((await send('PUT', `/api/v1/auth-clients/${ownId}/secret`, s)).status).toBe(200);
    expect((await send('GET', '/api/v1/auth/pats', s)).status).toBe(200);
    expect((await send('DELETE', `/api/v1/auth/pats/${patId}`, s)).status).toBe(204);
    expect((await send('DELETE', `/api/v1/auth-clients/${ownId}`, s)).status).toBe(204);
    expect((await send('DELETE', '/api/v1/accounts/me', s)).status).toBe(204);
  });

  it('the scopes list says account does not reach credentials', async () => {
    const res = await fetch(`${base}/api/v1/auth-scopes`, {
      headers: { authorization: `Bearer ${(await createUser(app)).sessionToken}` },
    });
    const text = await res.text();
    expect(text).toContain('never your apps, access tokens or deleting the account');
  });
});
