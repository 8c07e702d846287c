import { describe, expect, it } from 'vitest';
import { call, type TestHarness } from '../../test/harness.ts';
import { PageClient, pageSuite } from '../../test/web-client.ts';

/** The messaging channels pages without a browser: another account's channel is a 404 on every form. */
describe('messaging channel pages', () => {
  let h: TestHarness;
  const suite = pageSuite(
    { LLM_BASE_URL: 'http://127.0.0.1:9/v1', LLM_MODELS: 'fake-model=1000/2000' },
    (started) => (h = started),
  );
  const signedIn = () => suite.signedIn('/account/channels');

  it("answers 404 for another account's channel on its page and every form, with or without a user id", async () => {
    const owner = await signedIn();
    const agent = await call(h.app, 'POST', '/api/v1/agents', { token: owner.u.sessionToken, body: { name: 'A' } });
    expect(agent.statusCode, agent.body).toBe(201);
    const created = await call(h.app, 'POST', '/api/v1/messaging-channels', {
      token: owner.u.sessionToken,
      body: { type: 'webchat', agentId: agent.json().id, config: {} },
    });
    expect(created.statusCode, created.body).toBe(201);
    const path = `/account/channels/${created.json().id}`;

    const other = await signedIn();
    expect((await other.browser.get(path)).statusCode).toBe(404);
    for (const [action, form] of [
      ['unlink', { externalUserId: '4915100000001' }],
      ['unlink', {}], // no user id (security review, 5c: this was a 303)
      ['unlink', { externalUserId: '' }],
      ['link', {}],
      ['delete', {}],
    ] as const) {
      const res = await other.browser.post(`${path}/${action}`, { csrf: other.csrf, ...form });
      expect(res.statusCode, `${action} ${JSON.stringify(form)}`).toBe(404);
    }
    // Untouched, and the owner still reaches it; the owner's own unlink without a user id changes nothing.
    expect((await owner.browser.get(path)).statusCode).toBe(200);
    const own = await owner.browser.post(`${path}/unlink`, { csrf: owner.csrf });
    expect(own.statusCode).toBe(303);
    expect(own.headers.location).toBe(path);
  });

  it('warns, on a plain-http BASE_URL, that Telegram will refuse the webhook; says nothing under https', async () => {
    const owner = await signedIn();
    await call(h.app, 'POST', '/api/v1/agents', { token: owner.u.sessionToken, body: { name: 'A' } });
    const plain = (await owner.browser.get('/account/channels')).body;
    expect(plain).toContain(
      'Telegram delivers messages only to an https address, and this service is at http://localhost:8080: Telegram will refuse its webhook.',
    );
    expect(plain).toContain('set BASE_URL to that address first');
    const app = await h.extraApp({ BASE_URL: 'https://sb.example.com' });
    const secure = new PageClient(app);
    expect((await secure.signIn(owner.u.account.email, owner.u.password)).statusCode).toBe(303);
    const page = await secure.get('/account/channels');
    expect(page.body).toContain('Connect a Telegram bot');
    expect(page.body).not.toContain('Telegram will refuse its webhook');
  });
});
