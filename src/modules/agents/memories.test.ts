import { readFileSync } from 'node:fs';
import { and, eq } from 'drizzle-orm';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { FakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, createUser, fakeLlmSuite, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { agentMemories, jobs } from '../../db/schema/index.ts';
import { newId } from '../../lib/ids.ts';
import { agentJobs } from './jobs.ts';
import * as memoryRepo from './memories.repo.ts';

const silent = pino({ level: 'silent' });

describe('agent memory', () => {
  let h: TestHarness;
  let llm: FakeLlm;

  fakeLlmSuite((s) => ({ h, llm } = s));

  const as = (u: TestUser) => ({ token: u.sessionToken });
  const makeAgent = async (u: TestUser) =>
    (
      await call(h.app, 'POST', '/api/v1/agents', {
        ...as(u),
        body: { name: 'Memo', enabledBuiltInTools: ['agent-memory'] },
      })
    ).json().id as string;
  const chat = async (u: TestUser, agent: string, content: string, conversationId?: string) => {
    const res = await call(h.app, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
      ...as(u),
      body: { messages: [{ role: 'user', content }], ...(conversationId ? { conversationId } : {}) },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res;
  };
  /** The job as the queue runs it: once the exchange is stored (the reply queues it then). */
  const extract = async (conversationId: string) => {
    await h.app.deps.background.drain();
    return agentJobs['agents.extract-memories'].run(
      h.app.deps,
      { conversationId },
      { jobId: 'job_t', attempt: 1, signal: new AbortController().signal, log: silent },
    );
  };

  it('a memory extracted in one conversation is recalled in a later one', async () => {
    const u = await createUser(h.app);
    const agent = await makeAgent(u);
    llm.enqueue({ content: 'Noted!' });
    const first = await chat(u, agent, "I'm vegetarian and I live in Lyon.");
    const conversationId = first.headers['x-conversation-id'] as string;
    // The extraction is a job, queued once the exchange is stored (just after the answer).
    await h.app.deps.background.drain();
    const queued = await h.database.db
      .select()
      .from(jobs)
      .where(and(eq(jobs.type, 'agents.extract-memories'), eq(jobs.accountId, u.account.id)));
    expect(queued.map((j) => j.payload)).toEqual([{ conversationId }]);

    llm.enqueue({
      content: JSON.stringify({
        operations: [
          { op: 'add', content: 'The user is vegetarian.' },
          { op: 'add', content: 'The user lives in Lyon.' },
          { op: 'update', id: 'mem_not_shown', content: 'hijacked' },
          { op: 'delete', id: 'mem_other' },
        ],
      }),
    });
    expect(await extract(conversationId)).toEqual({ added: 2, updated: 0, deleted: 0, ignored: 2 });
    expect(llm.requests.at(-1)?.messages[1]?.content).toContain(
      "User: I'm vegetarian and I live in Lyon.\nAssistant: Noted!",
    );

    // A later conversation: the memory is in the system prompt the model reads.
    llm.enqueue({ content: 'Try the vegetarian place on Rue Mercière.' });
    await chat(u, agent, 'Any vegetarian restaurants you would suggest?');
    const system = String(llm.requests.at(-1)?.messages[0]?.content);
    expect(system).toContain('What you remember about this user');
    expect(system).toContain('- The user is vegetarian.');

    // An update of a memory the model was shown replaces it; nothing else moves.
    const [veg] = (await call(h.app, 'GET', `/api/v1/agents/${agent}/memories/search?query=vegetarian`, as(u))).json()
      .data as { id: string }[];
    llm.enqueue({ content: 'Got it.' });
    // The exchange shares words with the memory, so the extraction is shown it and may update it by id.
    const third = await chat(u, agent, "Actually I'm no longer vegetarian: I'm vegan now.", conversationId);
    expect(third.statusCode).toBe(200);
    llm.enqueue({
      content: JSON.stringify({ operations: [{ op: 'update', id: veg?.id, content: 'The user is vegan.' }] }),
    });
    expect(await extract(conversationId)).toMatchObject({ updated: 1 });
    const list = await call(h.app, 'GET', `/api/v1/agents/${agent}/memories`, as(u));
    expect(
      list
        .json()
        .data.map((m: { content: string }) => m.content)
        .sort(),
    ).toEqual(['The user is vegan.', 'The user lives in Lyon.']);

    // A user can make the agent forget.
    expect((await call(h.app, 'DELETE', `/api/v1/agents/${agent}/memories/${veg?.id}`, as(u))).statusCode).toBe(204);
    expect((await call(h.app, 'DELETE', `/api/v1/agents/${agent}/memories/${veg?.id}`, as(u))).statusCode).toBe(404);
    expect((await call(h.app, 'GET', `/api/v1/agents/${agent}/memories`, as(u))).json().pagination.total).toBe(1);
  });

  it('malformed extraction output changes nothing; the agent saves and forgets on request', async () => {
    const u = await createUser(h.app);
    const agent = await makeAgent(u);
    llm.enqueue({ content: 'ok' });
    const conversationId = (await chat(u, agent, 'My dog is called Biscuit.')).headers['x-conversation-id'] as string;
    llm.enqueue({ content: 'I will remember that your dog is Biscuit!' });
    expect(await extract(conversationId)).toEqual({ added: 0, updated: 0, deleted: 0, ignored: 0 });
    expect(await h.database.db.select().from(agentMemories).where(eq(agentMemories.agentId, agent))).toEqual([]);

    llm.enqueue(
      { toolCalls: [{ name: 'memory-save', arguments: { content: 'The dog is called Biscuit.' } }] },
      { content: 'Saved.' },
    );
    await chat(u, agent, 'Remember that my dog is Biscuit.');
    const [saved] = await h.database.db.select().from(agentMemories).where(eq(agentMemories.agentId, agent));
    expect(saved?.content).toBe('The dog is called Biscuit.');
    llm.enqueue({ toolCalls: [{ name: 'memory-forget', arguments: { id: saved?.id } }] }, { content: 'Forgotten.' });
    await chat(u, agent, 'Forget about my dog.');
    expect(await h.database.db.select().from(agentMemories).where(eq(agentMemories.agentId, agent))).toEqual([]);
  });

  it('recall@5 on the labelled fixture (facts stored as a scripted extractor would, later questions)', async () => {
    const u = await createUser(h.app);
    const agent = await makeAgent(u);
    const fixture = JSON.parse(readFileSync('test/fixtures/memory-recall.json', 'utf8')) as {
      items: { fact: string; question: string }[];
    };
    const ids = new Map<string, string>();
    for (const item of fixture.items) {
      const row = await memoryRepo.insertMemory(h.database.db, {
        id: newId('memory'),
        accountId: u.account.id,
        agentId: agent,
        endUserId: 'owner',
        content: item.fact,
      });
      ids.set(item.fact, row.id);
    }
    let hits = 0;
    const missed: string[] = [];
    for (const item of fixture.items) {
      const top = await memoryRepo.searchMemories(h.database.db, agent, 'owner', item.question, 5);
      if (top.some((m) => m.id === ids.get(item.fact))) hits++;
      else missed.push(item.question);
    }
    const recall = hits / fixture.items.length;
    console.log(
      `memory recall@5: ${hits}/${fixture.items.length} = ${(recall * 100).toFixed(1)}%; missed: ${missed.join(' | ')}`,
    );
    // The figure in docs/benchmarks.md; a drop below it is a regression.
    expect(recall).toBeGreaterThanOrEqual(0.78);
  });

  const agentOf = async (o: TestUser) =>
    (await call(h.app, 'POST', '/api/v1/agents', { token: o.sessionToken, body: { name: 'g' } })).json().id as string;
  const memoryOf = (o: TestUser, agent: string) =>
    memoryRepo.insertMemory(h.database.db, {
      id: newId('memory'),
      accountId: o.account.id,
      agentId: agent,
      endUserId: 'owner',
      content: 'The user keeps bees.',
    });

  it("another account's memory id through one's own agent is 404 and the memory stays", async () => {
    const [me, owner] = [await createUser(h.app), await createUser(h.app)];
    const theirs = await memoryOf(owner, await agentOf(owner));
    const res = await call(h.app, 'DELETE', `/api/v1/agents/${await agentOf(me)}/memories/${theirs.id}`, as(me));
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json()).toEqual({ error: 'NotFoundError', message: `Memory ${theirs.id} not found`, statusCode: 404 });
    const kept = await h.database.db.select().from(agentMemories).where(eq(agentMemories.id, theirs.id));
    expect(kept.map((m) => m.content)).toEqual(['The user keeps bees.']);
  });

  guardTests(
    () => h,
    [
      {
        method: 'GET',
        url: '/api/v1/agents/agt_x/memories',
        scopes: ['agents-all', 'agents-use'],
        ownedUrl: async (o) => `/api/v1/agents/${await agentOf(o)}/memories`,
      },
      {
        method: 'GET',
        url: '/api/v1/agents/agt_x/memories/search?query=x',
        scopes: ['agents-all', 'agents-use'],
        ownedUrl: async (o) => `/api/v1/agents/${await agentOf(o)}/memories/search?query=x`,
      },
      {
        method: 'DELETE',
        url: '/api/v1/agents/agt_x/memories/mem_x',
        scopes: ['agents-all', 'agents-use'],
        ownedUrl: async (o) => {
          const agent = await agentOf(o);
          return `/api/v1/agents/${agent}/memories/${(await memoryOf(o, agent)).id}`;
        },
      },
    ],
  );
});
