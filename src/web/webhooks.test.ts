import { describe, expect, it } from 'vitest';
import { call, type TestHarness } from '../../test/harness.ts';
import { PageClient, pageSuite } from '../../test/web-client.ts';
import { webhookDeliveries } from '../db/schema/index.ts';
import { newId } from '../lib/ids.ts';

/** The webhooks page without a browser: register (secret shown once), list, deliveries, disable, delete, 404s. */
describe('/account/webhooks', () => {
  let h: TestHarness;
  const suite = pageSuite({ SSRF_ALLOW_HOSTS: '127.0.0.1:9' }, (started) => (h = started));
  const signedIn = () => suite.signedIn('/account/webhooks');

  it('registers an endpoint, shows its secret once, lists it with its last delivery, shows its deliveries', async () => {
    const anon = new PageClient(h.app);
    expect((await anon.get('/account/webhooks')).headers.location).toBe('/signin?return_to=%2Faccount%2Fwebhooks');
    const { u, browser, csrf } = await signedIn();
    const empty = await browser.get('/account/webhooks');
    expect(empty.statusCode).toBe(200);
    expect(empty.body).toContain('<a href="/account/webhooks">Webhooks</a>');
    expect(empty.body).toContain('No webhooks yet: register one below.');

    // The service's refusal, said on the form, which keeps what was typed.
    const refused = await browser.post('/account/webhooks', {
      csrf,
      url: 'http://10.1.2.3/hook',
      events: ['connection.revoked'],
      description: 'intranet',
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toMatch(
      /<p class="error" role="alert" id="form-error">The webhook URL may not be used: [^<]+<\/p>/,
    );
    expect(refused.body).toContain('value="http://10.1.2.3/hook"');
    expect(refused.body).toContain('value="connection.revoked" checked');
    const none = await browser.post('/account/webhooks', { csrf, url: 'http://127.0.0.1:9/hook' });
    expect(none.statusCode).toBe(422);
    expect(none.body).toContain('Pick at least one event.');

    const posted = await browser.post('/account/webhooks', {
      csrf,
      url: 'http://127.0.0.1:9/hook',
      events: ['connection.revoked', 'task_run.finished'],
      description: 'My <b>service</b>',
    });
    expect(posted.statusCode).toBe(303);
    expect(posted.headers.location).toBe('/account/webhooks');
    const shown = await browser.get('/account/webhooks');
    const secret = /id="webhook-secret" type="text" readonly value="(whsec_[^"]+)"/.exec(shown.body)?.[1] ?? '';
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
    expect(shown.body).toContain('Copy its signing secret now: it is not shown again.');
    expect(shown.body).toContain('My &lt;b&gt;service&lt;/b&gt;');
    const [hook] = (await call(h.app, 'GET', '/api/v1/webhooks', { token: u.sessionToken })).json().data;
    expect(hook).toMatchObject({
      url: 'http://127.0.0.1:9/hook',
      events: ['connection.revoked', 'task_run.finished'],
      enabled: true,
    });
    expect(shown.body).toContain(`<a href="/account/webhooks/${hook.id}"><code>http://127.0.0.1:9/hook</code></a>`);
    expect(shown.body).toContain('no deliveries yet');
    // Once: a reload lists it without the secret.
    const again = await browser.get('/account/webhooks');
    expect(again.body).toContain('http://127.0.0.1:9/hook');
    expect(again.body).not.toContain(secret);
    expect(again.body).not.toContain('whsec_');

    const at = (ms: number) => new Date(Date.now() - ms);
    const newest = at(1000);
    await h.database.db.insert(webhookDeliveries).values([
      {
        id: newId('webhookDelivery'),
        accountId: u.account.id,
        endpointId: hook.id,
        eventType: 'connection.revoked',
        body: '{}',
        status: 'succeeded',
        attempts: 1,
        responseStatus: 204,
        createdAt: at(60_000),
      },
      {
        id: newId('webhookDelivery'),
        accountId: u.account.id,
        endpointId: hook.id,
        eventType: 'task_run.finished',
        body: '{}',
        status: 'pending',
        attempts: 2,
        responseStatus: 500,
        lastError: 'The endpoint answered HTTP 500: <oops>',
        nextAttemptAt: new Date('2030-01-02T03:04:05.000Z'),
        createdAt: newest,
      },
    ]);
    const listed = await browser.get('/account/webhooks');
    expect(listed.body).toContain(
      'last delivery <strong data-delivery-status="pending">Pending</strong> (task_run.finished',
    );
    const one = await browser.get(`/account/webhooks/${hook.id}`);
    expect(one.statusCode).toBe(200);
    expect(one.body).toContain('The newest 2 of 2; times in UTC.');
    expect(one.body).toContain(
      `<tr data-status="pending"><td class="small">${newest.toISOString().slice(0, 19).replace('T', ' ')}</td>`,
    );
    expect(one.body).toContain(
      '<td>Pending</td><td>2</td><td>500</td><td class="small">2030-01-02 03:04:05</td><td class="small" style="overflow-wrap:anywhere">The endpoint answered HTTP 500: &lt;oops&gt;</td>',
    );
    expect(one.body).toContain('<td>Delivered</td><td>1</td><td>204</td><td class="small"></td>');

    // Neither true nor false: nothing changes.
    const odd = await browser.post(`/account/webhooks/${hook.id}/enabled`, { csrf, enabled: 'yes' });
    expect(odd.statusCode).toBe(303);
    expect((await call(h.app, 'GET', `/api/v1/webhooks/${hook.id}`, { token: u.sessionToken })).json().enabled).toBe(
      true,
    );
    // Disable, then enable again.
    const off = await browser.submit(`/account/webhooks/${hook.id}/enabled`, { csrf, enabled: 'false' });
    expect(off.body).toContain('Webhook disabled: nothing is sent to it until you enable it again.');
    expect(off.body).toContain('<button type="submit">Enable</button>');
    expect((await call(h.app, 'GET', `/api/v1/webhooks/${hook.id}`, { token: u.sessionToken })).json().enabled).toBe(
      false,
    );
    expect((await browser.get('/account/webhooks')).body).toContain(
      '<span class="badge badge-expired">disabled</span>',
    );
    await browser.submit(`/account/webhooks/${hook.id}/enabled`, { csrf, enabled: 'true' });
    expect((await call(h.app, 'GET', `/api/v1/webhooks/${hook.id}`, { token: u.sessionToken })).json().enabled).toBe(
      true,
    );

    // Delete: a confirmation first, then the POST.
    const confirm = await browser.get(`/account/webhooks/${hook.id}/delete`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain(`action="/account/webhooks/${hook.id}/delete"`);
    const deleted = await browser.submit(`/account/webhooks/${hook.id}/delete`, { csrf });
    expect(deleted.body).toContain('Webhook deleted.');
    expect(deleted.body).toContain('No webhooks yet');
    expect((await call(h.app, 'GET', `/api/v1/webhooks/${hook.id}`, { token: u.sessionToken })).statusCode).toBe(404);
  });

  it("answers 404 for another account's endpoint on its page and every form; refuses a form without its CSRF token", async () => {
    const owner = await signedIn();
    const created = await call(h.app, 'POST', '/api/v1/webhooks', {
      token: owner.u.sessionToken,
      body: { url: 'http://127.0.0.1:9/owner', events: ['connection.created'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const path = `/account/webhooks/${created.json().id}`;

    const other = await signedIn();
    expect((await other.browser.get('/account/webhooks')).body).not.toContain('127.0.0.1:9/owner');
    for (const p of [path, `${path}/delete`, '/account/webhooks/wh_nope', '/account/webhooks/..%2Fx']) {
      expect((await other.browser.get(p)).statusCode, p).toBe(404);
    }
    for (const [action, form] of [
      ['enabled', { enabled: 'false' }],
      ['enabled', { enabled: 'maybe' }],
      ['delete', {}],
    ] as const) {
      const res = await other.browser.post(`${path}/${action}`, { csrf: other.csrf, ...form });
      expect(res.statusCode, action).toBe(404);
      expect(res.body).toContain(`Webhook ${created.json().id} not found`);
    }

    // Without the CSRF token (or with another browser's), the owner's own forms are refused and change nothing.
    for (const token of [undefined, other.csrf]) {
      const form: Record<string, string> = token ? { csrf: token } : {};
      expect((await owner.browser.post(`${path}/delete`, form)).statusCode).toBe(403);
      expect((await owner.browser.post(`${path}/enabled`, { ...form, enabled: 'false' })).statusCode).toBe(403);
      const add = await owner.browser.post('/account/webhooks', {
        ...form,
        url: 'http://127.0.0.1:9/csrf',
        events: 'connection.created',
      });
      expect(add.statusCode).toBe(403);
      expect(add.body).toContain('Form expired');
    }
    const still = (await call(h.app, 'GET', '/api/v1/webhooks', { token: owner.u.sessionToken })).json().data;
    expect(still).toMatchObject([{ url: 'http://127.0.0.1:9/owner', enabled: true }]);
    expect((await owner.browser.get(path)).statusCode).toBe(200);
  });
});
