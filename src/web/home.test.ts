import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness } from '../../test/harness.ts';
import { PageClient } from '../../test/web-client.ts';
import { creditTransactions } from '../db/schema/index.ts';
import { newId } from '../lib/ids.ts';
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
    expect(account.body).toMatch(/<td>Credit grant[\s\S]*?<td>\+100,000<\/td><td>100,000<\/td>/);
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
    // The catalog's own count: every OAuth provider with an `apiKey` block also connects with a pasted token.
    const byToken = (except?: string) =>
      providerCatalog(h.app.deps.config).providers.filter(
        ({ definition: d }) => d.authType === 'oauth' && d.apiKey && d.id !== except,
      ).length;
    expect(byToken()).toBeGreaterThanOrEqual(19);
    expect(notSet.body).toMatch(
      new RegExp(
        `No OAuth provider has operator credentials: \\d+ of the \\d+ providers cannot be connected yet \\(${byToken()} of them connect with a token the user pastes instead\\)\\.`,
      ),
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
      new RegExp(
        `\\d+ of \\d+ OAuth providers have no operator credentials \\(${byToken('github')} of them connect with a token the user pastes instead\\)\\.`,
      ),
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

  it('/account/credits: the 30-day chart by kind, and the whole history filtered by kind and day, 25 rows a page', async () => {
    const u = await createUser(h.app);
    const browser = new PageClient(h.app);
    expect((await browser.signIn(u.account.email, u.password)).statusCode).toBe(303);
    const today = new Date().toISOString().slice(0, 10);
    const daysAgo = (n: number, hour = 12) =>
      new Date(Date.parse(`${today}T00:00:00Z`) - n * 86_400_000 + hour * 3_600_000);
    const row = (type: string, amount: number, at: Date, description = '') => ({
      id: newId('creditTransaction'),
      accountId: u.account.id,
      type,
      amount,
      balanceAfter: 0,
      description,
      createdAt: at,
    });
    await h.database.db
      .insert(creditTransactions)
      .values([
        ...Array.from({ length: 30 }, (_, i) => row('llm', -10, daysAgo(2, 0), `Chat completion ${i}`)),
        row('task', -300, daysAgo(1), 'Task Digest'),
        row('agent', -70, daysAgo(40), 'Agent Helper'),
      ]);

    const all = await browser.get('/account/credits');
    expect(all.statusCode).toBe(200);
    expect(all.body).toContain('<p class="small muted" id="history-count">33 movements; page 1 of 2.</p>');
    expect(all.body.match(/<tr><td class="small">/g)?.length).toBe(25);
    expect(all.body).toContain('<a class="button" rel="next" href="/account/credits?page=2">Older</a>');
    // The chart: 300 credits of task runs and 300 of the gateway within 30 days; the agent chat of 40 days ago is not.
    expect(all.body).toContain('<title id="usage-title">Credits spent per day, last 30 days</title>');
    expect(all.body).toContain(
      `600 credits spent from ${daysAgo(29, 0).toISOString().slice(0, 10)} to ${today}: LLM gateway 300, Scheduled task run 300.`,
    );
    expect(all.body).toContain(
      `<tr><td>${daysAgo(1).toISOString().slice(0, 10)}</td><td>0</td><td>0</td><td>0</td><td>300</td>`,
    );

    const second = await browser.get('/account/credits?page=2');
    expect(second.body).toContain('33 movements; page 2 of 2.');
    expect(second.body.match(/<tr><td class="small">/g)?.length).toBe(8);
    expect(second.body).toContain('<a class="button" rel="prev" href="/account/credits">Newer</a>');
    expect(second.body).toMatch(/<td>Agent chat<br><span class="muted small">Agent Helper<\/span><\/td><td>-70<\/td>/);
    expect(all.body).toMatch(/<td>Credit grant[^<]*(<br><span[^<]*<\/span>)?<\/td><td>\+100,000<\/td>/);

    const tasks = await browser.get('/account/credits?kind=task&from=&to=');
    expect(tasks.body).toContain('1 movement match; page 1 of 1.');
    expect(tasks.body).toMatch(
      /<td>Scheduled task run<br><span class="muted small">Task Digest<\/span><\/td><td>-300<\/td>/,
    );
    expect(tasks.body).toContain('<option value="task" selected>Scheduled task run</option>');

    // Days are UTC and both ends are included: the day before yesterday holds the 30 gateway calls.
    const day = daysAgo(2).toISOString().slice(0, 10);
    const range = await browser.get(`/account/credits?kind=llm&from=${day}&to=${day}&page=2`);
    expect(range.body).toContain('30 movements match; page 2 of 2.');
    expect(range.body).toContain(
      `<a class="button" rel="prev" href="/account/credits?kind=llm&amp;from=${day}&amp;to=${day}">Newer</a>`,
    );
    expect(
      (await browser.get(`/account/credits?kind=agent&from=${daysAgo(30).toISOString().slice(0, 10)}`)).body,
    ).toContain('0 movements match.');

    const bad = await browser.get('/account/credits?kind=bogus&from=0000-01-01');
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('The filter was not applied');
    expect(bad.body).toContain('33 movements; page 1 of 2.');

    const account = await browser.get('/account');
    expect(account.body).toContain('<a href="/account/credits">All credit history, with filters</a>');
    expect(account.body).toContain('id="usage-chart"');
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
