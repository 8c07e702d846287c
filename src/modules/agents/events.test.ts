import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { testDatabaseTarget } from '../../../test/test-database.ts';
import { buildApp } from '../../app.ts';
import { openDatabase } from '../../db/client.ts';
import type { App } from '../../http/types.ts';

interface SseEvent {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

/** Reads an SSE response until `done` says so (or the time runs out); answers what was read. */
async function readEvents(
  url: string,
  token: string,
  done: (events: SseEvent[]) => boolean,
  headers: Record<string, string> = {},
  onOpen?: () => void | Promise<void>,
): Promise<SseEvent[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), 10_000);
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, ...headers }, signal: ac.signal });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  await onOpen?.();
  const events: SseEvent[] = [];
  let buf = '';
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += Buffer.from(chunk).toString('utf8');
      let end = buf.indexOf('\n\n');
      while (end >= 0) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const e: SseEvent = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) e.comment = line.slice(1).trim();
          else if (line.startsWith('id: ')) e.id = line.slice(4);
          else if (line.startsWith('event: ')) e.event = line.slice(7);
          else if (line.startsWith('data: ')) e.data = line.slice(6);
        }
        events.push(e);
        end = buf.indexOf('\n\n');
      }
      if (done(events)) break;
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return events;
}

const typed = (events: SseEvent[]) => events.filter((e) => e.event);

describe('conversation events (SSE)', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  let base = '';
  const env = () => ({ LLM_BASE_URL: llm.url, LLM_MODELS: 'fake-model=1000000/2000000', SSE_HEARTBEAT_MS: '200' });

  beforeAll(async () => {
    llm = await startFakeLlm();
    h = await createHarness(env());
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    base = urlOf(h.app);
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
  });
  const urlOf = (app: App) => {
    const addr = app.server.address();
    return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/api/v1`;
  };

  const setup = async (u: TestUser, app: App = h.app) => {
    const agent = (await call(app, 'POST', '/api/v1/agents', { token: u.sessionToken, body: { name: 'E' } })).json().id;
    const conversation = (
      await call(app, 'POST', `/api/v1/agents/${agent}/conversations`, { token: u.sessionToken, body: {} })
    ).json().id;
    return { agent, conversation, path: `/agents/${agent}/conversations/${conversation}/events` };
  };
  const chat = (app: App, u: TestUser, agent: string, conversationId: string, content: string) =>
    call(app, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
      token: u.sessionToken,
      body: { messages: [{ role: 'user', content }], conversationId },
    });

  it('delivers a run in order with ids, replays after Last-Event-ID, and beats', async () => {
    const u = await createUser(h.app);
    const { agent, conversation, path } = await setup(u);
    llm.enqueue({ toolCalls: [{ name: 'knowledge-list-bases', arguments: {} }] }, { content: 'You have one base.' });
    await call(h.app, 'PUT', `/api/v1/agents/${agent}`, {
      token: u.sessionToken,
      body: { enabledBuiltInTools: ['knowledge-base'] },
    });
    const events = await readEvents(
      `${base}${path}`,
      u.sessionToken,
      (all) => all.some((e) => e.event === 'run.completed'),
      {},
      async () => {
        const res = await chat(h.app, u, agent, conversation, 'Which bases do I have?');
        expect(res.statusCode, res.body).toBe(200);
      },
    );
    const run = typed(events);
    expect(run.map((e) => e.event)).toEqual([
      'message.created',
      'message.created',
      'tool.called',
      'message.created',
      'tool.result',
      'message.delta',
      'message.created',
      'run.completed',
    ]);
    const ids = run.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    const data = run.map((e) => JSON.parse(e.data ?? '{}'));
    expect(data[0].message).toMatchObject({ role: 'user', content: 'Which bases do I have?' });
    expect(data[2]).toMatchObject({ name: 'knowledge-list-bases', arguments: '{}' });
    expect(data[5]).toMatchObject({ content: 'You have one base.' });
    expect(data[7]).toMatchObject({ messageId: data[6].message.id, limited: false });
    expect(data[7].creditsConsumed).toBeGreaterThan(0);

    // Reconnecting with the third event's id replays exactly what came after it.
    const replay = await readEvents(`${base}${path}`, u.sessionToken, (all) => typed(all).length >= 5, {
      'Last-Event-ID': String(ids[2]),
    });
    expect(typed(replay).map((e) => Number(e.id))).toEqual(ids.slice(3));
    const beat = await readEvents(`${base}${path}?lastEventId=${ids.at(-1)}`, u.sessionToken, (all) =>
      all.some((e) => e.comment === 'ping'),
    );
    expect(typed(beat)).toEqual([]);
  });

  it("another account's conversation is not found", async () => {
    const owner = await createUser(h.app);
    const { path } = await setup(owner);
    const other = await createUser(h.app);
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${other.sessionToken}` } });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: string }).error).toBe('NotFoundError');
  });

  it.skipIf(testDatabaseTarget().kind !== 'pg')(
    'a subscriber on another instance (its own connections to PostgreSQL) receives the events',
    async () => {
      const second = await openDatabase({ databaseUrl: h.config.databaseUrl, dataDir: h.config.dataDir, poolMax: 3 });
      const other = await buildApp({ config: h.config, database: second, keyRing: h.keyRing });
      try {
        await other.listen({ port: 0, host: '127.0.0.1' });
        const u = await createUser(h.app);
        const { agent, conversation, path } = await setup(u);
        llm.enqueue({ content: 'From instance A.' });
        const events = await readEvents(
          `${urlOf(other)}${path}`,
          u.sessionToken,
          (all) => all.some((e) => e.event === 'run.completed'),
          {},
          async () => {
            expect((await chat(h.app, u, agent, conversation, 'hello')).statusCode).toBe(200);
          },
        );
        expect(typed(events).map((e) => e.event)).toEqual([
          'message.created',
          'message.delta',
          'message.created',
          'run.completed',
        ]);
      } finally {
        await other.close();
        await second.close();
      }
    },
  );

  guardTests(
    () => h,
    [
      {
        method: 'GET',
        url: '/api/v1/agents/agt_x/conversations/conv_x/events',
        scopes: ['agents-all', 'agents-use'],
      },
    ],
  );
});
