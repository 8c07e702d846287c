import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { FakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { call, createUser, fakeLlmSuite, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { rowsOf } from '../../db/rows.ts';
import { conversationEvents, conversationRuns, conversations, messages } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';
import { newId } from '../../lib/ids.ts';
import { CONVERSATION_JOURNAL_DIR } from './journal.ts';
import { writeConversationLog, writeConversationRows, writeMessage } from './repo.ts';

/**
 * Agent chat stores its conversation through this instance's group commit (events.service.ts `ConversationLog`)
 * and reads its agent from a per-instance cache (config-cache.ts): what is stored must still be complete and in
 * order, also across a graceful shutdown, and a change to an agent must reach the next chat on this instance.
 */
describe('agent chat: group-committed writes and the agent cache', () => {
  let h: TestHarness;
  let llm: FakeLlm;

  fakeLlmSuite((s) => ({ h, llm } = s));

  const makeAgent = async (app: App, u: TestUser, body: Record<string, unknown> = {}) => {
    const res = await call(app, 'POST', '/api/v1/agents', { token: u.sessionToken, body: { name: 'W', ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().id as string;
  };
  const chat = (app: App, u: TestUser, agent: string, content: string, conversationId?: string) =>
    call(app, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
      token: u.sessionToken,
      body: { messages: [{ role: 'user', content }], ...(conversationId ? { conversationId } : {}) },
    });
  /** The stored rows, read from the database itself (not through the API, which waits for queued writes). */
  const stored = async (conversationId: string) => ({
    messages: (
      await h.database.db
        .select()
        .from(messages)
        .where(eq(messages.conversationId, conversationId))
        .orderBy(asc(messages.seq))
    ).map((m) => [m.role, m.content]),
    events: (
      await h.database.db
        .select()
        .from(conversationEvents)
        .where(eq(conversationEvents.conversationId, conversationId))
        .orderBy(asc(conversationEvents.id))
    ).map((e) => e.type),
  });

  /** A conversation row of a batch, for `u`'s agent. */
  const conversationRow = (u: TestUser, id: string, agentId: string) => {
    const at = new Date();
    return { id, accountId: u.account.id, agentId, endUserId: 'end-user', title: 'Rows', at, lastActivityAt: at };
  };
  /** A message row of a batch. */
  const messageRow = (conversationId: string, role: 'user' | 'assistant', content: string) => ({
    id: newId('message'),
    conversationId,
    role,
    content,
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    error: null,
    at: new Date(),
  });

  it('a graceful shutdown right after the answers writes every queued message and event, in order', async () => {
    const app = await h.extraApp();
    const u = await createUser(app);
    const agent = await makeAgent(app, u, { firstPrompt: 'Hi, how can I help?' });
    llm.enqueue({ content: 'One.' }, { content: 'Two.' }, { content: 'Three.' });
    const first = await chat(app, u, agent, 'First?');
    expect(first.statusCode, first.body).toBe(200);
    const conversationId = first.headers['x-conversation-id'] as string;
    expect((await chat(app, u, agent, 'Second?', conversationId)).statusCode).toBe(200);
    const other = await chat(app, u, agent, 'Elsewhere?');
    expect(other.statusCode).toBe(200);
    await app.close();

    expect(await stored(conversationId)).toEqual({
      messages: [
        ['assistant', 'Hi, how can I help?'],
        ['user', 'First?'],
        ['assistant', 'One.'],
        ['user', 'Second?'],
        ['assistant', 'Two.'],
      ],
      events: [
        ...['message.created', 'message.created', 'message.delta', 'message.created', 'run.completed'],
        ...['message.created', 'message.delta', 'message.created', 'run.completed'],
      ],
    });
    expect(await stored(other.headers['x-conversation-id'] as string)).toMatchObject({
      messages: [
        ['assistant', 'Hi, how can I help?'],
        ['user', 'Elsewhere?'],
        ['assistant', 'Three.'],
      ],
    });
    // The second turn read the first from the database: the model saw the whole history.
    expect(llm.requests[1]?.messages.map((m) => m.content).slice(1)).toEqual([
      'Hi, how can I help?',
      'First?',
      'One.',
      'Second?',
    ]);
    const [conversation] = await h.database.db.select().from(conversations).where(eq(conversations.id, conversationId));
    expect(conversation?.title).toBe('First?');
    expect(conversation?.lastActivityAt.getTime()).toBeGreaterThan(conversation?.createdAt.getTime() ?? 0);
  });

  it("an answer the database could not store as is (NUL) is stored with U+FFFD; a NUL in the user's message is a 400", async () => {
    const u = await createUser(h.app);
    const agent = await makeAgent(h.app, u);
    llm.enqueue({ content: 'A\u0000B \ud800' });
    const res = await chat(h.app, u, agent, 'Say something odd.');
    expect(res.statusCode, res.body).toBe(200);
    await h.app.deps.background.drain();
    expect((await stored(res.headers['x-conversation-id'] as string)).messages).toEqual([
      ['user', 'Say something odd.'],
      ['assistant', 'A\uFFFDB \uFFFD'],
    ]);

    const nul = await chat(h.app, u, agent, 'A\u0000B');
    expect(nul.statusCode).toBe(400);
    // The OpenAI error shape, as every chat completion route answers.
    expect(nul.json().error).toMatchObject({
      type: 'BadRequestError',
      message: 'Text must not contain NUL (\\u0000) characters',
    });
    expect(llm.requests).toHaveLength(1);
  });

  it("an agent deleted before its chat's writes land loses only its own conversation", async () => {
    const u = await createUser(h.app);
    const doomed = await makeAgent(h.app, u);
    const kept = await makeAgent(h.app, u);
    llm.enqueue({ content: 'Gone soon.' }, { content: 'Still here.' });
    const a = await chat(h.app, u, doomed, 'Hello?');
    const b = await chat(h.app, u, kept, 'Hello?');
    expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
    // Its writes were queued (not yet landed: dropped) or landed (then deleted with it): either way nothing of
    // it remains, and the other chat's writes, in the same batch or not, are whole.
    expect((await call(h.app, 'DELETE', `/api/v1/agents/${doomed}`, { token: u.sessionToken })).statusCode).toBe(204);
    await h.app.deps.background.drain();
    expect(await stored(a.headers['x-conversation-id'] as string)).toEqual({ messages: [], events: [] });
    expect((await stored(b.headers['x-conversation-id'] as string)).messages).toEqual([
      ['user', 'Hello?'],
      ['assistant', 'Still here.'],
    ]);
  });

  it("an answer's message written alone (PostgreSQL's path) for a conversation deleted meanwhile is dropped, not an error", async () => {
    const u = await createUser(h.app);
    const agent = await makeAgent(h.app, u);
    llm.enqueue({ content: 'Kept.' });
    const res = await chat(h.app, u, agent, 'Hello?');
    const conversationId = res.headers['x-conversation-id'] as string;
    await h.app.deps.areas.conversationLog.settled();
    const message = (at: Date, conversation: string) => ({
      id: newId('message'),
      conversationId: conversation,
      role: 'assistant' as const,
      content: 'Alone.',
      toolCalls: [{ id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: '{}' } }],
      toolCallId: null,
      toolName: null,
      error: null,
      at,
    });
    await writeMessage(h.database.asyncCommitDb, message(new Date(), conversationId));
    await writeMessage(h.database.asyncCommitDb, message(new Date(), newId('conversation')));
    const rows = await h.database.db.select().from(messages).where(eq(messages.conversationId, conversationId));
    expect(rows.map((m) => [m.role, m.content, m.toolCalls])).toEqual([
      ['user', 'Hello?', null],
      ['assistant', 'Kept.', null],
      ['assistant', 'Alone.', [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }]],
    ]);
    // tool_calls of a message without any is NULL, not JSON null.
    const nulls = await h.database.db
      .select({ id: messages.id })
      .from(messages)
      .where(and(eq(messages.conversationId, conversationId), isNull(messages.toolCalls)));
    expect(nulls).toHaveLength(2);
  });

  it("a turn's rows written on their own keep the batch's rules: its agent's account, a conversation that exists, once", async () => {
    const u = await createUser(h.app);
    const other = await createUser(h.app);
    const agent = await makeAgent(h.app, u);
    const theirs = await makeAgent(h.app, other);
    const conversation = (id: string, agentId: string) => conversationRow(u, id, agentId);
    const [mine, misfiled, missing] = [newId('conversation'), newId('conversation'), newId('conversation')];
    const batch = {
      // Another account's agent: not created, and nothing of it is written.
      conversations: [conversation(mine, agent), conversation(misfiled, theirs)],
      messages: [
        messageRow(mine, 'user', 'First?'),
        messageRow(misfiled, 'user', 'Misfiled.'),
        messageRow(missing, 'user', 'Nowhere.'),
        messageRow(mine, 'assistant', 'Second.'),
      ],
      runs: [
        { id: newId('conversationRun'), conversationId: mine, leaseMs: 60_000 },
        { id: newId('conversationRun'), conversationId: missing, leaseMs: 60_000 },
      ],
    };
    await writeConversationRows(h.database.asyncCommitDb, batch);
    // Written again (a batch retried after a lost answer): nothing more.
    await writeConversationRows(h.database.asyncCommitDb, batch);
    const ids = [mine, misfiled, missing];
    expect(
      (await h.database.db.select().from(conversations).where(inArray(conversations.id, ids))).map((c) => c.id),
    ).toEqual([mine]);
    expect(await stored(mine)).toEqual({
      messages: [
        ['user', 'First?'],
        ['assistant', 'Second.'],
      ],
      events: [],
    });
    expect(await h.database.db.select().from(messages).where(inArray(messages.conversationId, ids))).toHaveLength(2);
    const leases = await h.database.db
      .select()
      .from(conversationRuns)
      .where(inArray(conversationRuns.conversationId, ids));
    expect(leases.map((r) => [r.id, r.conversationId])).toEqual([[batch.runs[0]?.id, mine]]);
  });

  it('writes a batch by key, not by reading the conversations whole (PostgreSQL only)', async (t) => {
    if (h.database.driver !== 'pg') t.skip(); // PGlite counts no scans
    const u = await createUser(h.app);
    const agent = await makeAgent(h.app, u);
    // Conversations of several pages that no ANALYZE has seen, as a new database's are until autovacuum comes by.
    const earlier = Array.from({ length: 300 }, () => newId('conversation'));
    await writeConversationRows(h.database.db, {
      conversations: earlier.map((id) => conversationRow(u, id, agent)),
      messages: earlier.map((id) => messageRow(id, 'user', 'Earlier.')),
      runs: [],
    });
    const [existing] = earlier;
    if (!existing) throw new Error('no conversation');
    const fresh = newId('conversation');
    const run = newId('conversationRun');
    const scans = await h.database.db.transaction(async (tx) => {
      await writeConversationRows(tx, {
        conversations: [conversationRow(u, fresh, agent)],
        messages: [messageRow(existing, 'assistant', 'Later.'), messageRow(fresh, 'user', 'New.')],
        runs: [{ id: run, conversationId: existing, leaseMs: 60_000 }],
      });
      await writeConversationLog(tx, {
        conversations: [],
        messages: [messageRow(existing, 'assistant', 'Last.')],
        events: [{ conversationId: existing, type: 'run.completed', data: {}, at: new Date() }],
        touches: [{ conversationId: existing, at: new Date() }],
        runs: [],
        endedRuns: [run],
      });
      const result = await tx.execute(
        sql`SELECT relname, seq_scan, seq_tup_read FROM pg_stat_xact_user_tables
          WHERE relname IN ('conversations', 'messages') ORDER BY relname`,
      );
      return rowsOf<{ relname: string; seq_scan: string; seq_tup_read: string }>(result).map((r) => [
        r.relname,
        Number(r.seq_scan),
      ]);
    });
    expect(scans).toEqual([
      ['conversations', 0],
      ['messages', 0],
    ]);
    expect((await stored(existing)).messages).toEqual([
      ['user', 'Earlier.'],
      ['assistant', 'Later.'],
      ['assistant', 'Last.'],
    ]);
  });

  it('where DATA_DIR cannot take the journal (PGlite), an answer leaves only once the database has its rows', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sb-no-journal-'));
    try {
      writeFileSync(join(dataDir, CONVERSATION_JOURNAL_DIR), 'not a folder');
      const app = await h.extraApp({ DATA_DIR: dataDir });
      const u = await createUser(app);
      const agent = await makeAgent(app, u);
      llm.enqueue({ content: 'Stored first.' });
      const res = await chat(app, u, agent, 'Saved?');
      expect(res.statusCode, res.body).toBe(200);
      // Read from the database itself at once, not through the API (which waits for queued writes).
      expect((await stored(res.headers['x-conversation-id'] as string)).messages).toEqual([
        ['user', 'Saved?'],
        ['assistant', 'Stored first.'],
      ]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('reads on the instance that chatted see its writes at once', async () => {
    const u = await createUser(h.app);
    const agent = await makeAgent(h.app, u);
    llm.enqueue({ content: 'Listed.' });
    const log = h.app.deps.areas.conversationLog;
    const res = await chat(h.app, u, agent, 'List me.');
    const conversationId = res.headers['x-conversation-id'] as string;
    const listed = await call(h.app, 'GET', `/api/v1/agents/${agent}/conversations`, { token: u.sessionToken });
    expect(listed.json().data.map((c: { id: string }) => c.id)).toEqual([conversationId]);
    const read = await call(h.app, 'GET', `/api/v1/agents/${agent}/conversations/${conversationId}/messages`, {
      token: u.sessionToken,
    });
    expect(read.json().data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    expect(log.pending).toBe(false);
  });

  it('with the agent cache on, an update, a new default and a delete reach the next chat on this instance', async () => {
    const app = await h.extraApp({ AUTH_CACHE_TTL_MS: '60000' });
    const u = await createUser(app);
    const agent = await makeAgent(app, u, { personality: 'You are Alpha.' });
    llm.enqueue({ content: '1' }, { content: '2' }, { content: '3' }, { content: '4' });
    expect((await chat(app, u, 'default', 'Who?')).statusCode).toBe(200);
    expect((await chat(app, u, agent, 'Who?')).statusCode).toBe(200);
    const put = await call(app, 'PUT', `/api/v1/agents/${agent}`, {
      token: u.sessionToken,
      body: { personality: 'You are Beta.' },
    });
    expect(put.statusCode).toBe(200);
    expect((await chat(app, u, agent, 'Who?')).statusCode).toBe(200);
    const second = await makeAgent(app, u, { personality: 'You are Gamma.' });
    expect(
      (await call(app, 'POST', `/api/v1/agents/${second}/set-default`, { token: u.sessionToken })).statusCode,
    ).toBe(200);
    expect((await chat(app, u, 'default', 'Who?')).statusCode).toBe(200);
    const systems = llm.requests.map((r) => r.messages[0]?.content ?? '');
    expect(systems.map((s) => /You are (\w+)\./.exec(s)?.[1])).toEqual(['Alpha', 'Alpha', 'Beta', 'Gamma']);

    expect((await call(app, 'DELETE', `/api/v1/agents/${agent}`, { token: u.sessionToken })).statusCode).toBe(204);
    expect((await chat(app, u, agent, 'Still there?')).statusCode).toBe(404);
    expect(llm.requests).toHaveLength(4);
  });
});
