import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { FakeLlm } from '../../test/fakes/llm-upstream.ts';
import { call, createUser, fakeLlmSuite, type TestHarness } from '../../test/harness.ts';
import { sseEvents } from '../../test/sse.ts';
import { csrfOf, PageClient } from '../../test/web-client.ts';
import { accounts } from '../db/schema/index.ts';

/**
 * The chat page's stream (`POST /account/agents/:agentId/chat/stream`) without a browser: the events in order,
 * what is stored, and each refusal as a §7 body; the script it loads and the page's CSP.
 */
describe('agents chat page stream', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  fakeLlmSuite((s) => ({ h, llm } = s));

  const signedIn = async (tools: string[] = []) => {
    const u = await createUser(h.app);
    const browser = new PageClient(h.app);
    expect((await browser.signIn(u.account.email, u.password)).statusCode).toBe(303);
    const agent = (
      await call(h.app, 'POST', '/api/v1/agents', {
        token: u.sessionToken,
        body: { name: 'Pager', enabledBuiltInTools: tools },
      })
    ).json() as { id: string };
    const page = await browser.get(`/account/agents/${agent.id}`);
    return { u, browser, agent, page, csrf: csrfOf(page.body) };
  };

  it('streams the conversation, tool steps, the text as written and done; stores what a reload shows', async () => {
    const { u, browser, agent, page, csrf } = await signedIn(['knowledge-base']);
    // Same-origin scripts only, on this page only: no inline script, and the other pages run none.
    const csp = String(page.headers['content-security-policy']);
    expect(/script-src ([^;]*);/.exec(csp)?.[1]).toBe("'self'");
    expect(/connect-src ([^;]*);/.exec(csp)?.[1]).toBe("'self'");
    expect(csp).toContain("default-src 'none';");
    expect(String((await browser.get('/account/agents')).headers['content-security-policy'])).not.toContain(
      'script-src',
    );
    const src = /<script src="([^"]+)" defer><\/script>/.exec(page.body)?.[1] ?? '';
    expect(src).toMatch(/^\/assets\/agent-chat\.js\?v=[0-9a-f]{12}$/);
    expect(page.body).toContain(`data-stream="/account/agents/${agent.id}/chat/stream"`);
    const script = await browser.get(src);
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(script.headers['x-content-type-options']).toBe('nosniff');
    expect(script.body).toContain('data-stream');

    llm.enqueue({ toolCalls: [{ name: 'knowledge-list-bases', arguments: {} }] }, { content: 'You have none.' });
    const res = await browser.post(`/account/agents/${agent.id}/chat/stream`, { csrf, message: 'Bases?' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const events = sseEvents(res.body);
    const conversationId = events[0]?.data.conversationId as string;
    expect(conversationId).toMatch(/^conv_/);
    const url = `/account/agents/${agent.id}?c=${conversationId}`;
    expect(events.map((e) => e.event)).toEqual([
      'conversation',
      'tool.called',
      'tool.result',
      'delta',
      'delta',
      'delta',
      'done',
    ]);
    expect(events[0]?.data).toEqual({ conversationId, url });
    expect(events[1]?.data).toMatchObject({ name: 'knowledge-list-bases', arguments: '{}' });
    expect(events[2]?.data).toMatchObject({ name: 'knowledge-list-bases' });
    expect(
      events
        .filter((e) => e.event === 'delta')
        .map((e) => e.data.text)
        .join(''),
    ).toBe('You have none.');
    expect(events.at(-1)?.data).toEqual({
      conversationId,
      url,
      limited: false,
      creditsConsumed: expect.any(Number),
      creditsRemaining: expect.any(Number),
    });
    // The balance after the chat, as the account shows it at once (issue 46).
    const me = await call(h.app, 'GET', '/api/v1/accounts/me', { token: u.sessionToken });
    expect(me.json().creditBalance).toBe(events.at(-1)?.data.creditsRemaining);
    // Both model calls were streamed from the upstream.
    expect(llm.requests.map((r) => r.stream)).toEqual([true, true]);
    const stored = (
      await call(h.app, 'GET', `/api/v1/agents/${agent.id}/conversations/${conversationId}/messages`, {
        token: u.sessionToken,
      })
    ).json().data as Array<{ role: string; content: string | null }>;
    expect(stored.map((m) => [m.role, m.content === null ? null : m.content.slice(0, 14)])).toEqual([
      ['user', 'Bases?'],
      ['assistant', null],
      ['tool', '<tool_output t'],
      ['assistant', 'You have none.'],
    ]);
    const reload = await browser.get(url);
    expect(reload.body).toContain('You have none.');
    expect(reload.body).toContain('Called <code>knowledge-list-bases</code>');

    // The next message continues the conversation given in the form.
    llm.enqueue({ content: 'Still none.' });
    const next = await browser.post(`/account/agents/${agent.id}/chat/stream`, {
      csrf,
      message: 'And now?',
      conversationId,
    });
    expect(sseEvents(next.body)[0]?.data.conversationId).toBe(conversationId);
  });

  it('refuses before any stream: a bad CSRF token, no session, an empty message, another account, no credits', async () => {
    const { u, browser, agent, csrf } = await signedIn();
    const path = `/account/agents/${agent.id}/chat/stream`;
    const refused = async (res: Awaited<ReturnType<PageClient['post']>>, status: number, error: string) => {
      expect(res.statusCode, res.body).toBe(status);
      expect(res.json()).toMatchObject({ error, statusCode: status, message: expect.any(String) });
    };
    await refused(await browser.post(path, { csrf: 'forged', message: 'hi' }), 403, 'ForbiddenError');
    const stranger = new PageClient(h.app);
    const strangerCsrf = csrfOf((await stranger.get('/signin')).body);
    await refused(await stranger.post(path, { csrf: strangerCsrf, message: 'hi' }), 401, 'UnauthorizedError');
    await refused(await browser.post(path, { csrf, message: '  ' }), 422, 'ValidationError');
    const other = await createUser(h.app);
    const theirs = (
      await call(h.app, 'POST', '/api/v1/agents', { token: other.sessionToken, body: { name: 'x' } })
    ).json().id as string;
    await refused(
      await browser.post(`/account/agents/${theirs}/chat/stream`, { csrf, message: 'hi' }),
      404,
      'NotFoundError',
    );
    await refused(
      await browser.post('/account/agents/nope/chat/stream', { csrf, message: 'hi' }),
      404,
      'NotFoundError',
    );

    await h.database.db.update(accounts).set({ creditBalance: 0 }).where(eq(accounts.id, u.account.id));
    const broke = await browser.post(path, { csrf, message: 'hi' });
    await refused(broke, 402, 'CreditsExhaustedError');
    expect(broke.json().message).toBe('Insufficient credits: the balance is exhausted; add credits to continue');
    const conversations = await call(h.app, 'GET', `/api/v1/agents/${agent.id}/conversations`, {
      token: u.sessionToken,
    });
    expect(conversations.json().pagination.total).toBe(0);
    expect(llm.requests).toHaveLength(0);
  });

  it('allows RATE_LIMIT_LLM streams a window per account; 429 with Retry-After past it', async () => {
    const limited = await h.extraApp({
      LLM_BASE_URL: llm.url,
      LLM_MODELS: 'fake-model=1000000/2000000',
      RATE_LIMIT_LLM: '2',
    });
    const u = await createUser(limited);
    const browser = new PageClient(limited);
    expect((await browser.signIn(u.account.email, u.password)).statusCode).toBe(303);
    const agent = (
      await call(limited, 'POST', '/api/v1/agents', { token: u.sessionToken, body: { name: 'Budget' } })
    ).json().id as string;
    const csrf = csrfOf((await browser.get(`/account/agents/${agent}`)).body);
    const api = () =>
      call(limited, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
        token: u.sessionToken,
        body: { messages: [{ role: 'user', content: 'hi' }] },
      });
    for (let i = 0; i < 2; i++) {
      const streamed = await browser.post(`/account/agents/${agent}/chat/stream`, { csrf, message: 'hi' });
      expect(streamed.statusCode).toBe(200);
    }
    const refused = await browser.post(`/account/agents/${agent}/chat/stream`, { csrf, message: 'hi' });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused.json()).toMatchObject({ error: 'TooManyRequestsError', statusCode: 429 });
    expect(llm.requests).toHaveLength(2);
    // The API's agent chat counts its own calls (an in-memory limiter keeps one counter per route).
    expect((await api()).statusCode).toBe(200);
  });

  it('an upstream fault after the stream began is an error event with the conversation to reopen', async () => {
    const { browser, agent, csrf } = await signedIn();
    llm.enqueue({ status: 400, errorMessage: 'the model refused' });
    const res = await browser.post(`/account/agents/${agent.id}/chat/stream`, { csrf, message: 'hi' });
    const events = sseEvents(res.body);
    expect(events.map((e) => e.event)).toEqual(['conversation', 'error']);
    expect(events[1]?.data).toMatchObject({ error: 'BadRequestError', statusCode: 400, url: events[0]?.data.url });
    expect(String(events[1]?.data.message)).toContain('the model refused');
  });
});

