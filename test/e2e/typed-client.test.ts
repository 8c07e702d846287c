import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../packages/client/src/index.ts';
import { type FakeLlm, startFakeLlm } from '../fakes/llm-upstream.ts';
import { FAKE_MODELS } from '../harness.ts';
import { startTestServer, type TestServer } from '../server-process.ts';

/**
 * The typed client (packages/client) against the service as its own process, its model a scripted fake upstream
 * on loopback: sign-up, a personal access token, an agent and a chat with it, a knowledge base whose source the
 * job worker compiles, and a search of it. Every call goes through the client; nothing else talks to the server.
 */
describe('the typed TypeScript client (@switchboard/client)', () => {
  let llm: FakeLlm | undefined;
  let server: TestServer | undefined;
  beforeAll(async () => {
    llm = await startFakeLlm();
    server = await startTestServer({
      env: { LLM_BASE_URL: llm.url, LLM_MODELS: FAKE_MODELS, JOBS_POLL_INTERVAL_MS: '50' },
    });
  });
  afterAll(async () => {
    await server?.close();
    await llm?.close();
  });

  it('signs up, makes a token, chats with an agent and searches a knowledge base it filled', async () => {
    if (!server || !llm) throw new Error('not started');
    const baseUrl = server.url;
    const email = `typed-${Date.now()}@example.test`;

    const signup = await createClient({ baseUrl }).POST('/api/v1/auth/signup', {
      body: { email, password: 'typed-client-password', name: 'Ada Lovelace' },
    });
    expect(signup.response.status).toBe(201);
    expect(signup.error).toBeUndefined();
    expect(signup.data).toMatchObject({
      token_type: 'Bearer',
      session_token: expect.stringMatching(/^sess_/),
      account: { email, name: 'Ada Lovelace' },
    });
    const session = createClient({ baseUrl, token: signup.data?.session_token ?? '' });

    const pat = await session.POST('/api/v1/auth/pat', {
      body: { name: 'typed client', scopes: ['agents-all', 'account'] },
    });
    expect(pat.response.status).toBe(201);
    expect(pat.data).toMatchObject({
      name: 'typed client',
      scopes: ['agents-all', 'account'],
      personal_access_token: expect.stringMatching(/^pat_/),
    });
    const client = createClient({ baseUrl, token: pat.data?.personal_access_token ?? '' });

    // A token refused: the error is the service's error body, typed.
    const anonymous = await createClient({ baseUrl, token: 'pat_not-a-token' }).GET('/api/v1/agents');
    expect(anonymous.response.status).toBe(401);
    expect(anonymous.data).toBeUndefined();
    expect(anonymous.error).toEqual({ error: 'UnauthorizedError', message: expect.any(String), statusCode: 401 });

    const agent = await client.POST('/api/v1/agents', {
      body: { name: 'Support bot', personality: 'Answer in one sentence.' },
    });
    expect(agent.response.status).toBe(201);
    expect(agent.data).toMatchObject({ id: expect.stringMatching(/^agt_/), name: 'Support bot', llm: 'fake-model' });
    const agentId = agent.data?.id ?? '';

    llm.enqueue({ content: 'Order 1042 left the warehouse on Monday.' });
    const chat = await client.POST('/api/v1/agents/{agentId}/chat/completions', {
      params: { path: { agentId } },
      body: { messages: [{ role: 'user', content: 'Where is my order 1042?' }] },
    });
    expect(chat.response.status).toBe(200);
    expect(chat.data).toEqual({
      id: expect.stringMatching(/^chatcmpl_/),
      object: 'chat.completion',
      created: expect.any(Number),
      model: 'fake-model',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Order 1042 left the warehouse on Monday.' },
          finish_reason: 'stop',
        },
      ],
      usage: {
        prompt_tokens: expect.any(Number),
        completion_tokens: expect.any(Number),
        total_tokens: expect.any(Number),
      },
    });
    const conversationId = chat.response.headers.get('x-conversation-id') ?? '';
    expect(conversationId).toMatch(/^conv_/);
    // The model was asked with the agent's personality and the user's message.
    const asked = llm.requests.at(-1)?.messages ?? [];
    expect(asked.at(-1)).toMatchObject({ role: 'user', content: 'Where is my order 1042?' });
    expect(asked[0]?.content).toContain('Answer in one sentence.');

    // The chat route answers errors in OpenAI's shape, and the client types them so.
    const unknownAgent = await client.POST('/api/v1/agents/{agentId}/chat/completions', {
      params: { path: { agentId: 'agt_5kY0bq9xTnq1y8Wv3mDgZA' } },
      body: { messages: [{ role: 'user', content: 'Hello?' }] },
    });
    expect(unknownAgent.response.status).toBe(404);
    expect(unknownAgent.error?.error).toEqual({
      message: 'Agent agt_5kY0bq9xTnq1y8Wv3mDgZA not found',
      type: 'NotFoundError',
      param: null,
      code: null,
    });

    const messages = await client.GET('/api/v1/agents/{agentId}/conversations/{conversationId}/messages', {
      params: { path: { agentId, conversationId } },
    });
    expect(messages.response.status).toBe(200);
    expect(messages.data?.data.map((m) => [m.role, m.content])).toEqual([
      ['user', 'Where is my order 1042?'],
      ['assistant', 'Order 1042 left the warehouse on Monday.'],
    ]);

    const kb = await client.POST('/api/v1/knowledge/bases', { body: { name: 'Company wiki' } });
    expect(kb.response.status).toBe(201);
    expect(kb.data).toMatchObject({ id: expect.stringMatching(/^kb_/), name: 'Company wiki' });
    const kbId = kb.data?.id ?? '';

    // The job worker compiles the source with the model: one extraction answer, scripted.
    llm.enqueue({
      content: JSON.stringify({
        pages: [
          {
            name: 'Acme Corp',
            pageType: 'entity',
            summary: 'A maker of anvils.',
            facts: ['Acme Corp makes anvils.'],
            tags: ['company'],
          },
        ],
      }),
    });
    const source = await client.POST('/api/v1/knowledge/bases/{kbId}/sources', {
      params: { path: { kbId } },
      body: { type: 'text', name: 'press release', rawContent: 'Acme Corp makes anvils.' },
    });
    expect(source.response.status).toBe(201);
    expect(source.data).toMatchObject({ kbId, type: 'text', name: 'press release', status: 'pending' });
    const sourceId = source.data?.id ?? '';
    await expect
      .poll(
        async () => {
          const res = await client.GET('/api/v1/knowledge/bases/{kbId}/sources/{sourceId}', {
            params: { path: { kbId, sourceId } },
          });
          return res.data?.status;
        },
        { timeout: 60_000, interval: 100 },
      )
      .toBe('compiled');

    const search = await client.GET('/api/v1/knowledge/bases/{kbId}/pages/search', {
      params: { path: { kbId }, query: { q: 'anvils' } },
    });
    expect(search.response.status).toBe(200);
    expect(search.data?.relaxed).toBe(false);
    expect(search.data?.data).toEqual([
      expect.objectContaining({ slug: 'acme-corp', title: 'Acme Corp', pageType: 'entity', tags: ['company'] }),
    ]);
    expect(search.data?.data[0]?.content).toContain('**anvils**');

    // A base the account does not have is not found: the same typed error body.
    const other = await client.GET('/api/v1/knowledge/bases/{kbId}/pages/search', {
      params: { path: { kbId: 'kb_5kY0bq9xTnq1y8Wv3mDgZA' }, query: { q: 'anvils' } },
    });
    expect(other.response.status).toBe(404);
    expect(other.error).toMatchObject({ error: 'NotFoundError', statusCode: 404 });
  }, 180_000);
});
