import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, createUser, type TestHarness } from '../../test/harness.ts';
import { csrfOf, PageClient } from '../../test/web-client.ts';
import { returnTarget } from './common.ts';

const APP_URL = 'https://app.example.test';

/**
 * Issue 10 items 3 and 6: `return_to` on /signin, /signup and /signout. Browsers strip tabs and newlines from
 * a URL, so `/%09/evil.example` was `//evil.example` (off-site); CR, LF and non-Latin-1 characters made the
 * `Location` header throw (500). Each bad value falls back to the page's default target.
 */
const OFF_SITE = [
  '/\t/evil.example',
  '/\n/evil.example',
  '/\r\n/evil.example',
  '/\0/evil.example',
  '/\x7f/evil.example',
  '//evil.example/x',
  '/\\evil.example',
  'https://evil.example/',
  'javascript:alert(1)',
  `${APP_URL}.evil.example/`,
  `https://user@app.example.test/account/tokens`,
  '/account/tokens\r\nSet-Cookie: x=1',
  '/account/ünïcode',
  '/account/\u2028',
  '/account/Ω',
  '/account/tokens with space',
];

describe('return_to stays on the site', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness({ APP_URL, RATE_LIMIT_AUTH: '1000' });
  });
  afterAll(() => h.close());

  it('the helper: same-origin targets become paths, anything else the fallback', () => {
    expect(returnTarget('/account/tokens?x=1#y', APP_URL)).toBe('/account/tokens?x=1#y');
    expect(returnTarget(`${APP_URL}/account/tokens`, APP_URL)).toBe('/account/tokens');
    expect(returnTarget('/a/../account/apps', APP_URL)).toBe('/account/apps');
    // A same-scheme relative reference is a path of ours once resolved, and answered as that path.
    expect(returnTarget('https:evil.example', APP_URL)).toBe('/evil.example');
    expect(returnTarget(undefined, APP_URL)).toBe('/account');
    expect(returnTarget(['/account/tokens'], APP_URL, '/signin')).toBe('/signin');
    for (const bad of OFF_SITE) expect(returnTarget(bad, APP_URL, '/fallback'), JSON.stringify(bad)).toBe('/fallback');
  });

  it('GET /signin, signed in: 303 to the default for every off-site or malformed target, never a 500', async () => {
    const u = await createUser(h.app);
    const jar = new PageClient(h.app);
    expect((await jar.signIn(u.account.email, u.password)).statusCode).toBe(303);
    for (const bad of OFF_SITE) {
      const res = await jar.get(`/signin?return_to=${encodeURIComponent(bad)}`);
      expect({ bad, status: res.statusCode, location: res.headers.location }).toEqual({
        bad,
        status: 303,
        location: '/account',
      });
    }
    const ok = await jar.get(`/signin?return_to=${encodeURIComponent(`${APP_URL}/account/tokens`)}`);
    expect(ok.headers.location).toBe('/account/tokens');
    // The reviewer's exact URL, unencoded tab escape as a browser sends it.
    const raw = await jar.get('/signin?return_to=/%09/evil.example');
    expect(raw.headers.location).toBe('/account');
  });

  it('the sign-in and sign-up forms carry only a safe return_to', async () => {
    for (const path of ['/signin', '/signup']) {
      for (const bad of ['/\t/evil.example', '/\r\n/x', '/Ω']) {
        const res = await new PageClient(h.app).get(`${path}?return_to=${encodeURIComponent(bad)}`);
        expect(res.statusCode).toBe(200);
        expect(res.body).toContain('<input type="hidden" name="return_to" value="/account">');
      }
    }
  });

  it('POST /signin, /signup and /signout fall back to their defaults', async () => {
    const u = await createUser(h.app);
    for (const bad of ['/%09/evil.example', '/\t/evil.example', '/\r\n/evil.example', '/é']) {
      const signin = new PageClient(h.app);
      const page = await signin.get('/signin');
      const res = await signin.post('/signin', {
        csrf: csrfOf(page.body),
        email: u.account.email,
        password: u.password,
        return_to: bad,
      });
      expect({ bad, status: res.statusCode, location: res.headers.location }).toEqual({
        bad,
        status: 303,
        // `%09` stays three characters in a form body: a harmless path of our own.
        location: bad === '/%09/evil.example' ? '/%09/evil.example' : '/account',
      });

      const signup = new PageClient(h.app);
      const form = await signup.get('/signup');
      const created = await signup.post('/signup', {
        csrf: csrfOf(form.body),
        email: `rt-${Math.random().toString(36).slice(2)}@example.test`,
        name: 'Return',
        password: 'correct horse',
        return_to: bad.replace('%09', '\t'),
      });
      expect(created.statusCode).toBe(303);
      expect(created.headers.location).toBe('/account');

      const out = await signup.post('/signout', {
        csrf: csrfOf((await signup.get('/account/tokens')).body),
        return_to: bad.replace('%09', '\t'),
      });
      expect(out.statusCode).toBe(303);
      expect(out.headers.location).toBe('/signin');
    }
  });
});
