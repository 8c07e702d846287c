import { and, eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import {
  acmeProvider,
  type FakeOAuthProvider,
  providersDirEnv,
  startFakeOAuthProvider,
} from '../../../test/fakes/oauth-provider.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { accounts, creditTransactions, messages } from '../../db/schema/index.ts';
import { connectAcme } from '../connections/test-support.ts';

const MODELS = 'fake-model=1000000/2000000,other-model=1000000/1000000';

describe('agents, agent chat and conversations', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  let acme: FakeOAuthProvider;
  let base = '';

  beforeAll(async () => {
    llm = await startFakeLlm();
    acme = await startFakeOAuthProvider();
    h = await createHarness({
      ...providersDirEnv([{ fake: acme, definition: acmeProvider(acme.url) }]),
      LLM_BASE_URL: llm.url,
      LLM_MODELS: MODELS,
    });
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = h.app.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/api/v1`;
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
    await acme?.close();
  });
  beforeEach(() => {
    llm.reset();
    llm.requests.length = 0;
    acme.reset();
  });

  const as = (u: TestUser) => ({ token: u.sessionToken });
  const makeAgent = async (u: TestUser, body: Record<string, unknown> = {}) => {
    const res = await call(h.app, 'POST', '/api/v1/agents', { ...as(u), body: { name: 'Helper', ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string; isDefault: boolean };
  };
  const client = (token: string, agentId: string) =>
    new OpenAI({ baseURL: `${base}/agents/${agentId}`, apiKey: token, maxRetries: 0 });
  const storedMessages = async (u: TestUser, agentId: string, conversationId: string) =>
    (
      await call(h.app, 'GET', `/api/v1/agents/${agentId}/conversations/${conversationId}/messages?limit=100`, as(u))
    ).json().data as { role: string; content: string | null; toolCalls: unknown; toolName: string | null }[];

  describe('agents API', () => {
    it('creates with defaults; the first agent is the default; validates the model, temperature and tool groups', async () => {
      const u = await createUser(h.app);
      const res = await call(h.app, 'POST', '/api/v1/agents', { ...as(u), body: { name: 'Support' } });
      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({
        id: expect.stringMatching(/^agt_/),
        accountId: u.account.id,
        name: 'Support',
        llm: 'fake-model',
        personality: '',
        description: '',
        temperature: 0.7,
        firstPrompt: '',
        enabledBuiltInTools: ['provider-tools'],
        billingAccountType: 'owner',
        usageLimits: {},
        isDefault: true,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      const second = await makeAgent(u, {
        llm: 'other-model',
        temperature: 2,
        enabledBuiltInTools: ['knowledge-base'],
      });
      expect(second.isDefault).toBe(false);

      const badModel = await call(h.app, 'POST', '/api/v1/agents', { ...as(u), body: { name: 'x', llm: 'gpt-nope' } });
      expect(badModel.statusCode).toBe(422);
      expect(badModel.json().message).toBe('Unknown model "gpt-nope". Available models: fake-model, other-model');
      expect(
        (await call(h.app, 'POST', '/api/v1/agents', { ...as(u), body: { name: 'x', temperature: 2.5 } })).statusCode,
      ).toBe(422);
      // Every group of SPEC §2 is served now (another account, so this list's counts stay as they are).
      const all = await call(h.app, 'POST', '/api/v1/agents', {
        ...as(await createUser(h.app)),
        body: {
          name: 'x',
          enabledBuiltInTools: [
            'provider-tools',
            'skills',
            'agent-memory',
            'account-tasks',
            'execute-code',
            'knowledge-base',
          ],
        },
      });
      expect(all.statusCode, all.body).toBe(201);
      expect(
        (await call(h.app, 'POST', '/api/v1/agents', { ...as(u), body: { name: 'x', enabledBuiltInTools: ['bogus'] } }))
          .statusCode,
      ).toBe(422);

      const def = await call(h.app, 'GET', '/api/v1/agents/default', as(u));
      expect(def.json()).toMatchObject({ id: res.json().id, isDefault: true });
      const list = await call(h.app, 'GET', '/api/v1/agents?sortBy=name&sortOrder=asc&limit=1', as(u));
      expect(list.json().pagination).toEqual({ page: 1, limit: 1, total: 2, hasMore: true });
      expect(list.json().data[0].name).toBe('Helper');

      const updated = await call(h.app, 'PUT', `/api/v1/agents/${second.id}`, {
        ...as(u),
        body: { personality: 'Be terse.' },
      });
      expect(updated.json()).toMatchObject({ personality: 'Be terse.', llm: 'other-model', temperature: 2 });
      expect((await call(h.app, 'POST', `/api/v1/agents/${second.id}/set-default`, as(u))).json().isDefault).toBe(true);
      expect((await call(h.app, 'GET', '/api/v1/agents/default', as(u))).json().id).toBe(second.id);
      expect((await call(h.app, 'DELETE', `/api/v1/agents/${second.id}`, as(u))).statusCode).toBe(204);
      const none = await call(h.app, 'GET', '/api/v1/agents/default', as(u));
      expect(none.statusCode).toBe(404);
      expect(none.json().message).toBe('The account has no default agent');
    });

    it('agents-use lists, reads and chats; only agents-all changes', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const use = await u.pat(['agents-use']);
      expect((await call(h.app, 'GET', '/api/v1/agents', { token: use })).statusCode).toBe(200);
      expect((await call(h.app, 'GET', `/api/v1/agents/${agent.id}`, { token: use })).statusCode).toBe(200);
      for (const [method, url, body] of [
        ['POST', '/api/v1/agents', { name: 'x' }],
        ['PUT', `/api/v1/agents/${agent.id}`, { name: 'y' }],
        ['DELETE', `/api/v1/agents/${agent.id}`, undefined],
        ['POST', `/api/v1/agents/${agent.id}/set-default`, undefined],
      ] as const) {
        const res = await call(h.app, method, url, { token: use, ...(body ? { body } : {}) });
        expect(res.statusCode, url).toBe(403);
        expect(res.json().message).toBe('Missing required scope: agents-all');
      }
      llm.enqueue({ content: 'Hi.' });
      const answer = await client(use, agent.id).chat.completions.create({
        model: 'x',
        messages: [{ role: 'user', content: 'Hello' }],
      });
      expect(answer.choices[0]?.message.content).toBe('Hi.');
    });
  });

  describe('chat', () => {
    it("a streamed chat passes the model's text on as the upstream writes it", async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const openai = client(await u.pat(['agents-use']), agent.id);
      // Six upstream chunks 250 ms apart: the answer's words arrive over more than a second.
      llm.enqueue({ content: 'Streaming words one by one.', chunkDelayMs: 250 });
      const stream = await openai.chat.completions.create({
        model: 'ignored',
        stream: true,
        messages: [{ role: 'user', content: 'Say something slowly.' }],
      });
      let text = '';
      let firstWordAt = 0;
      for await (const chunk of stream) {
        const piece = chunk.choices[0]?.delta?.content ?? '';
        if (piece && !firstWordAt) firstWordAt = performance.now();
        text += piece;
      }
      const endedAt = performance.now();
      expect(text).toBe('Streaming words one by one.');
      // The first word came while the upstream was still writing, not after the whole run.
      expect(endedAt - firstWordAt).toBeGreaterThan(600);
      expect(llm.requests[0]?.stream).toBe(true);
    });

    it('the openai client chats plain and streamed, and continues a conversation by id', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u, {
        personality: 'You are Ada.',
        firstPrompt: 'Hello! How can I help?',
        temperature: 0.2,
      });
      const token = await u.pat(['agents-use']);
      const openai = client(token, agent.id);

      llm.enqueue({ content: 'Paris is the capital of France.', usage: { prompt: 40, completion: 7 } });
      const { data, response } = await openai.chat.completions
        .create({ model: 'ignored', messages: [{ role: 'user', content: 'Capital of France?' }] })
        .withResponse();
      expect(data).toMatchObject({
        object: 'chat.completion',
        model: 'fake-model',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'Paris is the capital of France.' },
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 40 },
      });
      const conversationId = response.headers.get('x-conversation-id') ?? '';
      expect(conversationId).toMatch(/^conv_/);
      // 40 prompt tokens at 1 credit, 7 completion tokens at 2 credits.
      expect(response.headers.get('x-credits-consumed')).toBe('54');
      const sent = llm.requests[0];
      expect(sent?.messages[0]).toMatchObject({ role: 'system' });
      expect(sent?.messages[0]?.content).toContain('You are Ada.');
      expect(sent?.messages.slice(1)).toEqual([
        { role: 'assistant', content: 'Hello! How can I help?' },
        { role: 'user', content: 'Capital of France?' },
      ]);
      expect(sent?.temperature).toBe(0.2);

      llm.enqueue({ content: 'About two million people live there.' });
      // `conversationId` is an extension of the OpenAI request: the client passes unknown fields through.
      const params = {
        model: 'ignored',
        stream: true as const,
        messages: [{ role: 'user' as const, content: 'How many people live there?' }],
        temperature: 1,
        conversationId,
      };
      const stream = await openai.chat.completions.create(params);
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      expect(text).toBe('About two million people live there.');
      expect(llm.requests[1]?.messages.slice(1)).toEqual([
        { role: 'assistant', content: 'Hello! How can I help?' },
        { role: 'user', content: 'Capital of France?' },
        { role: 'assistant', content: 'Paris is the capital of France.' },
        { role: 'user', content: 'How many people live there?' },
      ]);
      expect(llm.requests[1]?.temperature).toBe(1);
      expect((await storedMessages(u, agent.id, conversationId)).map((m) => [m.role, m.content])).toEqual([
        ['assistant', 'Hello! How can I help?'],
        ['user', 'Capital of France?'],
        ['assistant', 'Paris is the capital of France.'],
        ['user', 'How many people live there?'],
        ['assistant', 'About two million people live there.'],
      ]);

      // Another account's conversation, or another agent's, is not found.
      const other = await makeAgent(u, { name: 'Other' });
      const wrongAgent = await call(h.app, 'POST', `/api/v1/agents/${other.id}/chat/completions`, {
        token,
        body: { messages: [{ role: 'user', content: 'hi' }], conversationId },
      });
      expect(wrongAgent.statusCode).toBe(404);
      expect(llm.requests).toHaveLength(2);
    });

    it('uses a provider tool through the connection; two calls of one step run together; every step is stored', async () => {
      const u = await createUser(h.app);
      await connectAcme(h.app, u);
      const agent = await makeAgent(u);
      llm.enqueue(
        {
          toolCalls: [
            { name: 'acme_get_item', arguments: { id: 'item-1' } },
            { name: 'acme_get_item', arguments: { id: 'item-2' } },
          ],
        },
        { content: 'Items 1 and 2 are fine.' },
      );
      const res = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
        ...as(u),
        body: { messages: [{ role: 'user', content: 'Check items 1 and 2' }] },
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().choices[0].message.content).toBe('Items 1 and 2 are fine.');
      expect(acme.apiRequests.map((r) => r.path).sort()).toEqual(['/items/item-1', '/items/item-2']);
      const stored = await storedMessages(u, agent.id, res.headers['x-conversation-id'] as string);
      expect(stored.map((m) => [m.role, m.toolName])).toEqual([
        ['user', null],
        ['assistant', null],
        ['tool', 'acme_get_item'],
        ['tool', 'acme_get_item'],
        ['assistant', null],
      ]);
      expect(stored[1]?.toolCalls).toHaveLength(2);
      await h.app.deps.background.drain(); // charges are written just after the answer
      const ledger = await h.database.db
        .select()
        .from(creditTransactions)
        .where(and(eq(creditTransactions.accountId, u.account.id), eq(creditTransactions.type, 'agent')));
      expect(ledger).toHaveLength(2);
    });
  });

  describe('usage limits', () => {
    it('the N+1th message of the day answers limitReachedMessage with no model call and no charge', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u, {
        usageLimits: { dailyMessagesPerUser: 2, limitReachedMessage: 'Come back tomorrow.' },
      });
      const send = () =>
        call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
          ...as(u),
          body: { messages: [{ role: 'user', content: 'hi' }] },
        });
      llm.enqueue({ content: 'one' }, { content: 'two' });
      expect((await send()).json().choices[0].message.content).toBe('one');
      expect((await send()).json().choices[0].message.content).toBe('two');
      await h.app.deps.background.drain(); // charges are written just after the answer
      const before = (await h.database.db.select().from(accounts).where(eq(accounts.id, u.account.id)))[0]
        ?.creditBalance;
      const third = await send();
      expect(third.statusCode).toBe(200);
      expect(third.json().choices[0].message.content).toBe('Come back tomorrow.');
      expect(third.headers['x-credits-consumed']).toBe('0');
      expect(third.headers['x-credits-remaining']).toBe(String(before));
      expect(llm.requests).toHaveLength(2);
    });

    it('a run past the monthly cap stops between steps, and the next chat makes no model call', async () => {
      const u = await createUser(h.app);
      await connectAcme(h.app, u);
      const agent = await makeAgent(u, { usageLimits: { monthlyCreditsCap: 50 } });
      llm.enqueue({ toolCalls: [{ name: 'acme_list_items', arguments: {} }], usage: { prompt: 60, completion: 1 } });
      const first = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
        ...as(u),
        body: { messages: [{ role: 'user', content: 'list' }] },
      });
      expect(first.json().choices[0].message.content).toBe(
        'This agent has reached its usage limit for now. Please try again later.',
      );
      expect(first.headers['x-credits-consumed']).toBe('62');
      expect(llm.requests).toHaveLength(1);
      const second = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
        ...as(u),
        body: { messages: [{ role: 'user', content: 'again' }] },
      });
      expect(second.json().choices[0].message.content).toBe(
        'This agent has reached its usage limit for now. Please try again later.',
      );
      expect(second.headers['x-credits-consumed']).toBe('0');
      expect(llm.requests).toHaveLength(1);
    });

    it('402 at a zero balance; 429 past the chat rate limit', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      await h.database.db.update(accounts).set({ creditBalance: 0 }).where(eq(accounts.id, u.account.id));
      const broke = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
        ...as(u),
        body: { messages: [{ role: 'user', content: 'hi' }] },
      });
      expect(broke.statusCode).toBe(402);
      expect(broke.json().error.type).toBe('CreditsExhaustedError');

      const limited = await h.extraApp({ LLM_BASE_URL: llm.url, LLM_MODELS: MODELS, RATE_LIMIT_LLM: '2' });
      const v = await createUser(limited);
      const a2 = (await call(limited, 'POST', '/api/v1/agents', { token: v.sessionToken, body: { name: 'x' } })).json()
        .id;
      llm.enqueue({ content: 'a' }, { content: 'b' });
      const codes: number[] = [];
      for (let i = 0; i < 3; i++) {
        codes.push(
          (
            await call(limited, 'POST', `/api/v1/agents/${a2}/chat/completions`, {
              token: v.sessionToken,
              body: { messages: [{ role: 'user', content: 'hi' }] },
            })
          ).statusCode,
        );
      }
      expect(codes).toEqual([200, 200, 429]);
    });

    it('a client that disconnects stops the run and pays for the prompt', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      llm.enqueue({ content: 'slow answer', delayMs: 1500, usage: { prompt: 10, completion: 2 } });
      const asked = llm.requests.length;
      const ac = new AbortController();
      const pending = fetch(`${base}/agents/${agent.id}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${u.sessionToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'take your time' }] }),
        signal: ac.signal,
      }).catch(() => undefined);
      // The client leaves while the model works on the request, however long it took to get there.
      await vi.waitFor(() => expect(llm.requests.length).toBe(asked + 1), { timeout: 10_000, interval: 10 });
      ac.abort();
      await pending;
      await new Promise((r) => setTimeout(r, 1800));
      await h.app.deps.background.drain();
      const ledger = await h.database.db
        .select()
        .from(creditTransactions)
        .where(and(eq(creditTransactions.accountId, u.account.id), eq(creditTransactions.type, 'agent')));
      expect(ledger).toHaveLength(1);
      expect(ledger[0]?.amount).toBeLessThan(0);
      expect(ledger[0]?.completionTokens).toBe(0);
    });
  });

  describe('conversations', () => {
    it('creates, lists by activity, reads messages in order and deletes with its messages', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u, { firstPrompt: 'Welcome.' });
      const made = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/conversations`, {
        ...as(u),
        body: { title: 'Planning', metadata: { topic: 'q3' } },
      });
      expect(made.statusCode).toBe(201);
      expect(made.json()).toMatchObject({ title: 'Planning', metadata: { topic: 'q3' }, agentId: agent.id });
      const older = made.json().id as string;
      llm.enqueue({ content: 'ok' });
      const chat = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
        ...as(u),
        body: { messages: [{ role: 'user', content: 'new one' }] },
      });
      const newer = chat.headers['x-conversation-id'] as string;
      const list = await call(h.app, 'GET', `/api/v1/agents/${agent.id}/conversations`, as(u));
      expect(list.json().data.map((c: { id: string }) => c.id)).toEqual([newer, older]);
      expect((await storedMessages(u, agent.id, older)).map((m) => m.content)).toEqual(['Welcome.']);
      // SPEC §2: a message carries its timestamps; messages are never edited, so both are when it was written.
      const said = (
        await call(h.app, 'GET', `/api/v1/agents/${agent.id}/conversations/${newer}/messages`, as(u))
      ).json().data as Array<{ createdAt: string; updatedAt: string }>;
      expect(said.length).toBeGreaterThan(0);
      for (const m of said) {
        expect(new Date(m.createdAt).toISOString()).toBe(m.createdAt);
        expect(m.updatedAt).toBe(m.createdAt);
      }

      expect((await call(h.app, 'DELETE', `/api/v1/agents/${agent.id}/conversations/${newer}`, as(u))).statusCode).toBe(
        204,
      );
      expect(await h.database.db.select().from(messages).where(eq(messages.conversationId, newer))).toEqual([]);
      expect(
        (await call(h.app, 'GET', `/api/v1/agents/${agent.id}/conversations/${newer}/messages`, as(u))).statusCode,
      ).toBe(404);
    });
  });

  const agentUrl = async (owner: TestUser) =>
    (await call(h.app, 'POST', '/api/v1/agents', { token: owner.sessionToken, body: { name: 'guarded' } })).json()
      .id as string;
  const conversationUrl = async (owner: TestUser, suffix = '') => {
    const id = await agentUrl(owner);
    const conv = (
      await call(h.app, 'POST', `/api/v1/agents/${id}/conversations`, { token: owner.sessionToken, body: {} })
    ).json().id as string;
    return `/api/v1/agents/${id}/conversations/${conv}${suffix}`;
  };
  guardTests(
    () => h,
    [
      { method: 'POST', url: '/api/v1/agents', scopes: ['agents-all'], body: { name: 'g' } },
      { method: 'GET', url: '/api/v1/agents', scopes: ['agents-all', 'agents-use'] },
      {
        method: 'GET',
        url: '/api/v1/agents/agt_x',
        scopes: ['agents-all', 'agents-use'],
        ownedUrl: async (o) => `/api/v1/agents/${await agentUrl(o)}`,
      },
      {
        method: 'PUT',
        url: '/api/v1/agents/agt_x',
        scopes: ['agents-all'],
        body: { description: 'd' },
        ownedUrl: async (o) => `/api/v1/agents/${await agentUrl(o)}`,
      },
      {
        method: 'POST',
        url: '/api/v1/agents/agt_x/set-default',
        scopes: ['agents-all'],
        ownedUrl: async (o) => `/api/v1/agents/${await agentUrl(o)}/set-default`,
      },
      {
        method: 'DELETE',
        url: '/api/v1/agents/agt_x',
        scopes: ['agents-all'],
        ownedUrl: async (o) => `/api/v1/agents/${await agentUrl(o)}`,
      },
      {
        method: 'GET',
        url: '/api/v1/agents/agt_x/conversations',
        scopes: ['agents-all', 'agents-use'],
        ownedUrl: async (o) => `/api/v1/agents/${await agentUrl(o)}/conversations`,
      },
      {
        method: 'POST',
        url: '/api/v1/agents/agt_x/conversations',
        scopes: ['agents-all', 'agents-use'],
        body: {},
        ownedUrl: async (o) => `/api/v1/agents/${await agentUrl(o)}/conversations`,
      },
      {
        method: 'GET',
        url: '/api/v1/agents/agt_x/conversations/conv_x/messages',
        scopes: ['agents-all', 'agents-use'],
        ownedUrl: (o) => conversationUrl(o, '/messages'),
      },
      {
        method: 'DELETE',
        url: '/api/v1/agents/agt_x/conversations/conv_x',
        scopes: ['agents-all', 'agents-use'],
        ownedUrl: (o) => conversationUrl(o),
      },
    ],
  );
});
