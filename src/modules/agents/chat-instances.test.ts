import type { AddressInfo } from 'node:net';
import { asc, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { FakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { call, createUser, fakeLlmSuite, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { testDatabaseTarget } from '../../../test/test-database.ts';
import { messages } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';

/**
 * Several instances behind a load balancer (issue 39): what one instance's chat answer names — the
 * conversation, its messages — is there for every other instance as soon as the answer is sent, so a client
 * whose next request goes elsewhere reads it and continues it. Two apps over one database are two instances:
 * each has its own queued writes (group commit), so nothing here is read through the instance that wrote it.
 * PostgreSQL only: PGlite serves one process (no deployment has a second instance on it), where reads wait for
 * the instance's own queued writes (chat-writes.test.ts, "reads on the instance that chatted").
 */
describe.skipIf(testDatabaseTarget().kind !== 'pg')('agent chat across instances: read your writes', () => {
  let h: TestHarness;
  let llm: FakeLlm;

  fakeLlmSuite((s) => ({ h, llm } = s));

  const setup = async () => {
    const a = await h.extraApp();
    const b = await h.extraApp();
    const u = await createUser(a);
    const res = await call(a, 'POST', '/api/v1/agents', {
      token: u.sessionToken,
      body: { name: 'RYW', firstPrompt: 'Hi, how can I help?' },
    });
    expect(res.statusCode, res.body).toBe(201);
    return { a, b, u, agent: res.json().id as string };
  };
  const chat = (app: App, u: TestUser, agent: string, content: string, conversationId?: string) =>
    call(app, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
      token: u.sessionToken,
      body: { messages: [{ role: 'user', content }], ...(conversationId ? { conversationId } : {}) },
    });
  const messagesOn = async (app: App, u: TestUser, agent: string, conversationId: string) => {
    const res = await call(app, 'GET', `/api/v1/agents/${agent}/conversations/${conversationId}/messages`, {
      token: u.sessionToken,
    });
    return { status: res.statusCode, body: res.body, contents: res.statusCode === 200 ? texts(res.json()) : [] };
  };
  const texts = (page: { data: Array<{ role: string; content: string | null }> }) =>
    page.data.map((m) => [m.role, m.content]);

  it('a chat answered by one instance is read at once on another, and a second turn sent there at once continues it', async () => {
    const { a, b, u, agent } = await setup();
    llm.enqueue({ content: 'One.' }, { content: 'Two.' });
    const first = await chat(a, u, agent, 'First?');
    expect(first.statusCode, first.body).toBe(200);
    const conversationId = first.headers['x-conversation-id'] as string;

    // Committed before the answer was sent: the rows are in the database the moment it arrives (read straight
    // from it, before anything else runs, the way another instance's next statement would find them).
    expect(
      (
        await h.database.db
          .select({ role: messages.role, content: messages.content })
          .from(messages)
          .where(eq(messages.conversationId, conversationId))
          .orderBy(asc(messages.seq))
      ).map((m) => [m.role, m.content]),
    ).toEqual([
      ['assistant', 'Hi, how can I help?'],
      ['user', 'First?'],
      ['assistant', 'One.'],
    ]);
    // On the other instance: the conversation and every message the answer stored.
    const read = await messagesOn(b, u, agent, conversationId);
    expect(read.status, read.body).toBe(200);
    expect(read.contents).toEqual([
      ['assistant', 'Hi, how can I help?'],
      ['user', 'First?'],
      ['assistant', 'One.'],
    ]);
    const list = await call(b, 'GET', `/api/v1/agents/${agent}/conversations`, { token: u.sessionToken });
    expect(list.json().data).toMatchObject([{ id: conversationId, title: 'First?' }]);

    // The next turn goes to the other instance at once: it continues the conversation with its whole history.
    const second = await chat(b, u, agent, 'Second?', conversationId);
    expect(second.statusCode, second.body).toBe(200);
    expect(second.headers['x-conversation-id']).toBe(conversationId);
    expect(llm.requests[1]?.messages.map((m) => [m.role, m.content]).slice(1)).toEqual([
      ['assistant', 'Hi, how can I help?'],
      ['user', 'First?'],
      ['assistant', 'One.'],
      ['user', 'Second?'],
    ]);
    // And the first instance reads the second turn at once.
    expect((await messagesOn(a, u, agent, conversationId)).contents).toEqual([
      ['assistant', 'Hi, how can I help?'],
      ['user', 'First?'],
      ['assistant', 'One.'],
      ['user', 'Second?'],
      ['assistant', 'Two.'],
    ]);
  });

  it('a second turn sent to another instance right after the first answer, several times over, never gets 404', async () => {
    const { a, b, u, agent } = await setup();
    for (let i = 0; i < 5; i++) {
      const first = await chat(a, u, agent, `Question ${i}?`);
      expect(first.statusCode, first.body).toBe(200);
      const second = await chat(b, u, agent, `Follow-up ${i}?`, first.headers['x-conversation-id'] as string);
      expect(second.statusCode, second.body).toBe(200);
    }
  });

  it('a streamed chat: the conversation its headers name is there on another instance before the answer ends', async () => {
    const { a, b, u, agent } = await setup();
    await a.listen({ port: 0, host: '127.0.0.1' });
    const port = (a.server.address() as AddressInfo).port;
    // The model takes its time: the stream's headers come long before the answer.
    llm.enqueue({ content: 'Slowly.', delayMs: 1000 });
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/agents/${agent}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${u.sessionToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Stream?' }], stream: true }),
    });
    expect(res.status).toBe(200);
    const conversationId = res.headers.get('x-conversation-id') ?? '';
    const during = await messagesOn(b, u, agent, conversationId);
    expect(during.status, during.body).toBe(200);
    expect(during.contents).toEqual([
      ['assistant', 'Hi, how can I help?'],
      ['user', 'Stream?'],
    ]);
    expect(await res.text()).toContain('[DONE]');
    expect((await messagesOn(b, u, agent, conversationId)).contents).toEqual([
      ['assistant', 'Hi, how can I help?'],
      ['user', 'Stream?'],
      ['assistant', 'Slowly.'],
    ]);
  });
});