/** The agent page's settings form (`POST /account/agents/:agentId/settings`) without a browser. */
describe('agent settings form', () => {
  let h: TestHarness;
  fakeLlmSuite((s) => ({ h } = s));

  it('saves with post-redirect-get (the notice once), refuses a stale form (403); signed out, sign-in comes back to the page', async () => {
    const u = await createUser(h.app);
    const browser = new PageClient(h.app);
    expect((await browser.signIn(u.account.email, u.password)).statusCode).toBe(303);
    const agent = (
      await call(h.app, 'POST', '/api/v1/agents', { token: u.sessionToken, body: { name: 'Form' } })
    ).json() as { id: string };
    const page = await browser.get(`/account/agents/${agent.id}`);
    // The copy buttons' script beside the chat's, both same-origin.
    const scripts = [...page.body.matchAll(/<script src="([^"]+)" defer><\/script>/g)].map((m) => m[1]);
    expect(scripts.some((s) => s?.startsWith('/assets/copy.js?v='))).toBe(true);
    const csrf = csrfOf(page.body);
    const form = { csrf, name: 'Renamed', temperature: '0.2', tools: ['agent-memory', 'skills'] };

    const stale = await browser.post(`/account/agents/${agent.id}/settings`, { ...form, csrf: 'x' });
    expect(stale.statusCode).toBe(403);
    const read = async () =>
      (await call(h.app, 'GET', `/api/v1/agents/${agent.id}`, { token: u.sessionToken })).json() as {
        name: string;
        temperature: number;
        enabledBuiltInTools: string[];
      };
    expect((await read()).name).toBe('Form');

    const saved = await browser.post(`/account/agents/${agent.id}/settings`, form);
    expect(saved.statusCode).toBe(303);
    expect(saved.headers.location).toBe(`/account/agents/${agent.id}#settings`);
    expect(await read()).toMatchObject({
      name: 'Renamed',
      temperature: 0.2,
      enabledBuiltInTools: ['agent-memory', 'skills'],
    });
    const landed = await browser.get(`/account/agents/${agent.id}`);
    expect(landed.body).toContain('<p class="notice" role="status">Settings saved.</p>');
    expect((await browser.get(`/account/agents/${agent.id}`)).body).not.toContain('Settings saved.');

    // Signed out (the form's token still fits this browser): to sign-in, and back to the page after.
    expect((await browser.post('/signout', { csrf })).statusCode).toBe(303);
    const signedOut = await browser.post(`/account/agents/${agent.id}/settings`, { ...form, name: 'Ghost' });
    expect(signedOut.statusCode).toBe(303);
    expect(signedOut.headers.location).toBe(`/signin?return_to=${encodeURIComponent(`/account/agents/${agent.id}`)}`);
    expect((await read()).name).toBe('Renamed');
  });
});
