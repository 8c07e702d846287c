import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { FakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { call, createUser, fakeLlmSuite, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { sseEvents } from '../../../test/sse.ts';
import { webchatVisitors } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';
import { sha256Hex } from '../../lib/ids.ts';

const API = '/api/v1/messaging-channels';
const MESSAGES = `${API}/webchat/messages`;

describe('messaging channels: web chat', () => {
  let h: TestHarness;
  let llm: FakeLlm;

  fakeLlmSuite((s) => ({ h, llm } = s));

  const as = (u: TestUser) => ({ token: u.sessionToken });
  const webchat = async (config: Record<string, unknown> = {}, agent: Record<string, unknown> = {}) => {
    const user = await createUser(h.app);
    const agentId = (
      await call(h.app, 'POST', '/api/v1/agents', { ...as(user), body: { name: 'Helper', ...agent } })
    ).json().id as string;
    const res = await call(h.app, 'POST', API, { ...as(user), body: { type: 'webchat', agentId, config } });
    expect(res.statusCode, res.body).toBe(201);
    return { user, agentId, channel: res.json() as { id: string; widgetSnippet: string; config: unknown } };
  };
  const say = (body: Record<string, unknown>, headers: Record<string, string> = {}, app: App = h.app) =>
    app.inject({
      method: 'POST',
      url: MESSAGES,
      headers: { 'content-type': 'application/json', ...headers },
      payload: JSON.stringify(body),
    });

  it('answers a visitor, issues a token stored only as a hash, and keeps one conversation per visitor', async () => {
    const w = await webchat();
    expect(w.channel.config).toEqual({ allowedOrigins: [] });
    expect(w.channel.widgetSnippet).toBe(
      `<script src="http://localhost:8080/webchat/widget.js" data-channel-id="${w.channel.id}" async></script>`,
    );
    llm.enqueue({ content: 'Hello! How can I help?' }, { content: 'We open at nine.' });
    const first = await say({ channelId: w.channel.id, content: 'Hi' });
    expect(first.statusCode, first.body).toBe(200);
    const { visitorToken, conversationId } = first.json();
    expect(first.json()).toEqual({
      reply: 'Hello! How can I help?',
      visitorToken: expect.stringMatching(/^wct_[A-Za-z0-9_-]{43}$/),
      conversationId: expect.stringMatching(/^conv_/),
    });
    const visitors = await h.database.db
      .select()
      .from(webchatVisitors)
      .where(eq(webchatVisitors.channelId, w.channel.id));
    expect(visitors).toHaveLength(1);
    expect(visitors[0]?.tokenHash).toBe(sha256Hex(visitorToken));
    expect(JSON.stringify(visitors)).not.toContain(visitorToken);

    const second = await say({ channelId: w.channel.id, content: 'When do you open?', visitorToken });
    expect(second.json()).toEqual({ reply: 'We open at nine.', visitorToken, conversationId });
    expect(llm.requests[1]?.messages.map((m) => m.content)).toEqual(
      expect.arrayContaining(['Hi', 'Hello! How can I help?', 'When do you open?']),
    );
    // The owner sees the visitor's conversation under the agent.
    const convs = await call(h.app, 'GET', `/api/v1/agents/${w.agentId}/conversations`, as(w.user));
    expect(convs.json().data.map((c: { id: string }) => c.id)).toEqual([conversationId]);

    // A token the channel does not know starts a new visitor.
    const stranger = await say({ channelId: w.channel.id, content: 'Hi', visitorToken: 'wct_unknown' });
    expect(stranger.json().visitorToken).not.toBe(visitorToken);
    expect(stranger.json().conversationId).not.toBe(conversationId);
  });

  it('a retried clientMessageId answers the stored reply without running the agent again', async () => {
    const w = await webchat();
    llm.enqueue({ content: 'Once.' });
    const body = { channelId: w.channel.id, content: 'Ping', clientMessageId: 'm-1' };
    const first = (await say(body)).json();
    const retried = await say({ ...body, visitorToken: first.visitorToken });
    expect(retried.json()).toEqual(first);
    expect(llm.requests).toHaveLength(1);
  });

  it('streams with Accept: text/event-stream: start, deltas, done', async () => {
    const w = await webchat();
    llm.enqueue({ content: 'Streaming works fine' });
    const res = await say({ channelId: w.channel.id, content: 'Stream?' }, { accept: 'text/event-stream' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const events = sseEvents(res.body);
    expect(events[0]).toEqual({
      event: 'start',
      data: { visitorToken: expect.stringMatching(/^wct_/), conversationId: expect.stringMatching(/^conv_/) },
    });
    expect(events.filter((e) => e.event === 'delta').map((e) => e.data.content)).toEqual([
      'Streaming ',
      'works ',
      'fine',
    ]);
    expect(events.at(-1)).toEqual({
      event: 'done',
      data: {
        reply: 'Streaming works fine',
        visitorToken: events[0]?.data.visitorToken,
        conversationId: events[0]?.data.conversationId,
      },
    });
  });

  it('enforces the origin allow-list and answers CORS for the allowed page', async () => {
    const w = await webchat({ allowedOrigins: ['https://shop.example'] });
    for (const headers of [{ origin: 'https://evil.example' }, {}] as Record<string, string>[]) {
      const res = await say({ channelId: w.channel.id, content: 'Hi' }, headers);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({
        error: 'ForbiddenError',
        message: "This page's origin is not allowed to use this web chat",
        statusCode: 403,
      });
      // The refused page may not even read the refusal: its origin is never echoed (security review, 5b).
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    }
    const streamed = await say(
      { channelId: w.channel.id, content: 'Hi' },
      { origin: 'https://evil.example', accept: 'text/event-stream' },
    );
    expect(streamed.statusCode).toBe(403);
    expect(streamed.headers['access-control-allow-origin']).toBeUndefined();
    // Nor for a channel that does not exist.
    const unknown = await say({ channelId: 'mch_unknown', content: 'Hi' }, { origin: 'https://evil.example' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['access-control-allow-origin']).toBeUndefined();
    const ok = await say({ channelId: w.channel.id, content: 'Hi' }, { origin: 'https://shop.example' });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe('https://shop.example');
    const preflight = await h.app.inject({
      method: 'OPTIONS',
      url: MESSAGES,
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://shop.example');
    expect(preflight.headers['access-control-allow-headers']).toBe('content-type, accept');

    const updated = await call(h.app, 'PUT', `${API}/${w.channel.id}`, {
      ...as(w.user),
      body: { config: { allowedOrigins: ['ftp://x/path'] } },
    });
    expect(updated.statusCode).toBe(422);
  });

  it("refuses unknown channels and non-web-chat channels (404), and runs without the owner's data", async () => {
    expect((await say({ channelId: 'mch_nope', content: 'Hi' })).statusCode).toBe(404);
    const w = await webchat({}, { enabledBuiltInTools: ['knowledge-base', 'provider-tools'] });
    llm.enqueue({ content: 'ok' });
    expect((await say({ channelId: w.channel.id, content: 'Read the wiki' })).statusCode).toBe(200);
    expect(llm.requests[0]?.tools ?? []).toEqual([]);
  });

  it('limits messages per address, per visitor per day and per channel per day (429 with Retry-After)', async () => {
    const perVisitor = await h.extraApp({ WEBCHAT_DAILY_PER_VISITOR: '2' });
    const w = await webchat();
    const first = (await say({ channelId: w.channel.id, content: '1' }, {}, perVisitor)).json();
    await say({ channelId: w.channel.id, content: '2', visitorToken: first.visitorToken }, {}, perVisitor);
    const third = await say(
      { channelId: w.channel.id, content: '3', visitorToken: first.visitorToken },
      {},
      perVisitor,
    );
    expect(third.statusCode).toBe(429);
    expect(third.json().message).toBe('You have sent the most messages allowed today; come back tomorrow');
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);

    const perChannel = await h.extraApp({ WEBCHAT_DAILY_PER_CHANNEL: '2' });
    const c = await webchat();
    expect((await say({ channelId: c.channel.id, content: 'a' }, {}, perChannel)).statusCode).toBe(200);
    expect((await say({ channelId: c.channel.id, content: 'b' }, {}, perChannel)).statusCode).toBe(200);
    const over = await say({ channelId: c.channel.id, content: 'c' }, { origin: 'https://shop.example' }, perChannel);
    expect(over.statusCode).toBe(429);
    expect(over.json().message).toBe('This chat has answered the most messages allowed today');
    // A page the channel accepts may read why it was refused.
    expect(over.headers['access-control-allow-origin']).toBe('https://shop.example');

    const perAddress = await h.extraApp({ WEBCHAT_RATE_LIMIT: '2' });
    const a = await webchat();
    const codes = [];
    for (let i = 0; i < 3; i++)
      codes.push((await say({ channelId: a.channel.id, content: `${i}` }, {}, perAddress)).statusCode);
    expect(codes).toEqual([200, 200, 429]);
  });

  it("answers within the channel writer's scopes: a channel made by a token that may not chat answers no one", async () => {
    const user = await createUser(h.app);
    const agentId = (await call(h.app, 'POST', '/api/v1/agents', { ...as(user), body: { name: 'Helper' } })).json()
      .id as string;
    const channelOf = async (token: string) => {
      const res = await call(h.app, 'POST', API, { token, body: { type: 'webchat', agentId, config: {} } });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().id as string;
    };
    const refused = await say({ channelId: await channelOf(await user.pat(['messaging-channels'])), content: 'Hi' });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({
      error: 'ForbiddenError',
      message: 'Missing required scope: agents-all or agents-use',
      statusCode: 403,
    });
    expect(llm.requests).toEqual([]);
    llm.enqueue({ content: 'Hello!' });
    const chatter = await user.pat(['messaging-channels', 'agents-use']);
    const answered = await say({ channelId: await channelOf(chatter), content: 'Hi' });
    expect(answered.statusCode, answered.body).toBe(200);
    expect(answered.json().reply).toBe('Hello!');
  });

  it('serves the widget script', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/webchat/widget.js' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(res.body).toContain('/api/v1/messaging-channels/webchat/messages');
    expect(() => new Function(res.body)).not.toThrow();
  });
});
