import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { call, createHarness, createUser, FAKE_MODELS, type TestHarness } from '../../../test/harness.ts';
import { readConversationEvents } from '../../../test/sse.ts';
import { conversationEvents, conversationRuns } from '../../db/schema/index.ts';
import { agentJobs } from './jobs.ts';
import { failOrphanedRuns, INTERRUPTED_RUN_ERROR } from './runs.service.ts';
import { failedTurnMessages } from './test-support.ts';

const LEASE_MS = 1000;

/**
 * A chat turn holds a lease while it runs (see runs.service.ts): a live run is never marked failed however long
 * the model takes, and a turn that fails on its own is stored the way the sweep stores a dead instance's turn.
 */
describe('agent chat turn leases', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  // A database of its own: a sweep acts on every account's turns (and one here looks a minute ahead).
  beforeAll(async () => {
    llm = await startFakeLlm();
    h = await createHarness(
      { LLM_BASE_URL: llm.url, LLM_MODELS: FAKE_MODELS, AGENT_RUN_LEASE_MS: String(LEASE_MS) },
      { privateDatabase: true },
    );
    await h.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
  });

  const newConversation = async (token: string, agent: string) =>
    (await call(h.app, 'POST', `/api/v1/agents/${agent}/conversations`, { token, body: {} })).json().id as string;
  const newAgent = async (token: string) =>
    (await call(h.app, 'POST', '/api/v1/agents', { token, body: { name: 'Lease' } })).json().id as string;
  const messagesOf = async (token: string, agent: string, conversation: string) =>
    (await call(h.app, 'GET', `/api/v1/agents/${agent}/conversations/${conversation}/messages`, { token })).json().data;
  const eventsOf = async (conversation: string) =>
    (
      await h.database.db
        .select()
        .from(conversationEvents)
        .where(eq(conversationEvents.conversationId, conversation))
        .orderBy(conversationEvents.id)
    ).map((e) => ({ id: e.id, type: e.type, data: e.data }));

  it('a slow live run outlasting its lease four times is renewed, never marked failed, and answers', async () => {
    const u = await createUser(h.app);
    const agent = await newAgent(u.sessionToken);
    const conversation = await newConversation(u.sessionToken, agent);
    // The model takes four leases to answer.
    llm.enqueue({ content: 'Slow but sure.', delayMs: 4 * LEASE_MS });
    let settled = false;
    const answer = call(h.app, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
      token: u.sessionToken,
      body: { messages: [{ role: 'user', content: 'Take your time.' }], conversationId: conversation },
    }).finally(() => {
      settled = true;
    });
    // The recurring sweep runs all along (as every instance's would), and the turn's lease row is there, live,
    // each time.
    const sweep = agentJobs['agents.fail-orphaned-runs'];
    const job = { jobId: 'job_test', attempt: 1, signal: new AbortController().signal, log: h.app.log };
    let sweeps = 0;
    let held = 0;
    while (!settled) {
      expect(await sweep.run(h.app.deps, {}, job)).toEqual({ failed: 0 });
      sweeps++;
      const [row] = await h.database.db
        .select()
        .from(conversationRuns)
        .where(eq(conversationRuns.conversationId, conversation));
      if (row && !settled) held++;
      await new Promise((r) => setTimeout(r, LEASE_MS / 3));
    }
    const res = await answer;
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().choices[0].message.content).toBe('Slow but sure.');
    expect(sweeps).toBeGreaterThan(5);
    expect(held).toBeGreaterThan(3);
    expect(
      (await messagesOf(u.sessionToken, agent, conversation)).map((m: Record<string, unknown>) => [
        m.role,
        m.content,
        m.error,
      ]),
    ).toEqual([
      ['user', 'Take your time.', null],
      ['assistant', 'Slow but sure.', null],
    ]);
    expect((await eventsOf(conversation)).map((e) => e.type)).toEqual([
      'message.created',
      'message.delta',
      'message.created',
      'run.completed',
    ]);
    // The turn ended: its lease row went with its answer.
    expect(
      await h.database.db.select().from(conversationRuns).where(eq(conversationRuns.conversationId, conversation)),
    ).toEqual([]);
  });

  it('a run that finds its turn failed (its lease was taken while it could not renew) stops and never answers', async () => {
    const u = await createUser(h.app);
    const agent = await newAgent(u.sessionToken);
    const conversation = await newConversation(u.sessionToken, agent);
    llm.enqueue({ content: 'Too late.', delayMs: 20 * LEASE_MS });
    const answer = call(h.app, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
      token: u.sessionToken,
      body: { messages: [{ role: 'user', content: 'Still there?' }], conversationId: conversation },
    });
    const held = () =>
      h.database.db.select().from(conversationRuns).where(eq(conversationRuns.conversationId, conversation));
    await expect.poll(async () => (await held()).length, { timeout: 10_000, interval: 20 }).toBe(1);
    // The lease goes with the turn's rows, ahead of the user message's event (its group commit's window).
    await expect
      .poll(async () => (await eventsOf(conversation)).map((e) => e.type), { timeout: 10_000, interval: 20 })
      .toEqual(['message.created']);
    // A sweep that sees the lease run out (as one would after this instance failed to renew it for a whole
    // lease): the turn is failed while its run still waits on the model.
    // A subscriber connected meanwhile hears the failure as it is stored.
    const addr = h.app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    const heard = await readConversationEvents(
      `http://127.0.0.1:${port}/api/v1/agents/${agent}/conversations/${conversation}/events?lastEventId=${(await eventsOf(conversation)).at(-1)?.id ?? 0}`,
      u.sessionToken,
      (all) => all.some((e) => e.event === 'run.failed'),
      async () => expect(await failOrphanedRuns(h.app.deps, new Date(Date.now() + 60_000))).toBe(1),
    );
    const res = await answer;
    expect(res.statusCode, res.body).toBe(504);
    expect(res.json().message).toBe(INTERRUPTED_RUN_ERROR);
    expect(
      (await messagesOf(u.sessionToken, agent, conversation)).map((m: Record<string, unknown>) => [
        m.role,
        m.content,
        m.error,
      ]),
    ).toEqual([
      ['user', 'Still there?', null],
      ['assistant', null, INTERRUPTED_RUN_ERROR],
    ]);
    expect((await eventsOf(conversation)).map((e) => e.type)).toEqual([
      'message.created',
      'message.created',
      'run.failed',
    ]);
    const marker = (await messagesOf(u.sessionToken, agent, conversation))[1];
    expect(heard.map((e) => [e.event, e.data])).toEqual([
      ['message.created', { message: marker, createdAt: expect.any(String) }],
      ['run.failed', { error: INTERRUPTED_RUN_ERROR, messageId: marker.id, createdAt: expect.any(String) }],
    ]);
  });

  it('a turn the upstream fails is stored as a failed turn: a marker message and run.failed naming it', async () => {
    const u = await createUser(h.app);
    const agent = await newAgent(u.sessionToken);
    llm.enqueue({ status: 400, errorMessage: 'the upstream refused' });
    const res = await call(h.app, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
      token: u.sessionToken,
      body: { messages: [{ role: 'user', content: 'Hello?' }] },
    });
    expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
    const error = res.json().message as string;
    const conversation = (
      await call(h.app, 'GET', `/api/v1/agents/${agent}/conversations`, { token: u.sessionToken })
    ).json().data[0].id as string;
    const messages = await messagesOf(u.sessionToken, agent, conversation);
    expect(messages).toEqual(failedTurnMessages('Hello?', error));
    expect((await eventsOf(conversation)).map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'message.created', data: { message: messages[0] } },
      { type: 'message.created', data: { message: messages[1] } },
      { type: 'run.failed', data: { error, messageId: messages[1].id } },
    ]);
    expect(
      await h.database.db.select().from(conversationRuns).where(eq(conversationRuns.conversationId, conversation)),
    ).toEqual([]);

    // The next turn's model never reads the marker as something the agent said.
    llm.enqueue({ content: 'Hello!' });
    const next = await call(h.app, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
      token: u.sessionToken,
      body: { messages: [{ role: 'user', content: 'Hello again?' }], conversationId: conversation },
    });
    expect(next.statusCode, next.body).toBe(200);
    const sent = llm.requests.at(-1)?.messages ?? [];
    expect(sent.slice(1).map((m) => [m.role, m.content])).toEqual([
      ['user', 'Hello?'],
      ['user', 'Hello again?'],
    ]);
  });
});
