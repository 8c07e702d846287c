import { statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import * as client from 'openid-client';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/types.ts';
import { createHarness, createUser, type TestHarness } from '../harness.ts';
import { artifactPath, launchBrowser, runBrowser, type TestBrowser } from './browser.ts';
import { listeningApp, pkcePair } from './oauth-helpers.ts';

/** What the page's own scripts see; the test compiles without the DOM library. */
interface BrowserGlobals {
  getComputedStyle(el: unknown): { backgroundColor: string };
}

/** A person in a real browser: signs in, reads the consent screen, allows or denies, lands on the app. */
describe.skipIf(!runBrowser)('consent in a real browser (chromium)', () => {
  let h: TestHarness;
  let app: App;
  let base: string;
  let callbackServer: Server;
  let redirectUri: string;
  let browser: TestBrowser;
  let context: BrowserContext;

  beforeAll(async () => {
    h = await createHarness();
    ({ app, base } = await listeningApp(h));
    // The app's redirect URI: a page on loopback that says it got the answer.
    callbackServer = createServer((_req, res) => {
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!doctype html><title>App</title><h1>Back in the app</h1>');
    });
    await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    const addr = callbackServer.address();
    redirectUri = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/callback`;
    browser = await launchBrowser();
    context = browser.context;
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    callbackServer?.close();
    await h?.close();
  });

  async function registeredClient(ownerToken: string) {
    const res = await fetch(`${base}/api/v1/auth-clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ownerToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'Acme Calendar',
        type: 'public',
        redirectUris: [redirectUri],
        branding: {
          description: 'Puts your meetings where your agents can see them.',
          brandColor: '#7a3cff',
          logo: `data:image/svg+xml;base64,${Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="56" height="56"><rect width="56" height="56" rx="12" fill="#7a3cff"/><text x="28" y="36" font-size="22" text-anchor="middle" fill="#fff">A</text></svg>').toString('base64')}`,
        },
      }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { id: string }).id;
  }

  async function authorizationUrl(
    clientId: string,
    state: string,
    ask: Record<string, string> = { scope: 'universal-mcp-read', resource: `${base}/mcp` },
  ) {
    const config = await client.discovery(new URL(base), clientId, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
    const { verifier, challenge } = pkcePair();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      ...ask,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
    });
    return { url: url.href, config, verifier };
  }

  it('signs in, sees the app and its scopes on the consent screen, allows, and lands on the redirect URI with a code', async () => {
    const owner = await createUser(app);
    const user = await createUser(app, { name: 'Ada Lovelace' });
    const clientId = await registeredClient(owner.sessionToken);
    const { url, config, verifier } = await authorizationUrl(clientId, 'browser-state');
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(url);

    await expect(page.getByRole('heading', { name: 'Sign in' }).isVisible()).resolves.toBe(true);
    expect(await page.getByText('Sign in to continue to Acme Calendar').count()).toBe(1);
    await page.getByLabel('E-mail').fill(user.account.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();

    await page.getByRole('heading', { name: /Acme Calendar wants to access/ }).waitFor();
    const text = (await page.locator('main').textContent()) ?? '';
    expect(text).toContain('Puts your meetings where your agents can see them.');
    expect(text).toContain('Ada Lovelace');
    expect(text).toContain('Discover the MCP tools (initialize, tools/list)');
    expect(text).not.toContain('chat completions');
    expect(text).toContain(new URL(redirectUri).origin);
    expect(await page.getByRole('img', { name: 'Acme Calendar logo' }).count()).toBe(1);
    const bar = await page
      .locator('.brand-bar')
      .evaluate((el) => (globalThis as unknown as BrowserGlobals).getComputedStyle(el).backgroundColor);
    expect(bar).toBe('rgb(122, 60, 255)');
    const shot = artifactPath('consent');
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(5_000);

    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    const landed = new URL(page.url());
    expect(landed.searchParams.get('state')).toBe('browser-state');
    const code = landed.searchParams.get('code');
    expect(code).toBeTruthy();
    expect(await page.getByRole('heading', { name: 'Back in the app' }).count()).toBe(1);

    const tokens = await client.authorizationCodeGrant(config, landed, {
      pkceCodeVerifier: verifier,
      expectedState: 'browser-state',
    });
    expect(tokens.scope).toBe('universal-mcp-read');
    await page.close();
  });

  it('denies: the app gets error=access_denied and no code', async () => {
    const owner = await createUser(app);
    const user = await createUser(app);
    const clientId = await registeredClient(owner.sessionToken);
    // A fresh browser profile state: sign out whoever the earlier test left signed in.
    await context.clearCookies();
    const { url } = await authorizationUrl(clientId, 'deny-state');
    const page = await context.newPage();
    await page.goto(url);
    await page.getByLabel('E-mail').fill(user.account.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    const landed = new URL(page.url());
    expect(landed.searchParams.get('error')).toBe('access_denied');
    expect(landed.searchParams.get('state')).toBe('deny-state');
    expect(landed.searchParams.get('code')).toBeNull();
    await page.close();
  });

  it('chooses the knowledge bases the app may use: all by default, or only those ticked', async () => {
    const owner = await createUser(app);
    const user = await createUser(app);
    const api = (path: string, token: string, body?: unknown) =>
      fetch(`${base}/api/v1${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then((r) => r.json() as Promise<Record<string, unknown>>);
    const basesOf = async (token: string) =>
      ((await api('/knowledge/bases', token)).data as Array<{ id: string }>).map((b) => b.id);
    const [def] = await basesOf(user.sessionToken);
    const other = (await api('/knowledge/bases', user.sessionToken, { name: 'Private notes' })).id as string;
    const clientId = await registeredClient(owner.sessionToken);
    await context.clearCookies();
    const { url, config, verifier } = await authorizationUrl(clientId, 'kb-state', { scope: 'account' });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(url);
    await page.getByLabel('E-mail').fill(user.account.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();

    const choice = page.getByRole('group', { name: 'Knowledge bases it may use' });
    await choice.waitFor();
    const all = choice.getByRole('radio', { name: 'All knowledge bases, including ones you create later' });
    expect(await all.isChecked()).toBe(true);
    expect(await choice.getByRole('checkbox').count()).toBe(2);
    await choice.getByRole('radio', { name: 'Only the knowledge bases ticked below' }).check();
    await choice.getByRole('checkbox', { name: 'Private notes' }).check();
    expect(await choice.getByRole('checkbox', { name: /My knowledge/ }).isChecked()).toBe(false);
    const shot = artifactPath('consent-knowledge-bases');
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(5_000);

    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), {
      pkceCodeVerifier: verifier,
      expectedState: 'kb-state',
    });
    expect(await basesOf(tokens.access_token)).toEqual([other]);
    const refused = await api(`/knowledge/bases/${def}`, tokens.access_token);
    expect(refused.message).toBe(`This token may not use knowledge base ${def}`);
    await page.close();
  });
});
