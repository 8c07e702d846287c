import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness } from '../../test/harness.ts';
import { PageClient } from '../../test/web-client.ts';
import { providerCatalog, providerCredentialVariables } from '../modules/providers/catalog.ts';

describe('home and account pages, page 404s', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('/ tells a visitor what the service is; a signed-in user goes on to /account with balance and history', async () => {
    const browser = new PageClient(h.app);
    const home = await browser.get('/');
    expect(home.statusCode).toBe(200);
    expect(home.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(home.body).toContain('<a class="button primary" href="/signin">Sign in</a>');
    expect((await browser.get('/account')).headers.location).toBe('/signin?return_to=%2Faccount');

    const u = await createUser(h.app);
    expect((await browser.signIn(u.account.email, u.password)).statusCode).toBe(303);
    const again = await browser.get('/');
    expect(again.statusCode).toBe(303);
    expect(again.headers.location).toBe('/account');
    const account = await browser.get('/account');
    expect(account.statusCode).toBe(200);
    expect(account.body).toContain('<strong id="balance">100,000</strong>');
    expect(account.body).toMatch(/<td>grant[\s\S]*?<td>\+100,000<\/td><td>100,000<\/td>/);
    // The dashboard's next steps, none done yet; a token ticks its step.
    expect(account.body).toContain('<h2 id="next-h">Next steps</h2>');
    expect(account.body.match(/<li class="">/g)?.length).toBe(3);
    await u.pat(['universal-mcp-read']);
    const after = (await browser.get('/account')).body;
    expect(after).toMatch(
      /<li class="done"><a href="\/account\/tokens#mcp">Make a token and connect an MCP client<\/a> <span class="badge badge-active">done<\/span>/,
    );
    expect(after.match(/<li class="">/g)?.length).toBe(2);
  });

  it('home and account pages say what the operator has not set up: an LLM upstream, OAuth credentials of providers', async () => {
    const notSet = await new PageClient(h.app).get('/');
    expect(notSet.body).toContain('Not set up yet');
    expect(notSet.body).toContain(
      'No LLM upstream is set: agent chat, the LLM gateway, scheduled tasks and knowledge compilation need one.',
    );
    expect(notSet.body).toContain('Set OPENAI_API_KEY, ANTHROPIC_API_KEY, or LLM_BASE_URL');
    expect(notSet.body).toMatch(
      /No OAuth provider has operator credentials: \d+ of the \d+ providers cannot be connected yet \(19 of them connect with a token the user pastes instead\)\./,
    );
    expect(notSet.body).toContain('redirect URI: http://localhost:8080/api/v1/connections/callback');

    const app = await h.extraApp({
      OPENAI_API_KEY: 'sk-test',
      PROVIDER_GITHUB_CLIENT_ID: 'id',
      PROVIDER_GITHUB_CLIENT_SECRET: 'secret',
    });
    const browser = new PageClient(app);
    const home = await browser.get('/');
    expect(home.body).not.toContain('No LLM upstream');
    expect(home.body).toMatch(
      /\d+ of \d+ OAuth providers have no operator credentials \(18 of them connect with a token the user pastes instead\)\./,
    );
    const u = await createUser(app);
    await browser.signIn(u.account.email, u.password);
    const account = await browser.get('/account');
    expect(account.body).toContain('OAuth providers have no operator credentials');

    const ready = await h.extraApp({
      OPENAI_API_KEY: 'sk-test',
      ...Object.fromEntries(
        providerCatalog(app.deps.config).providers.flatMap(({ definition }) => {
          const names = providerCredentialVariables(definition.id);
          return [
            [names.clientId, 'id'],
            [names.clientSecret, 'secret'],
          ];
        }),
      ),
    });
    expect((await new PageClient(ready).get('/')).body).not.toContain('Not set up yet');
  });

  it('the account page shows the balance the last answer told, leases out or not (issue 46)', async () => {
    const browser = new PageClient(h.app);
    const u = await createUser(h.app);
    expect((await browser.signIn(u.account.email, u.password)).statusCode).toBe(303);
    const tool = await call(h.app, 'POST', '/api/v1/tools', {
      token: u.sessionToken,
      body: { name: 'one', description: 'One', code: 'return 1;', parameters: { type: 'object' }, requiredSecrets: [] },
    });
    expect(tool.statusCode, tool.body).toBe(201);
    let told = '';
    // Runs one after another: from the second, the account's credits are served from a lease the instance keeps.
    for (let i = 0; i < 3; i++) {
      const run = await call(h.app, 'POST', `/api/v1/tools/${tool.json().id}/test`, {
        token: u.sessionToken,
        body: { arguments: {} },
      });
      expect(run.statusCode, run.body).toBe(200);
      told = String(run.headers['x-credits-remaining']);
    }
    expect(told).toBe('99994');
    const account = await browser.get('/account');
    expect(account.body).toContain('<strong id="balance">99,994</strong>');
  });

  it('an unknown page URL answers an HTML 404 to browsers; API paths and API clients keep the JSON body', async () => {
    const page = await h.app.inject({ method: 'GET', url: '/account/nope', headers: { accept: 'text/html' } });
    expect(page.statusCode).toBe(404);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toContain('Page not found');
    for (const [url, accept] of [
      ['/api/v1/nope', 'text/html'],
      ['/mcp/x', 'text/html'],
      ['/account/nope', 'application/json'],
    ] as const) {
      const res = await call(h.app, 'GET', url, { headers: { accept } });
      expect(res.statusCode, url).toBe(404);
      expect(res.json(), url).toEqual({
        error: 'NotFoundError',
        message: `Route GET ${url} not found`,
        statusCode: 404,
      });
    }
  });
});
