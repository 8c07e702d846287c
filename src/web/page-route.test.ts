import { describe, expect, it } from 'vitest';
import { call, type TestHarness } from '../../test/harness.ts';
import { csrfOf, PageClient, pageSuite } from '../../test/web-client.ts';

/**
 * What every page route gets from page-route.ts, seen through real pages: sign-in first, the CSRF token of
 * a form, a form that is not what the page sends (400 on the page, never a 500), another account's
 * resource (404 on the page, as one that does not exist).
 */
describe('the page route wrapper', () => {
  let h: TestHarness;
  const suite = pageSuite({ SSRF_ALLOW_HOSTS: '127.0.0.1:9' }, (started) => (h = started));
  const signedIn = () => suite.signedIn();

  /** A form sent as JSON: the only way a field can be something other than text. */
  const postJson = (browser: PageClient, url: string, body: unknown) =>
    h.app.inject({
      method: 'POST',
      url,
      headers: { cookie: browser.cookie, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });

  it('sends a signed-out browser to sign in: a page comes back to itself, a form to its page', async () => {
    const browser = new PageClient(h.app);
    const page = await browser.get('/account/webhooks/wh_abc?x=1');
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe(`/signin?return_to=${encodeURIComponent('/account/webhooks/wh_abc?x=1')}`);

    const csrf = csrfOf((await browser.get('/signin')).body);
    const form = await browser.post('/account/webhooks?x=1', { csrf, url: 'http://127.0.0.1:9/hook' });
    expect(form.statusCode).toBe(303);
    expect(form.headers.location).toBe(`/signin?return_to=${encodeURIComponent('/account/webhooks')}`);
    // A route that names where its sign-in comes back to: the tasks list, whichever task it was.
    const task = await browser.post('/account/tasks/task_abc/run', { csrf });
    expect(task.headers.location).toBe(`/signin?return_to=${encodeURIComponent('/account/tasks')}`);
  });

  it('refuses a form without its CSRF token with the 403 page, signed in or not, before anything else', async () => {
    const { browser } = await signedIn();
    for (const url of ['/account/webhooks', '/account/tokens', '/account/agents/agt_nope/chat', '/signout']) {
      const res = await browser.post(url, { csrf: 'forged', name: 'x' });
      expect(res.statusCode, url).toBe(403);
      expect(res.body).toContain('Form expired');
    }
    // Still signed in: the forged sign-out did nothing.
    expect((await browser.get('/account/tokens')).statusCode).toBe(200);
    const stranger = new PageClient(h.app);
    const res = await stranger.post('/account/tools/tool_x/delete', {});
    expect(res.statusCode).toBe(403);
    // The chat stream answers its script: the same refusal as a JSON body.
    const stream = await browser.post('/account/agents/agt_x/chat/stream', { message: 'hi' });
    expect(stream.statusCode).toBe(403);
    expect(stream.json()).toMatchObject({ error: 'ForbiddenError', statusCode: 403 });
  });

  it('answers a form whose field is not text with the page and 400, never a 500', async () => {
    const { u, browser } = await signedIn();
    const csrf = csrfOf((await browser.get('/account/tokens')).body);

    const tokens = await postJson(browser, '/account/tokens', { csrf, name: { not: 'text' }, scopes: ['account'] });
    expect(tokens.statusCode).toBe(400);
    expect(tokens.headers['content-type']).toContain('text/html');
    expect(tokens.body).toContain('role="alert"');
    expect(tokens.body).toContain('The form could not be read: name:');
    expect(tokens.body).toContain('Personal access tokens');

    const hooks = await postJson(browser, '/account/webhooks', { csrf, url: 5, events: ['connection.created'] });
    expect(hooks.statusCode).toBe(400);
    expect(hooks.body).toContain('The form could not be read: url:');
    const listed = await call(h.app, 'GET', '/api/v1/webhooks', { token: u.sessionToken });
    expect(listed.json().data).toEqual([]);

    // A body that is no form at all.
    const agents = await postJson(browser, '/account/agents', ['not', 'a', 'form']);
    expect(agents.statusCode).toBe(403); // no token in it to check
    const tasks = await postJson(browser, '/account/tasks', { csrf, name: ['a', 1] });
    expect(tasks.statusCode).toBe(400);
    expect(tasks.body).toContain('The form could not be read: name');
  });

  it("answers 404 on the page for another account's resource, and for an id that cannot be one, unlooked-up", async () => {
    const owner = await signedIn();
    const other = await signedIn();
    const created = await call(h.app, 'POST', '/api/v1/webhooks', {
      token: owner.u.sessionToken,
      body: { url: 'http://127.0.0.1:9/hook', events: ['connection.created'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id: string = created.json().id;
    expect((await owner.browser.get(`/account/webhooks/${id}`)).statusCode).toBe(200);

    const seen = await other.browser.get(`/account/webhooks/${id}`);
    expect(seen.statusCode).toBe(404);
    expect(seen.body).toContain('role="alert"');
    const csrf = csrfOf((await other.browser.get('/account/webhooks')).body);
    const deleted = await other.browser.post(`/account/webhooks/${id}/delete`, { csrf });
    expect(deleted.statusCode).toBe(404);
    expect((await owner.browser.get(`/account/webhooks/${id}`)).statusCode).toBe(200);

    const malformed = await other.browser.get('/account/webhooks/not-an-id');
    expect(malformed.statusCode).toBe(404);
    expect(malformed.body).toContain('No such webhook');
    const agent = await other.browser.get('/account/agents/agt_!');
    expect(agent.statusCode).toBe(404);
    expect(agent.body).toContain('Agent agt_! not found');
  });

  it('serves the chat script compiled from client/chat.ts: plain JavaScript, in its own scope', async () => {
    const { browser } = await signedIn();
    const agents = await browser.get('/account/agents');
    expect(agents.statusCode).toBe(200);
    const res = await h.app.inject({ method: 'GET', url: '/assets/agent-chat.js' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(res.headers['cache-control']).toBe('public, max-age=86400');
    expect(res.body).toContain('form[data-stream]');
    expect(res.body).not.toMatch(/\binterface\b|: HTMLElement|as ChatEvent/);
    // Parses as a script (no module syntax, no types).
    expect(() => new Function(res.body)).not.toThrow();
    expect(res.body).toMatch(/^\(\(\) => \{/);
  });
});
