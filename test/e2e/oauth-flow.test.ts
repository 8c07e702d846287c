import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/types.ts';
import { createHarness, createUser, type TestHarness, type TestUser } from '../harness.ts';
import { authorizeInBrowser, Browser, csrfOf, decodeJwt, formAction, listeningApp, pkcePair } from './oauth-helpers.ts';

/**
 * The authorization code flow end to end with openid-client, a certified OAuth client: dynamic registration,
 * PKCE, sign-in and consent through the pages, tokens the API accepts, refresh rotation with reuse detection,
 * code replay, PKCE and redirect URI refusals, revocation.
 */
describe('OAuth 2.1 code flow (openid-client)', () => {
  let h: TestHarness;
  let app: App;
  let base: string;
  const redirectUri = 'http://127.0.0.1:9/callback';

  beforeAll(async () => {
    h = await createHarness();
    ({ app, base } = await listeningApp(h));
  });
  afterAll(() => h.close());

  async function register(metadata: Partial<client.ClientMetadata> = {}): Promise<client.Configuration> {
    return client.dynamicClientRegistration(
      new URL(base),
      {
        client_name: 'Test App',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        ...metadata,
      },
      client.None(),
      { execute: [client.allowInsecureRequests] },
    );
  }

  async function authorize(
    config: client.Configuration,
    user: TestUser,
    params: Record<string, string> = {},
    browser = new Browser(base),
  ) {
    const { verifier, challenge } = pkcePair();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'account llm-all',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
      ...params,
    });
    const result = await authorizeInBrowser(browser, url.href, { email: user.account.email, password: user.password });
    return { ...result, verifier, state, browser };
  }

  async function tokens(config: client.Configuration, user: TestUser, params: Record<string, string> = {}) {
    const { redirect, verifier, state } = await authorize(config, user, params);
    return client.authorizationCodeGrant(config, new URL(redirect), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
  }

  const me = (token: string) => fetch(`${base}/api/v1/accounts/me`, { headers: { authorization: `Bearer ${token}` } });

  it('registers, authorizes with PKCE, calls the API, refreshes; a spent refresh token revokes the grant', async () => {
    const config = await register();
    expect(config.clientMetadata().client_id).toMatch(/^app_/);
    const user = await createUser(app);
    const { redirect, verifier, state, sawConsent } = await authorize(config, user);
    expect(sawConsent).toBe(true);
    const back = new URL(redirect);
    expect(`${back.origin}${back.pathname}`).toBe(redirectUri);
    expect(back.searchParams.get('state')).toBe(state);
    expect(back.searchParams.get('code')).toBeTruthy();

    const first = await client.authorizationCodeGrant(config, back, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(first.token_type.toLowerCase()).toBe('bearer');
    expect(first.expires_in).toBe(900);
    expect(first.refresh_expires_in).toBe(604_800);
    expect(first.scope?.split(' ').sort()).toEqual(['account', 'llm-all']);
    const { header, payload } = decodeJwt(first.access_token);
    expect(header).toMatchObject({ alg: 'RS256', typ: 'at+jwt' });
    expect(payload).toMatchObject({
      iss: base,
      aud: `${base}/api/v1`,
      sub: user.account.id,
      client_id: config.clientMetadata().client_id,
    });
    expect(Number(payload.exp) - Number(payload.iat)).toBe(900);

    const res = await me(first.access_token);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: user.account.id, email: user.account.email });

    // An app's token never manages the account's credentials, whatever its scopes (session only).
    const forbidden = await fetch(`${base}/api/v1/auth/pats`, {
      headers: { authorization: `Bearer ${first.access_token}` },
    });
    expect(forbidden.status).toBe(403);

    const second = await client.refreshTokenGrant(config, first.refresh_token as string);
    expect(second.refresh_token).toBeTruthy();
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.access_token).not.toBe(first.access_token);
    expect(second.refresh_expires_in).toBe(604_800);
    expect((await me(second.access_token)).status).toBe(200);

    // Reuse of the spent refresh token: refused, and the whole grant goes (RFC 9700 §4.14.2).
    await expect(client.refreshTokenGrant(config, first.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    await expect(client.refreshTokenGrant(config, second.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    const dead = await me(second.access_token);
    expect(dead.status).toBe(401);
    expect(await dead.json()).toMatchObject({ error: 'UnauthorizedError', statusCode: 401 });
  });

  it('two refreshes racing with one refresh token: one wins, and the reuse revokes the grant', async () => {
    const config = await register();
    const user = await createUser(app);
    const t = await tokens(config, user);
    const results = await Promise.allSettled([
      client.refreshTokenGrant(config, t.refresh_token as string),
      client.refreshTokenGrant(config, t.refresh_token as string),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).toMatchObject({ error: 'invalid_grant' });
    const won = (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<client.TokenEndpointResponse>)
      .value;
    expect((await me(won.access_token)).status).toBe(401);
    await expect(client.refreshTokenGrant(config, won.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('a replayed code is refused and the tokens of its first use stop working', async () => {
    const config = await register();
    const user = await createUser(app);
    const { redirect, verifier, state } = await authorize(config, user);
    const first = await client.authorizationCodeGrant(config, new URL(redirect), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    await expect(
      client.authorizationCodeGrant(config, new URL(redirect), { pkceCodeVerifier: verifier, expectedState: state }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await me(first.access_token)).status).toBe(401);
  });

  it('PKCE: missing or plain challenges are refused at the authorization endpoint; a wrong verifier at the token endpoint', async () => {
    const config = await register();
    const user = await createUser(app);
    const browser = new Browser(base);
    const clientId = config.clientMetadata().client_id;
    const q = (extra: Record<string, string>) =>
      `${base}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirectUri, scope: 'account', state: 's1', ...extra })}`;

    for (const extra of [
      {} as Record<string, string>,
      { code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' },
    ]) {
      const res = await browser.request(q(extra));
      expect(res.status).toBe(303);
      const to = new URL(res.headers.get('location') ?? '');
      expect(`${to.origin}${to.pathname}`).toBe(redirectUri);
      expect(to.searchParams.get('error')).toBe('invalid_request');
      expect(to.searchParams.get('state')).toBe('s1');
    }

    const { redirect, state } = await authorize(config, user);
    await expect(
      client.authorizationCodeGrant(config, new URL(redirect), {
        pkceCodeVerifier: pkcePair().verifier,
        expectedState: state,
      }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('an unregistered redirect_uri is never redirected to', async () => {
    const config = await register();
    const clientId = config.clientMetadata().client_id;
    const { challenge } = pkcePair();
    for (const uri of [
      'http://127.0.0.1:9/callback/other',
      'http://127.0.0.1:9/callback?x=1',
      'https://evil.example/callback',
    ]) {
      const res = await fetch(
        `${base}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: uri, scope: 'account', state: 's', code_challenge: challenge, code_challenge_method: 'S256' })}`,
        { redirect: 'manual' },
      );
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toContain('redirect_uri');
    }
  });

  it('revoking the refresh token ends the grant: no refresh, and the access token is refused', async () => {
    const config = await register();
    const user = await createUser(app);
    const t = await tokens(config, user);
    await client.tokenRevocation(config, t.refresh_token as string);
    await expect(client.refreshTokenGrant(config, t.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    expect((await me(t.access_token)).status).toBe(401);
  });

  it('revoking the access token (what clients do on sign-out) ends its grant too; another client cannot', async () => {
    const config = await register();
    const user = await createUser(app);
    const t = await tokens(config, user);
    const otherClient = await register();
    // Another client's revocation of this token is silently ignored (RFC 7009).
    await client.tokenRevocation(otherClient, t.access_token);
    expect((await me(t.access_token)).status).toBe(200);
    await client.tokenRevocation(config, t.access_token);
    expect((await me(t.access_token)).status).toBe(401);
    await expect(client.refreshTokenGrant(config, t.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    // Unknown tokens are fine too.
    await client.tokenRevocation(config, 'not-a-token');
  });

  it('with OAUTH_DYNAMIC_REGISTRATION=false registration is not served nor advertised', async () => {
    const closed = await listeningApp(h, { OAUTH_DYNAMIC_REGISTRATION: 'false' });
    const res = await fetch(`${closed.base}/api/v1/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [redirectUri] }),
    });
    expect(res.status).toBe(404);
    const meta = (await (await fetch(`${closed.base}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    expect(meta.registration_endpoint).toBeUndefined();
  });

  it('consent is remembered per client and scope set; a new scope asks again for that scope only', async () => {
    const config = await register();
    const user = await createUser(app);
    const first = await authorize(config, user);
    expect(first.sawConsent).toBe(true);
    // Same browser, same scopes: straight back with a code.
    const seen = first.browser.visited.length;
    const again = await authorize(config, user, {}, first.browser);
    expect(again.sawConsent).toBe(false);
    // Signed in and consented: the authorization endpoint answers the app at once, no page in between.
    expect(first.browser.visited.slice(seen)).toEqual(['/oauth/authorize']);
    expect(new URL(again.redirect).searchParams.get('code')).toBeTruthy();
    // A new browser (signed out) signs in but is not asked again.
    const elsewhere = await authorize(config, user);
    expect(elsewhere.sawConsent).toBe(false);
    const more = await authorize(config, user, { scope: 'account llm-all agents-use' }, first.browser);
    expect(more.sawConsent).toBe(true);
    expect(more.consentPage).toContain('agents-use');
    expect(more.consentPage).not.toContain('<code class="muted">account</code>');
  });

  it('the authorized-apps page lists the app with its access; Revoke ends its tokens', async () => {
    const config = await register({ client_name: 'Notes <b>App</b>' });
    const user = await createUser(app);
    const { redirect, verifier, state, browser } = await authorize(config, user);
    const t = await client.authorizationCodeGrant(config, new URL(redirect), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    const page = await browser.follow('/account/apps');
    if (!('page' in page)) throw new Error('expected the apps page');
    expect(page.page).toContain('Notes &lt;b&gt;App&lt;/b&gt;');
    expect(page.page).toContain('Use the LLM gateway');
    // Revoke asks first: the list links to a confirmation page naming the app and its access.
    const confirmUrl = /<a class="button danger" href="([^"]+\/revoke)">/.exec(page.page)?.[1] ?? '';
    const confirm = await browser.follow(confirmUrl);
    if (!('page' in confirm)) throw new Error('expected the confirmation page');
    expect(confirm.page).toContain('<h1>Revoke Notes &lt;b&gt;App&lt;/b&gt;?</h1>');
    expect(confirm.page).toContain('Use the LLM gateway');
    expect((await me(t.access_token)).status).toBe(200);
    const action = formAction(confirm.page, '/revoke');
    expect(action).toBe(confirmUrl);
    // Another account cannot revoke it.
    const stranger = new Browser(base);
    const other = await createUser(app);
    const signin = await stranger.follow('/signin');
    if (!('page' in signin)) throw new Error('expected the sign-in page');
    await stranger.follow('/signin', {
      form: { csrf: csrfOf(signin.page), email: other.account.email, password: other.password },
    });
    const strangerApps = await stranger.follow('/account/apps');
    if (!('page' in strangerApps)) throw new Error('expected the apps page');
    const refused = await stranger.follow(action, { form: { csrf: csrfOf(strangerApps.page) } });
    expect(refused.status).toBe(404);
    expect((await me(t.access_token)).status).toBe(200);

    expect((await stranger.follow(confirmUrl)).status).toBe(404);
    const done = await browser.follow(action, { form: { csrf: csrfOf(confirm.page) } });
    if (!('page' in done)) throw new Error('expected the apps page');
    expect(done.page).toContain('Access revoked');
    expect(done.page).toContain('No app has access to your account.');
    expect((await me(t.access_token)).status).toBe(401);
    await expect(client.refreshTokenGrant(config, t.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('after signing out of Switchboard, the next authorization asks for sign-in again', async () => {
    const config = await register();
    const user = await createUser(app);
    const first = await authorize(config, user);
    const apps = await first.browser.follow('/account/apps');
    if (!('page' in apps)) throw new Error('expected the apps page');
    await first.browser.follow('/signout', { form: { csrf: csrfOf(apps.page) } });
    const { challenge } = pkcePair();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'account llm-all',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'again',
    });
    const step = await first.browser.follow(url.href);
    if (!('page' in step)) throw new Error(`expected the sign-in page, went to ${step.redirect}`);
    expect(step.page).toContain('/login"');
    expect(step.page).toContain('Sign in to continue to <strong>Test App</strong>');
  });

  it('denying answers access_denied to the app', async () => {
    const config = await register();
    const user = await createUser(app);
    const { verifier, challenge } = pkcePair();
    void verifier;
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'account',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'deny-state',
    });
    const { redirect } = await authorizeInBrowser(
      new Browser(base),
      url.href,
      { email: user.account.email, password: user.password },
      { consent: 'deny' },
    );
    const back = new URL(redirect);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('deny-state');
    expect(back.searchParams.get('code')).toBeNull();
  });
});
