import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  acmeProvider,
  acmeRegionalProvider,
  acmeTeamProvider,
  type FakeOAuthProvider,
  providersDirEnv,
  startFakeOAuthProvider,
} from '../../test/fakes/oauth-provider.ts';
import { createHarness, createUser, type TestHarness, type TestUser } from '../../test/harness.ts';
import { csrfOf, PageClient } from '../../test/web-client.ts';
import { connections } from '../db/schema/index.ts';
import { connectAcme } from '../modules/connections/test-support.ts';
import { loadProviderCatalog } from '../modules/providers/catalog.ts';
import { filterCatalog } from '../modules/providers/service.ts';
import { callbackMessage } from './connection-routes.ts';

const PAGE = '/account/connections';
const BACK = `http://localhost:8080${PAGE}`;

describe('connections page', () => {
  let h: TestHarness;
  let fake: FakeOAuthProvider;
  beforeAll(async () => {
    fake = await startFakeOAuthProvider();
    // acme-regional needs a field before OAuth (the fake serves it under /w/<workspace>).
    const env = providersDirEnv(
      [acmeProvider, acmeTeamProvider, acmeRegionalProvider].map((p) => ({ fake, definition: p(fake.url) })),
    );
    h = await createHarness(env);
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  const rowOf = async (id: string) => (await h.database.db.select().from(connections).where(eq(connections.id, id)))[0];
  const rowsOf = (accountId: string) =>
    h.database.db.select().from(connections).where(eq(connections.accountId, accountId));

  async function signedIn(): Promise<{ user: TestUser; browser: PageClient }> {
    const user = await createUser(h.app, { name: 'Page User' });
    const browser = new PageClient(h.app);
    expect((await browser.signIn(user.account.email, user.password)).statusCode).toBe(303);
    return { user, browser };
  }

  /**
   * Follows Connect's redirect as the browser does: our authorization URL (which sets the binding cookie), the
   * fake provider (`inspect` sees its URL), then the callback with the browser's cookies; answers where it lands.
   */
  async function throughProvider(
    browser: PageClient,
    connectAnswer: { statusCode: number; headers: Record<string, unknown> },
    inspect: (providerUrl: URL) => void = () => {},
  ) {
    expect(connectAnswer.statusCode).toBe(303);
    const ours = new URL(String(connectAnswer.headers.location));
    expect(ours.pathname).toBe('/api/v1/connections/authorize');
    const opened = await browser.get(ours.pathname + ours.search);
    expect(opened.statusCode, opened.body).toBe(302);
    inspect(new URL(String(opened.headers.location)));
    const approved = await fetch(String(opened.headers.location), { redirect: 'manual' });
    expect(approved.status).toBe(302);
    const cb = new URL(approved.headers.get('location') ?? '');
    expect(cb.pathname).toBe('/api/v1/connections/callback');
    const back = await browser.get(cb.pathname + cb.search);
    expect(back.statusCode, back.body).toBe(302);
    return new URL(String(back.headers.location));
  }

  it('sends signed-out visitors to sign in and back, from the page and from its forms', async () => {
    const anon = new PageClient(h.app);
    const res = await anon.get(PAGE);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/signin?return_to=%2Faccount%2Fconnections');
    const pending = await anon.get(`${PAGE}/pending/pcn_abcdefgh`);
    expect(pending.headers.location).toBe('/signin?return_to=%2Faccount%2Fconnections%2Fpending%2Fpcn_abcdefgh');
    // A form posted after the session ended comes back to the page, not to the form's URL.
    const csrf = csrfOf((await anon.get('/signin')).body);
    for (const url of [`${PAGE}/connect`, `${PAGE}/conn_abcdefgh/refresh`, `${PAGE}/conn_abcdefgh/disconnect`]) {
      const posted = await anon.post(url, { csrf, providerId: 'acme' });
      expect(posted.statusCode, url).toBe(303);
      expect(posted.headers.location).toBe('/signin?return_to=%2Faccount%2Fconnections');
    }
    expect(fake.counts.authorize).toBe(0);
  });

  it('shows the catalog with logos from the service, the CSP allowing just them, and what an operator must set', async () => {
    const { browser } = await signedIn();
    const res = await browser.get(PAGE);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; img-src data: http://localhost:8080/providers/logos/; form-action 'self' http: https:; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toContain('<a href="/account/connections">Connections</a>');
    expect(res.body).toContain('No connections yet.');
    expect(res.body).toContain('<img class="logo" src="http://localhost:8080/providers/logos/acme.svg" alt=""');
    // Acme is configured: a Connect form with the CSRF token.
    const acme = /<li class="item" data-provider-id="acme">[\s\S]*?<\/li>/.exec(res.body)?.[0] ?? '';
    expect(acme).toContain('<form method="post" action="/account/connections/connect"');
    expect(acme).toContain(`<input type="hidden" name="csrf" value="${csrfOf(res.body)}">`);
    expect(acme).toContain('<input type="hidden" name="providerId" value="acme">');
    // Zoom is not, and takes no token: Connect disabled, the variables named.
    const zoom = /<li class="item" data-provider-id="zoom">[\s\S]*?<\/li>/.exec(res.body)?.[0] ?? '';
    expect(zoom).toContain('<button type="button" disabled');
    expect(zoom).toContain('<code>PROVIDER_ZOOM_CLIENT_ID</code> and <code>PROVIDER_ZOOM_CLIENT_SECRET</code>');
    expect(zoom).not.toContain('<form');
    // Slack's OAuth is not configured either, but it takes a bot token: Connect opens the token form.
    const slack = /<li class="item" data-provider-id="slack">[\s\S]*?<\/li>/.exec(res.body)?.[0] ?? '';
    expect(slack).toContain(
      '<a class="button primary" href="/account/connections/token/slack" data-token-link>Connect',
    );
    expect(slack).not.toContain('disabled');
    expect(slack).not.toContain('PROVIDER_SLACK_CLIENT_ID');
    // Trello has no OAuth at all: only the token form, and no operator variable to set.
    const trello = /<li class="item" data-provider-id="trello">[\s\S]*?<\/li>/.exec(res.body)?.[0] ?? '';
    expect(trello).toContain(
      '<a class="button primary" href="/account/connections/token/trello" data-token-link>Connect',
    );
    expect(trello).not.toContain('disabled');
    expect(trello).not.toContain('PROVIDER_TRELLO');
    expect(trello).not.toContain('action="/account/connections/connect"');
    // Other pages keep their narrower policy.
    const tokens = await browser.get('/account/tokens');
    expect(tokens.headers['content-security-policy']).toContain("img-src data:; form-action 'self'");
    expect(tokens.body).toContain('<a href="/account/connections">Connections</a>');
  });

  it('searches and filters the catalog with a GET form', async () => {
    const { browser } = await signedIn();
    const ids = (body: string) => [...body.matchAll(/data-provider-id="([^"]+)"/g)].map((m) => m[1]);
    const all = await browser.get(PAGE);
    expect(all.body).toContain('<form method="get" action="/account/connections" role="search"');
    const total = ids(all.body).length;
    expect(total).toBeGreaterThan(15);
    expect(all.body).toContain(`${total} services.`);

    const search = await browser.get(`${PAGE}?q=acme`);
    expect(ids(search.body)).toEqual(['acme', 'acme-regional', 'acme-team']);
    expect(search.body).toContain(`3 of ${total} services match.`);
    expect(search.body).toContain('value="acme"');

    const category = await browser.get(`${PAGE}?category=crm`);
    const crm = loadProviderCatalog({ dirs: [], env: {} })
      .providers.filter((p) => p.definition.category === 'crm')
      .map((p) => p.definition.id);
    expect(ids(category.body).sort()).toEqual(crm.sort());
    expect(crm).toEqual(expect.arrayContaining(['hubspot', 'salesforce']));
    expect(category.body).toContain('<option value="crm" selected>CRM</option>');

    // A provider that also takes a pasted token says so, and one that does not says nothing.
    const stripe = await browser.get(`${PAGE}?q=stripe`);
    expect(ids(stripe.body)).toEqual(['stripe']);
    expect(stripe.body).toContain('Connects with your Secret or restricted key from Stripe.');
    expect(stripe.body).toContain('href="/account/connections/token/stripe" data-token-link>Connect');
    expect(stripe.body).not.toContain('PROVIDER_STRIPE_CLIENT_ID');
    const zoom = await browser.get(`${PAGE}?q=zoom`);
    expect(ids(zoom.body)).toEqual(['zoom']);
    expect(zoom.body).not.toContain('data-token-link');
    expect(zoom.body).toContain('<code>PROVIDER_ZOOM_CLIENT_ID</code>');

    const both = await browser.get(`${PAGE}?q=team&category=testing`);
    expect(ids(both.body)).toEqual(['acme-team']);
    const none = await browser.get(`${PAGE}?q=${encodeURIComponent('<script>')}`);
    expect(none.body).toContain('No service matches.');
    expect(none.body).toContain('value="&lt;script&gt;"');
    expect(none.body).not.toContain('<script>');
    // An unknown category filters nothing.
    expect(ids((await browser.get(`${PAGE}?category=nope`)).body)).toHaveLength(total);
  });

  it('Connect: the provider, the callback and back to the page showing the active connection', async () => {
    const { user, browser } = await signedIn();
    const page = await browser.get(PAGE);
    const connect = await browser.post(`${PAGE}/connect`, { csrf: csrfOf(page.body), providerId: 'acme' });
    const back = await throughProvider(browser, connect, (authorize) => {
      expect(authorize.origin + authorize.pathname).toBe(`${fake.url}/authorize`);
      expect(authorize.searchParams.get('redirect_uri')).toBe('http://localhost:8080/api/v1/connections/callback');
    });
    expect(back.origin + back.pathname).toBe(BACK);
    const connectionId = back.searchParams.get('connectionId') ?? '';
    expect(connectionId).toMatch(/^conn_/);

    const landed = await browser.get(back.pathname + back.search);
    expect(landed.statusCode).toBe(200);
    expect(landed.body).toContain('Connected Acme as Ada Lovelace.');
    const item = new RegExp(`<li class="item" data-connection-id="${connectionId}">[\\s\\S]*?</li>`).exec(
      landed.body,
    )?.[0];
    expect(item).toContain('<span class="badge badge-active">active</span>');
    expect(item).toContain('Ada Lovelace (ada@acme.test)');
    expect(item).toContain(`action="/account/connections/${connectionId}/refresh"`);
    expect(item).toContain(`href="/account/connections/${connectionId}/disconnect"`);
    expect(item).not.toContain('Reconnect');
    // Tokens never reach the page.
    expect(landed.body).not.toContain('acme_at_');
    expect(landed.body).not.toContain('acme_rt_');
    const [row] = await rowsOf(user.account.id);
    expect(row).toMatchObject({ id: connectionId, providerId: 'acme', status: 'active', providerUserId: 'u-1001' });
  });

  it("shows the provider's refusal in words, escaped", async () => {
    const { browser } = await signedIn();
    const q = new URLSearchParams({ error: 'access_denied', error_description: 'The user <b>denied</b> access' });
    const res = await browser.get(`${PAGE}?${q}`);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(
      '<p class="error" role="alert" id="page-error">The authorization was declined, so nothing was connected (The user &lt;b&gt;denied&lt;/b&gt; access).</p>',
    );
    // Through the fake: it denies the next authorization.
    fake.fail('authorize', {});
    const page = await browser.get(PAGE);
    const back = await throughProvider(
      browser,
      await browser.post(`${PAGE}/connect`, { csrf: csrfOf(page.body), providerId: 'acme' }),
    );
    expect(back.searchParams.get('error')).toBe('access_denied');
    const landed = await browser.get(back.pathname + back.search);
    expect(landed.body).toContain('The authorization was declined, so nothing was connected (The user denied access).');
    expect(callbackMessage('server_error', '')).toBe(
      'The connection was not completed: the provider reported a problem (server_error).',
    );
  });

  it('Connect on a provider that is not configured answers 422 naming the variables; an unknown one 404', async () => {
    const { browser } = await signedIn();
    const csrf = csrfOf((await browser.get(PAGE)).body);
    const slack = await browser.post(`${PAGE}/connect`, { csrf, providerId: 'slack' });
    expect(slack.statusCode).toBe(422);
    expect(slack.body).toContain(
      'Slack is not configured on this server: set PROVIDER_SLACK_CLIENT_ID and PROVIDER_SLACK_CLIENT_SECRET',
    );
    const unknown = await browser.post(`${PAGE}/connect`, { csrf, providerId: 'myspace' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain('Provider myspace not found');
    expect(fake.counts.authorize).toBe(0);
  });

  it('refuses every form without the CSRF token of this browser (403), changing nothing', async () => {
    const { user, browser } = await signedIn();
    const id = await connectAcme(h.app, user);
    fake.reset();
    const csrf = csrfOf((await browser.get(PAGE)).body);
    const other = new PageClient(h.app);
    const foreignCsrf = csrfOf((await other.get('/signin')).body);
    const forms = [
      `${PAGE}/connect`,
      `${PAGE}/${id}/refresh`,
      `${PAGE}/${id}/disconnect`,
      `${PAGE}/pending/pcn_abcdefgh`,
    ];
    for (const url of forms) {
      for (const [form, headers] of [
        [{}, {}],
        [{ csrf: 'forged' }, {}],
        [{ csrf: foreignCsrf }, {}],
        [{ csrf }, { origin: 'https://evil.example' }],
      ] as const) {
        const res = await browser.post(url, { ...form, providerId: 'acme' }, headers);
        expect(res.statusCode, `${url} ${JSON.stringify(form)}`).toBe(403);
        expect(res.body).toContain('origin' in headers ? 'Form sent from another address' : 'Form expired');
      }
    }
    expect(fake.counts.authorize).toBe(0);
    expect(fake.counts.refresh).toBe(0);
    expect(await rowOf(id)).toMatchObject({ status: 'active' });
  });

  it('Refresh shows the result; a dead grant turns the connection revoked and offers Reconnect', async () => {
    const { user, browser } = await signedIn();
    const id = await connectAcme(h.app, user);
    const before = await rowOf(id);
    const page = await browser.get(PAGE);
    const ok = await browser.submit(`${PAGE}/${id}/refresh`, { csrf: csrfOf(page.body) });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toMatch(
      /Refreshed Acme \(Ada Lovelace\): active; the new token is valid until \d{4}-\d\d-\d\d \d\d:\d\d UTC\./,
    );
    expect(fake.counts.refresh).toBe(1);
    const after = await rowOf(id);
    expect(after?.accessTokenEnc).not.toBe(before?.accessTokenEnc);
    expect(after?.status).toBe('active');

    fake.revokeEverything();
    const dead = await browser.submit(`${PAGE}/${id}/refresh`, { csrf: csrfOf(page.body) });
    expect(dead.statusCode).toBe(200);
    expect(dead.body).toContain('Refreshing Acme (Ada Lovelace) failed: the connection is revoked');
    // Shown once: a reload does not say it again.
    expect((await browser.get(PAGE)).body).not.toContain('Refreshing Acme');
    expect(await rowOf(id)).toMatchObject({ status: 'revoked', canRefresh: false });
    const item = new RegExp(`<li class="item" data-connection-id="${id}">[\\s\\S]*?</li>`).exec(dead.body)?.[0];
    expect(item).toContain('<span class="badge badge-revoked">revoked</span>');
    expect(item).not.toContain('/refresh"');
    expect(item).toContain('<input type="hidden" name="providerId" value="acme">');
    expect(item).toContain('Reconnect');

    // Reconnect: a new authorization for the provider; the same provider user makes the connection active again.
    const back = await throughProvider(
      browser,
      await browser.post(`${PAGE}/connect`, { csrf: csrfOf(dead.body), providerId: 'acme' }),
    );
    expect(back.searchParams.get('connectionId')).toBe(id);
    expect(await rowOf(id)).toMatchObject({ status: 'active', canRefresh: true });

    // A refresh the service refuses (revoked) says why, with the service's status.
    await h.database.db.update(connections).set({ status: 'revoked' }).where(eq(connections.id, id));
    const refused = await browser.post(`${PAGE}/${id}/refresh`, { csrf: csrfOf(page.body) });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('A revoked connection must be reconnected');
  });

  it('Disconnect asks first, then deletes through the service and revokes at the provider', async () => {
    const { user, browser } = await signedIn();
    const id = await connectAcme(h.app, user);
    const confirm = await browser.get(`${PAGE}/${id}/disconnect`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain('<h1>Disconnect Acme?</h1>');
    expect(confirm.body).toContain(`<form method="post" action="/account/connections/${id}/disconnect">`);
    expect(confirm.body).toContain('<img class="logo" src="http://localhost:8080/providers/logos/acme.svg"');
    expect(confirm.body).toContain('<a class="button" href="/account/connections">Cancel</a>');
    expect(await rowOf(id)).toBeDefined();

    const done = await browser.submit(`${PAGE}/${id}/disconnect`, { csrf: csrfOf(confirm.body) });
    expect(done.statusCode).toBe(200);
    expect(done.body).toContain('Disconnected Acme (Ada Lovelace).');
    expect(done.body).toContain('No connections yet.');
    expect(await rowOf(id)).toBeUndefined();
    await h.app.deps.background.drain();
    expect(fake.counts.revoke).toBeGreaterThan(0);

    const again = await browser.post(`${PAGE}/${id}/disconnect`, { csrf: csrfOf(confirm.body) });
    expect(again.statusCode).toBe(404);
  });

  it("answers 404 for another account's connection on refresh and disconnect, leaving it untouched", async () => {
    const owner = await createUser(h.app);
    const theirs = await connectAcme(h.app, owner);
    const before = await rowOf(theirs);
    const { browser } = await signedIn();
    const csrf = csrfOf((await browser.get(PAGE)).body);
    for (const [method, url] of [
      ['POST', `${PAGE}/${theirs}/refresh`],
      ['GET', `${PAGE}/${theirs}/disconnect`],
      ['POST', `${PAGE}/${theirs}/disconnect`],
      ['POST', `${PAGE}/conn_doesnotexist/refresh`],
      ['POST', `${PAGE}/not-an-id/disconnect`],
    ] as const) {
      const res = method === 'GET' ? await browser.get(url) : await browser.post(url, { csrf });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.body).toContain('That connection does not exist');
      expect(res.body).not.toContain(theirs);
    }
    expect(fake.counts.refresh).toBe(0);
    expect(await rowOf(theirs)).toEqual(before);
  });

  it('a provider that needs fields after OAuth is finished on its own page', async () => {
    const { user, browser } = await signedIn();
    const page = await browser.get(PAGE);
    const back = await throughProvider(
      browser,
      await browser.post(`${PAGE}/connect`, { csrf: csrfOf(page.body), providerId: 'acme-team' }),
    );
    const pendingId = back.searchParams.get('pendingId') ?? '';
    expect(pendingId).toMatch(/^pcn_/);
    const landed = await browser.get(back.pathname + back.search);
    expect(landed.statusCode).toBe(303);
    expect(landed.headers.location).toBe(`${PAGE}/pending/${pendingId}`);

    const form = await browser.get(`${PAGE}/pending/${pendingId}`);
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('<h1>Finish connecting Acme Team</h1>');
    expect(form.body).toContain('<label for="field-workspace">Workspace</label>');
    expect(form.body).toContain('name="field.workspace"');
    expect(form.body).toContain('Your workspace name');

    const bad = await browser.post(`${PAGE}/pending/${pendingId}`, {
      csrf: csrfOf(form.body),
      'field.workspace': 'Bad Name!',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('<p class="error" id="error-workspace">must match [a-z0-9-]{2,30}</p>');
    expect(bad.body).toContain('value="Bad Name!"');
    expect(await rowsOf(user.account.id)).toHaveLength(0);

    const ok = await browser.post(`${PAGE}/pending/${pendingId}`, {
      csrf: csrfOf(form.body),
      'field.workspace': 'research',
    });
    expect(ok.statusCode).toBe(303);
    const done = new URL(String(ok.headers.location));
    expect(done.origin + done.pathname).toBe(BACK);
    const connectionId = done.searchParams.get('connectionId') ?? '';
    expect(await rowOf(connectionId)).toMatchObject({
      accountId: user.account.id,
      providerId: 'acme-team',
      status: 'active',
      vars: { workspace: 'research' },
    });
    const shown = await browser.get(done.pathname + done.search);
    expect(shown.body).toContain('Connected Acme Team as Ada Lovelace.');

    // Single use: the step is gone now.
    const gone = await browser.get(`${PAGE}/pending/${pendingId}`);
    expect(gone.statusCode).toBe(404);
    expect(gone.body).toContain('This connection step expired or was already finished.');
  });

  it('a provider that needs a field before OAuth asks for it in the Connect form', async () => {
    const { user, browser } = await signedIn();
    const page = await browser.get(PAGE);
    const row = /<li class="item" data-provider-id="acme-regional">[\s\S]*?<\/li>/.exec(page.body)?.[0] ?? '';
    expect(row).toContain('<label for="connect-acme-regional-workspace">Workspace</label>');
    expect(row).toContain('name="param.workspace" type="text" required');
    expect(row).toContain('Where your Acme lives');
    const csrf = csrfOf(page.body);

    const missing = await browser.post(`${PAGE}/connect`, { csrf, providerId: 'acme-regional' });
    expect(missing.statusCode).toBe(422);
    expect(missing.body).toContain('Check the fields: workspace is required by Acme Regional before authorization.');
    const bad = await browser.post(`${PAGE}/connect`, { csrf, providerId: 'acme-regional', 'param.workspace': 'No!' });
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('Check the fields: workspace must match [a-z0-9-]{2,30}.');
    expect(fake.counts.authorize).toBe(0);

    const ok = await browser.post(`${PAGE}/connect`, { csrf, providerId: 'acme-regional', 'param.workspace': 'north' });
    const back = await throughProvider(browser, ok, (authorize) => {
      expect(authorize.pathname).toBe('/w/north/authorize');
    });
    const connectionId = back.searchParams.get('connectionId') ?? '';
    expect(await rowOf(connectionId)).toMatchObject({
      accountId: user.account.id,
      providerId: 'acme-regional',
      status: 'active',
      vars: { workspace: 'north' },
    });
    // The connection shows the value given (its API base is the same for every connection).
    const listed = await browser.get(PAGE);
    const mine = new RegExp(`<li class="item" data-connection-id="${connectionId}">[\\s\\S]*?</li>`).exec(
      listed.body,
    )?.[0];
    expect(mine).toContain('<div class="muted small" data-connection-host>workspace <code>north</code></div>');
    // Reconnect of a revoked one asks again.
    await h.database.db.update(connections).set({ status: 'revoked' }).where(eq(connections.id, connectionId));
    const revoked = await browser.get(PAGE);
    const item = new RegExp(`<li class="item" data-connection-id="${connectionId}">[\\s\\S]*?</li>`).exec(
      revoked.body,
    )?.[0];
    expect(item).toContain(`<label for="reconnect-${connectionId}-workspace">Workspace</label>`);
  });

  it("the token form: the provider file's label, help and link, CSRF required, 404 for a service without a token", async () => {
    const { browser } = await signedIn();
    const form = await browser.get(`${PAGE}/token/jira`);
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('<form method="post" action="/account/connections/token/jira">');
    expect(form.body).toContain(
      '<a href="https://id.atlassian.com/manage-profile/security/api-tokens" target="_blank" rel="noopener noreferrer" data-docs-link>',
    );
    expect(form.body).toContain('<input id="field-site" name="field.site" type="text" required');
    expect(form.body).toContain('<input id="field-email" name="field.email" type="email" required');
    expect(form.body).toContain('<input id="field-token" name="token" type="password" required');
    // Without the CSRF token nothing is sent anywhere.
    const forged = await browser.post(`${PAGE}/token/jira`, { token: 'x', 'field.site': 'acme' });
    expect(forged.statusCode).toBe(403);
    // A field that does not fit its pattern is refused before Jira is asked.
    const bad = await browser.post(`${PAGE}/token/jira`, {
      csrf: csrfOf(form.body),
      'field.site': 'evil.example/x',
      'field.email': 'ada@example.com',
      token: 'ATATT3xFfGF0-example',
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('<p class="error" id="error-site">Site must match [a-z0-9][a-z0-9-]{0,62}.</p>');
    expect(bad.body).toContain('value="ada@example.com"');
    expect(bad.body).not.toContain('ATATT3xFfGF0-example');
    for (const url of [`${PAGE}/token/zoom`, `${PAGE}/token/no-such-service`, `${PAGE}/token/..%2Fx`]) {
      const none = await browser.get(url);
      expect(none.statusCode, url).toBe(404);
      expect(none.body).toContain('That service does not connect with a token.');
    }
  });

  it('filterCatalog matches every word anywhere, case-insensitively, within the category', () => {
    const p = (id: string, category: string, description = '') => ({
      id,
      label: id.toUpperCase(),
      description,
      logoUrl: '',
      category,
      popular: false,
      authType: 'oauth' as const,
      allowMultipleConnections: true,
      authTypes: ['oauth' as const],
      configured: true,
    });
    const list = [p('mail', 'communication', 'Send and read e-mail'), p('drive', 'storage', 'Files')];
    expect(filterCatalog(list, 'READ mail', '').map((x) => x.id)).toEqual(['mail']);
    expect(filterCatalog(list, '', 'storage').map((x) => x.id)).toEqual(['drive']);
    expect(filterCatalog(list, 'mail', 'storage')).toEqual([]);
    expect(filterCatalog(list, '  ', '')).toHaveLength(2);
  });
});
