import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { resolveToLoopback } from '../../../test/fakes/loopback-dns.ts';
import {
  acmeProvider,
  type FakeOAuthProvider,
  providersDirEnv,
  startFakeOAuthProvider,
} from '../../../test/fakes/oauth-provider.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { connections, oauthStates } from '../../db/schema/index.ts';
import { SHIPPED_PROVIDERS_DIR } from '../providers/catalog.ts';
import { APP_REDIRECT, authorize, execute, openAuthorizationUrl } from './test-support.ts';

/**
 * Per-connection hosts: a value the user gives when connecting (a Zendesk subdomain, a Salesforce login
 * domain) and one the provider answers (Salesforce's `instance_url`) choose the host of the authorization
 * URL, the token exchange, the refresh and the API calls. The fake provider listens on loopback; every host
 * under `acme.test` resolves to it, and it records the Host header each request was sent to.
 */

const SHIPPED_SALESFORCE = JSON.parse(readFileSync(join(SHIPPED_PROVIDERS_DIR, 'salesforce.json'), 'utf8'));
const SUBDOMAIN = { name: 'subdomain', label: 'Subdomain', pattern: '[a-z0-9][a-z0-9-]{0,62}' };

describe('per-connection hosts', () => {
  let h: TestHarness;
  let fake: FakeOAuthProvider;
  let port: string;
  let restoreDns: () => Promise<void>;
  let user: TestUser;
  const hosts = (path: string) => fake.requests.filter((r) => r.path === path).map((r) => r.host);

  beforeAll(async () => {
    fake = await startFakeOAuthProvider();
    port = new URL(fake.url).port;
    restoreDns = resolveToLoopback('acme.test');
    // Zendesk's shape: every URL on the subdomain the user gives before authorization.
    const desk = acmeProvider(`http://{subdomain}.acme.test:${port}`, {
      id: 'acme-desk',
      label: 'Acme Desk',
      finalizeFields: [SUBDOMAIN],
    });
    // Salesforce's shape: its login domain field (default `login`), the API on the instance the token names.
    const base = acmeProvider(`http://{loginDomain}.acme.test:${port}`);
    const force = {
      ...base,
      id: 'acme-force',
      label: 'Acme Force',
      finalizeFields: SHIPPED_SALESFORCE.finalizeFields,
      oauth: {
        ...(base.oauth as Record<string, unknown>),
        userInfo: { url: '{instanceUrl}/userinfo', fields: { providerUserId: 'id', displayName: 'name' } },
        tokenResponse: {
          vars: { instanceUrl: { path: 'instance_url', pattern: `^http://[a-z0-9-]+\\.acme\\.test:${port}$` } },
        },
      },
      api: { baseUrl: '{instanceUrl}/api' },
    };
    // Atlassian's shape: the site the user names picks one of the sites the grant reaches (the first without).
    const atlasBase = acmeProvider(fake.url);
    const atlas = {
      ...atlasBase,
      id: 'acme-atlas',
      label: 'Acme Atlas',
      finalizeFields: [{ ...SUBDOMAIN, name: 'site', label: 'Site', optional: true }],
      oauth: {
        ...(atlasBase.oauth as Record<string, unknown>),
        // Figma's shape: refreshes go to an endpoint of their own (the fake serves /w/<name>/token as /token).
        refreshUrl: `${fake.url}/w/refresh/token`,
        discovery: {
          url: `${fake.url}/api/sites`,
          select: { path: 'url', equals: 'https://{site}.atlassian.net' },
          vars: { cloudId: { path: 'id', pattern: '^c-[a-z]+$' } },
        },
      },
      api: { baseUrl: `http://{cloudId}.acme.test:${port}/api` },
    };
    h = await createHarness(
      providersDirEnv([
        { fake, definition: desk },
        { fake, definition: force },
        { fake, definition: atlas },
      ]),
    );
    user = await createUser(h.app);
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
    await restoreDns?.();
  });
  beforeEach(() => fake.reset());

  it("a subdomain connection's authorization URL, token exchange, refresh and API calls go to the chosen host", async () => {
    const host = `zeta.acme.test:${port}`;
    const init = await call(h.app, 'POST', '/api/v1/connections/initiate', {
      token: user.sessionToken,
      body: { providerId: 'acme-desk', redirectUrl: APP_REDIRECT, providerParams: { subdomain: 'zeta' } },
    });
    expect(init.statusCode, init.body).toBe(200);
    const { providerUrl } = await openAuthorizationUrl(h.app, init.json().authorizationUrl);
    expect(new URL(providerUrl).host).toBe(host);

    const back = await authorize(h.app, user.sessionToken, {
      providerId: 'acme-desk',
      redirectUrl: APP_REDIRECT,
      providerParams: { subdomain: 'zeta' },
    });
    const id = back.searchParams.get('connectionId') ?? '';
    expect(id, back.toString()).toMatch(/^conn_/);
    expect(hosts('/authorize')).toEqual([host]);
    expect(hosts('/token')).toEqual([host]);
    expect(hosts('/userinfo')).toEqual([host]);

    const run = await execute(h.app, user.sessionToken, id, 'list_items', {}, 'acme-desk');
    expect(run.statusCode, run.body).toBe(200);
    expect(hosts('/api/items')).toEqual([host, host, host]);

    const refreshed = await call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: user.sessionToken });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(hosts('/token')).toEqual([host, host]);
    expect(fake.counts.refresh).toBe(1);

    const got = await call(h.app, 'GET', `/api/v1/connections/${id}`, { token: user.sessionToken });
    expect(got.json()).toMatchObject({
      providerId: 'acme-desk',
      fields: { subdomain: 'zeta' },
      apiBaseUrl: `http://zeta.acme.test:${port}/api`,
    });
    const provider = await call(h.app, 'GET', '/api/v1/providers/acme-desk', { token: user.sessionToken });
    expect(provider.json().connectFields).toEqual([SUBDOMAIN]);
  });

  it.each([
    ['evil.com/', 'must match [a-z0-9][a-z0-9-]{0,62}'],
    ['a.b', 'must match [a-z0-9][a-z0-9-]{0,62}'],
    ['', 'must match [a-z0-9][a-z0-9-]{0,62}'],
    ['zeta@evil.com', 'must match [a-z0-9][a-z0-9-]{0,62}'],
    [undefined, 'is required by Acme Desk before authorization'],
  ])('a subdomain %j is refused before anything is stored or sent', async (subdomain, message) => {
    const u = await createUser(h.app);
    const res = await call(h.app, 'POST', '/api/v1/connections/initiate', {
      token: u.sessionToken,
      body: {
        providerId: 'acme-desk',
        redirectUrl: APP_REDIRECT,
        ...(subdomain === undefined ? {} : { providerParams: { subdomain } }),
      },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      error: 'ValidationError',
      message: `Validation failed: body.providerParams.subdomain: ${message}`,
      statusCode: 422,
      details: [{ field: 'body.providerParams.subdomain', message }],
    });
    const states = await h.database.db.select().from(oauthStates).where(eq(oauthStates.accountId, u.account.id));
    expect(states).toEqual([]);
    expect(fake.requests).toEqual([]);
  });

  it("Salesforce's shape: the login domain defaults to login, and the token answer's instance_url is the API base", async () => {
    fake.tokenExtras = { instance_url: `http://na42.acme.test:${port}` };
    const provider = await call(h.app, 'GET', '/api/v1/providers/acme-force', { token: user.sessionToken });
    expect(provider.json().connectFields).toEqual([expect.objectContaining({ name: 'loginDomain', default: 'login' })]);

    const back = await authorize(h.app, user.sessionToken, { providerId: 'acme-force', redirectUrl: APP_REDIRECT });
    const id = back.searchParams.get('connectionId') ?? '';
    expect(id, back.toString()).toMatch(/^conn_/);
    const login = `login.acme.test:${port}`;
    const instance = `na42.acme.test:${port}`;
    expect(hosts('/authorize')).toEqual([login]);
    expect(hosts('/token')).toEqual([login]);
    expect(hosts('/userinfo')).toEqual([instance]);
    const run = await execute(h.app, user.sessionToken, id, 'get_item', { id: 'item-1' }, 'acme-force');
    expect(run.statusCode, run.body).toBe(200);
    expect(hosts('/api/items/item-1')).toEqual([instance]);
    const got = await call(h.app, 'GET', `/api/v1/connections/${id}`, { token: user.sessionToken });
    expect(got.json()).toMatchObject({ fields: { loginDomain: 'login' }, apiBaseUrl: `http://${instance}/api` });

    // A connection made before the field existed keeps refreshing at the default login host.
    await h.database.db
      .update(connections)
      .set({ vars: { instanceUrl: `http://${instance}` } })
      .where(eq(connections.id, id));
    const refreshed = await call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: user.sessionToken });
    expect(refreshed.json()).toMatchObject({ status: 'active' });
    expect(hosts('/token')).toEqual([login, login]);
  });

  it('a sandbox or My Domain logs in on its own host; an instance_url off the provider domain is never used', async () => {
    fake.tokenExtras = { instance_url: `http://acme--uat.acme.test:${port}` };
    const back = await authorize(h.app, user.sessionToken, {
      providerId: 'acme-force',
      redirectUrl: APP_REDIRECT,
      providerParams: { loginDomain: 'acme--uat.sandbox.my' },
    });
    expect(back.searchParams.get('connectionId'), back.toString()).toMatch(/^conn_/);
    expect(hosts('/token')).toEqual([`acme--uat.sandbox.my.acme.test:${port}`]);

    fake.reset();
    fake.tokenExtras = { instance_url: fake.url };
    const refused = await authorize(h.app, user.sessionToken, { providerId: 'acme-force', redirectUrl: APP_REDIRECT });
    expect(refused.searchParams.get('connectionId')).toBeNull();
    expect(refused.searchParams.get('error')).toBe('server_error');
    expect(refused.searchParams.get('error_description')).toBe(
      'The connection has no "instanceUrl" value; finalize or reconnect it',
    );
    expect(fake.requests.map((r) => r.path)).toEqual(['/authorize', '/token']);

    for (const loginDomain of ['evil.com/', 'login.evil.com:80', 'x@y']) {
      const res = await call(h.app, 'POST', '/api/v1/connections/initiate', {
        token: user.sessionToken,
        body: { providerId: 'acme-force', redirectUrl: APP_REDIRECT, providerParams: { loginDomain } },
      });
      expect(res.statusCode, loginDomain).toBe(422);
      expect(res.json().details[0].field).toBe('body.providerParams.loginDomain');
    }
  });

  it("Atlassian's shape: the site chosen when connecting picks the cloud the API calls go to; a refresh URL of its own", async () => {
    fake.sites = [
      { id: 'c-one', url: 'https://one.atlassian.net' },
      { id: 'c-two', url: 'https://two.atlassian.net' },
    ];
    const connect = async (providerParams?: Record<string, string>) => {
      const back = await authorize(h.app, user.sessionToken, {
        providerId: 'acme-atlas',
        redirectUrl: APP_REDIRECT,
        ...(providerParams ? { providerParams } : {}),
      });
      return back;
    };
    const two = await connect({ site: 'two' });
    const id = two.searchParams.get('connectionId') ?? '';
    expect(id, two.toString()).toMatch(/^conn_/);
    const got = await call(h.app, 'GET', `/api/v1/connections/${id}`, { token: user.sessionToken });
    expect(got.json()).toMatchObject({ fields: { site: 'two' }, apiBaseUrl: `http://c-two.acme.test:${port}/api` });
    const run = await execute(h.app, user.sessionToken, id, 'get_item', { id: 'item-1' }, 'acme-atlas');
    expect(run.statusCode, run.body).toBe(200);
    expect(hosts('/api/items/item-1')).toEqual([`c-two.acme.test:${port}`]);
    const refreshed = await call(h.app, 'PUT', `/api/v1/connections/${id}/refresh`, { token: user.sessionToken });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(fake.requests.filter((r) => r.path.endsWith('/token')).map((r) => r.path)).toEqual([
      '/token',
      '/w/refresh/token',
    ]);

    // Without a site (an empty form field too), the first site granted.
    const first = await connect({ site: '' });
    const firstId = first.searchParams.get('connectionId') ?? '';
    const firstGot = await call(h.app, 'GET', `/api/v1/connections/${firstId}`, { token: user.sessionToken });
    expect(firstGot.json().apiBaseUrl).toBe(`http://c-one.acme.test:${port}/api`);
    expect(firstGot.json().fields).toBeUndefined();

    const none = await connect({ site: 'three' });
    expect(none.searchParams.get('connectionId')).toBeNull();
    expect(none.searchParams.get('error_description')).toBe(
      'Acme Atlas did not grant access to https://three.atlassian.net (granted: https://one.atlassian.net, https://two.atlassian.net); connect again and choose it on the consent screen',
    );
  });
});
