import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness } from '../../test/harness.ts';
import { csrfOf, PageClient } from '../../test/web-client.ts';
import { html } from './html.ts';

describe('web pages', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  const browser = () => new PageClient(h.app);

  it('sign-in: a labelled form with a CSRF token; cookies HttpOnly and SameSite=Lax; errors stay on the form', async () => {
    const u = await createUser(h.app);
    const jar = browser();
    const page = await jar.get('/signin?return_to=/account/tokens');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.body).toContain('<label for="email">E-mail</label>');
    expect(page.body).toContain('<label for="password">Password</label>');
    expect(page.body).toContain('<html lang="en">');
    const csrfCookie = page.cookies.find((c) => c.name === 'sb_csrf') as {
      httpOnly?: boolean;
      sameSite?: string;
      secure?: boolean;
    };
    expect(csrfCookie).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
    expect(csrfCookie.secure).toBeFalsy();
    const csrf = csrfOf(page.body);

    expect((await jar.post('/signin', { email: u.account.email, password: u.password })).statusCode).toBe(403);
    expect(
      (await jar.post('/signin', { csrf: 'forged', email: u.account.email, password: u.password })).statusCode,
    ).toBe(403);
    const foreign = await jar.post(
      '/signin',
      { csrf, email: u.account.email, password: u.password },
      { origin: 'https://evil.example' },
    );
    expect(foreign.statusCode).toBe(403);
    // Another browser's token does not fit this browser's cookie.
    const other = browser();
    await other.get('/signin');
    expect((await other.post('/signin', { csrf, email: u.account.email, password: u.password })).statusCode).toBe(403);

    const wrong = await jar.post('/signin', {
      csrf,
      email: u.account.email,
      password: 'wrong-password',
      return_to: '/account/tokens',
    });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.body).toContain('role="alert"');
    expect(wrong.body).toContain('Wrong e-mail or password.');
    expect(wrong.body).toContain(`value="${u.account.email}"`);

    const ok = await jar.post('/signin', {
      csrf,
      email: u.account.email,
      password: u.password,
      return_to: '/account/tokens',
    });
    expect(ok.statusCode).toBe(303);
    expect(ok.headers.location).toBe('/account/tokens');
    const session = ok.cookies.find((c) => c.name === 'sb_session') as {
      value: string;
      httpOnly?: boolean;
      sameSite?: string;
      path?: string;
    };
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    expect(session.value).toMatch(/^sess_/);
    // The cookie holds a real session token: the API accepts it.
    expect((await call(h.app, 'GET', '/api/v1/accounts/me', { token: session.value })).json().id).toBe(u.account.id);
  });

  it('cookies are Secure when the app is served over https', async () => {
    const secure = await h.extraApp({ APP_URL: 'https://app.example.test', BASE_URL: 'https://api.example.test' });
    const res = await secure.inject({ method: 'GET', url: '/signin' });
    expect(res.cookies.find((c) => c.name === 'sb_csrf')).toMatchObject({
      secure: true,
      httpOnly: true,
      sameSite: 'Lax',
    });
  });

  it("the authorization server's own cookies are HttpOnly, SameSite=Lax and Secure under https too", async () => {
    const secure = await h.extraApp({ APP_URL: 'https://app.example.test', BASE_URL: 'https://api.example.test' });
    const reg = await secure.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      payload: { redirect_uris: ['https://client.example/cb'], token_endpoint_auth_method: 'none' },
    });
    expect(reg.statusCode).toBe(201);
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: reg.json().client_id,
      redirect_uri: 'https://client.example/cb',
      scope: 'account',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    });
    // Discovery sends browsers to APP_URL and everything else to BASE_URL.
    const meta = (await secure.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })).json();
    expect(meta).toMatchObject({
      issuer: 'https://api.example.test',
      authorization_endpoint: 'https://app.example.test/oauth/authorize',
      token_endpoint: 'https://api.example.test/api/v1/auth/token',
    });
    const res = await secure.inject({ method: 'GET', url: `/oauth/authorize?${q}` });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toMatch(/^\/interaction\//);
    const cookies = [res.headers['set-cookie']].flat().filter((c): c is string => !!c);
    expect(cookies.length).toBeGreaterThan(0);
    for (const c of cookies) {
      expect(c.toLowerCase()).toContain('httponly');
      expect(c.toLowerCase()).toContain('samesite=lax');
      expect(c.toLowerCase()).toContain('secure');
    }
  });

  it('return_to never leaves the site; account pages send strangers to sign in', async () => {
    const u = await createUser(h.app);
    for (const target of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
      const jar = browser();
      const page = await jar.get('/signin');
      const res = await jar.post('/signin', {
        csrf: csrfOf(page.body),
        email: u.account.email,
        password: u.password,
        return_to: target,
      });
      expect(res.headers.location).toBe('/account');
    }
    const anon = await browser().get('/account/tokens');
    expect(anon.statusCode).toBe(303);
    expect(anon.headers.location).toBe('/signin?return_to=%2Faccount%2Ftokens');
    // A page's query survives the detour through sign-in.
    const chat = await browser().get('/account/agents/agt_abcdefgh?c=conv_abcdefgh');
    expect(chat.headers.location).toBe('/signin?return_to=%2Faccount%2Fagents%2Fagt_abcdefgh%3Fc%3Dconv_abcdefgh');
  });

  it('sign-up creates an account and signs in; sign-out ends the session', async () => {
    const jar = browser();
    const page = await jar.get('/signup');
    expect(page.body).toContain('autocomplete="new-password"');
    const email = `web-${Date.now()}@example.test`;
    const short = await jar.post('/signup', { csrf: csrfOf(page.body), name: 'Web User', email, password: 'short' });
    expect(short.statusCode).toBe(400);
    expect(short.body).toContain('at least 8 characters');
    const res = await jar.post('/signup', {
      csrf: csrfOf(page.body),
      name: 'Web User',
      email,
      password: 'long-enough-pw',
    });
    expect(res.statusCode).toBe(303);
    const token = jar.jar.get('sb_session') ?? '';
    expect((await call(h.app, 'GET', '/api/v1/accounts/me', { token })).json()).toMatchObject({
      email,
      name: 'Web User',
    });
    const taken = await jar.post('/signup', {
      csrf: csrfOf(page.body),
      name: 'Again',
      email,
      password: 'long-enough-pw',
    });
    expect(taken.body).toContain('already exists');

    const apps = await jar.get('/account/apps');
    expect(apps.statusCode).toBe(200);
    expect(apps.body).toContain('No app has access to your account.');
    const out = await jar.post('/signout', { csrf: csrfOf(apps.body) });
    expect(out.statusCode).toBe(303);
    expect(jar.jar.has('sb_session')).toBe(false);
    expect((await call(h.app, 'GET', '/api/v1/accounts/me', { token })).statusCode).toBe(401);
  });

  it("sign-up works at every loopback address of BASE_URL's port; a foreign origin is told which setting to change", async () => {
    // BASE_URL is http://localhost:8080 in the harness: 127.0.0.1 and [::1] at that port are the same server.
    for (const origin of ['http://127.0.0.1:8080', 'http://[::1]:8080', 'http://localhost:8080']) {
      const jar = browser();
      const page = await jar.get('/signup');
      const email = `alias-${Date.now()}-${Math.random().toString(36).slice(2)}@example.test`;
      const res = await jar.post(
        '/signup',
        { csrf: csrfOf(page.body), name: 'Alias User', email, password: 'long-enough-pw' },
        { origin },
      );
      expect(res.statusCode, origin).toBe(303);
      expect(jar.jar.has('sb_session'), origin).toBe(true);
    }
    for (const origin of ['http://127.0.0.1:9999', 'http://192.168.1.5:8080', 'https://localhost:8080']) {
      const jar = browser();
      const page = await jar.get('/signup');
      const res = await jar.post(
        '/signup',
        { csrf: csrfOf(page.body), name: 'Foreign', email: 'foreign@example.test', password: 'long-enough-pw' },
        { origin },
      );
      expect(res.statusCode, origin).toBe(403);
      expect(res.body).toContain('Form sent from another address');
      expect(res.body).toContain(`sent from ${origin}`);
      expect(res.body).toContain('set BASE_URL');
      expect(jar.jar.has('sb_session')).toBe(false);
    }
  });

  it('personal access tokens: created on the page and shown once, listed by prefix, revoked', async () => {
    const u = await createUser(h.app);
    const jar = browser();
    await jar.signIn(u.account.email, u.password);
    const page = await jar.get('/account/tokens');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('You have no active tokens.');
    const none = await jar.post('/account/tokens', { csrf: csrfOf(page.body), name: 'ci', expires_days: '30' });
    expect(none.statusCode).toBe(400);
    expect(none.body).toContain('Choose at least one scope.');
    // The refused form keeps what was typed and chosen.
    expect(none.body).toContain('<input id="token-name" name="name" type="text" required maxlength="100" value="ci">');
    expect(none.body).toContain('<option value="30" selected>30 days</option>');
    expect(none.body).not.toContain('<option value="90" selected>');
    const created = await jar.post('/account/tokens', {
      csrf: csrfOf(page.body),
      name: 'ci token',
      scopes: ['account', 'llm-all'],
      expires_days: '30',
    });
    // Post-redirect-get: the token travels sealed in a one-time flash cookie, never in the URL.
    expect(created.statusCode).toBe(303);
    expect(created.headers.location).toBe('/account/tokens');
    expect(created.body).not.toContain('pat_');
    const sealed = jar.jar.get('sb_flash') ?? '';
    expect(sealed).not.toContain('pat_');
    // The flash is bound to this browser's session: carried into another signed-in browser, it does not open.
    const thief = browser();
    await thief.signIn(u.account.email, u.password);
    thief.jar.set('sb_flash', sealed);
    expect((await thief.get('/account/tokens')).body).not.toContain('id="new-token"');
    const shown = await jar.get('/account/tokens');
    expect(shown.statusCode).toBe(200);
    const pat = /id="new-token" type="text" readonly value="(pat_[^"]+)"/.exec(shown.body)?.[1] ?? '';
    expect(pat).toMatch(/^pat_/);
    expect(shown.body).toContain('Token <strong>ci token</strong> created. Copy it now: it is not shown again.');
    const me = await call(h.app, 'GET', '/api/v1/accounts/me', { token: pat });
    expect(me.statusCode).toBe(200);
    // A reload shows it no more.
    const list = await jar.get('/account/tokens');
    expect(list.body).not.toContain(pat);
    expect(list.body).not.toContain('Copy it now');
    expect(list.body).toContain(pat.slice(0, 10));
    // Revoke asks first: the list links to a confirmation page, whose button does it.
    const id = /href="\/account\/tokens\/([^/"]+)\/revoke"/.exec(list.body)?.[1] ?? '';
    const confirm = await jar.get(`/account/tokens/${id}/revoke`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain('<h1>Revoke ci token?</h1>');
    expect(confirm.body).toContain(`action="/account/tokens/${id}/revoke"`);
    expect(confirm.body).toContain('<a class="button" href="/account/tokens">Cancel</a>');
    // Looking at the confirmation changes nothing.
    expect((await call(h.app, 'GET', '/api/v1/accounts/me', { token: pat })).statusCode).toBe(200);
    const revoked = await jar.post(`/account/tokens/${id}/revoke`, { csrf: csrfOf(confirm.body) });
    expect(revoked.statusCode).toBe(303);
    expect(revoked.headers.location).toBe('/account/tokens');
    const after = await jar.get('/account/tokens');
    expect(after.body).toContain('Token revoked.');
    expect(after.body).toContain('You have no active tokens.');
    expect((await jar.get('/account/tokens')).body).not.toContain('Token revoked.');
    expect((await call(h.app, 'GET', '/api/v1/accounts/me', { token: pat })).statusCode).toBe(401);
    // A revoked token's confirmation page is a 404 too.
    expect((await jar.get(`/account/tokens/${id}/revoke`)).statusCode).toBe(404);
    // Another account's token id is not found.
    const other = await createUser(h.app);
    const theirs = (
      await call(h.app, 'POST', '/api/v1/auth/pat', {
        token: other.sessionToken,
        body: { name: 'x', scopes: ['account'] },
      })
    ).json().id;
    expect((await jar.get(`/account/tokens/${theirs}/revoke`)).statusCode).toBe(404);
    expect((await jar.post(`/account/tokens/${theirs}/revoke`, { csrf: csrfOf(list.body) })).statusCode).toBe(404);
    expect((await call(h.app, 'GET', '/api/v1/accounts/me', { token: other.sessionToken })).statusCode).toBe(200);
  });

  it('an unknown or expired interaction says so instead of failing', async () => {
    for (const url of ['/interaction/nope', '/interaction/../x', '/interaction/abc/signup']) {
      const res = await browser().get(url);
      expect([400, 404]).toContain(res.statusCode);
    }
    expect((await browser().get('/interaction/abcdef')).body).toContain('Sign-in request expired');
  });

  it('html escapes every value', () => {
    const name = '<script>alert("x")</script>&\'';
    expect(html`<p title="${name}">${name}</p>`.value).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</p>',
    );
  });
});
