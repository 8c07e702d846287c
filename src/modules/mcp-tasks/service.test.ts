import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError, type Task } from '@modelcontextprotocol/sdk/types.js';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import { mcpTasks } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';
import { connectMcp, listenMcpApp, mcpWrites as writes } from '../../mcp/test-support.ts';
import { sweepMcpTasks, TASK_STALE_MS } from './service.ts';

/** A promise and its resolver: the fake model holds an answer until the test lets it go. */
function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('MCP tasks (task-augmented use-agent)', () => {
  let fake: FakeLlm;
  let h: TestHarness;
  let app: App;
  /** A second instance on the same database: it answers polls of tasks the first one runs. */
  let other: App;
  const urls: URL[] = [];

  beforeAll(async () => {
    fake = await startFakeLlm();
    h = await createHarness({ LLM_BASE_URL: fake.url, LLM_MODELS: 'fake-model', MCP_TASK_POLL_INTERVAL_MS: '20' });
    for (let i = 0; i < 2; i++) {
      const listening = await listenMcpApp(h);
      urls.push(listening.url);
      if (i === 0) app = listening.app;
      else other = listening.app;
    }
  });
  afterAll(async () => {
    await app.close();
    await other.close();
    await h.close();
    await fake.close();
  });

  const connect = (token: string, instance = 0) => connectMcp(urls[instance] as URL, token);
  /** A task-augmented tools/call as a client sends it by hand (JSON-RPC through the client's request method). */
  const createTask = (client: Client, prompt: string, ttl?: number) =>
    client.request(
      { method: 'tools/call', params: { name: 'use-agent', arguments: { prompt }, task: ttl ? { ttl } : {} } },
      CreateTaskResultSchema,
    );
  const until = async (client: Client, taskId: string, done: (t: Task) => boolean) => {
    for (;;) {
      const task = await client.experimental.tasks.getTask(taskId);
      if (done(task)) return task;
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  /**
   * use-agent through the SDK's task stream: the statuses the client saw (each once), the progress messages and
   * the result. `onStatus` is told of each status message as it comes.
   */
  const streamUseAgent = async (client: Client, prompt: string, onStatus = () => {}) => {
    const seen: string[] = [];
    const progress: Array<string | undefined> = [];
    let result: unknown;
    for await (const message of client.experimental.tasks.callToolStream(
      { name: 'use-agent', arguments: { prompt } },
      undefined,
      { onprogress: (p) => progress.push(p.message) },
    )) {
      if (message.type === 'taskCreated') seen.push(`created ${message.task.status}`);
      if (message.type === 'taskStatus') {
        if (seen.at(-1) !== `status ${message.task.status}`) seen.push(`status ${message.task.status}`);
        onStatus();
      }
      if (message.type === 'result') result = message.result;
      if (message.type === 'error') throw message.error;
    }
    return { seen, progress, result };
  };
  const rpcError = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: unknown) => (err instanceof McpError ? { code: err.code, message: err.message } : err),
    );

  it('advertises tasks, and use-agent alone as a tool that may run as one', async () => {
    const u = await createUser(app);
    const client = await connect(await u.pat(['universal-mcp-read']));
    expect(client.getServerCapabilities()).toEqual({
      tools: {},
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    });
    const { tools } = await client.listTools();
    expect(Object.fromEntries(tools.map((t) => [t.name, t.execution]))).toEqual({
      'use-agent': { taskSupport: 'optional' },
      'list-connections': { taskSupport: 'forbidden' },
    });
    await client.close();
  });

  it('SDK client: the task is created at once, polled while working, and answers the agent with its progress', async () => {
    const u = await createUser(app);
    const client = await connect(await u.pat(['universal-mcp-read-write']));
    await client.listTools(); // the client learns that use-agent may run as a task
    const held = gate();
    fake.enqueue(
      { toolCalls: [{ name: 'slack_post_message', arguments: { text: 'hello' } }], until: held.opened },
      { content: 'Posted hello to Slack.' },
    );
    // The model answers only once the client saw the task working.
    const { seen, progress, result } = await streamUseAgent(client, 'Post hello to Slack', held.open);
    expect(seen).toEqual(['created working', 'status working', 'status completed']);
    expect(result).toMatchObject({
      content: [{ type: 'text', text: 'Posted hello to Slack.' }],
      _meta: { steps: 2, 'io.modelcontextprotocol/related-task': { taskId: expect.any(String) } },
    });
    // The progress notifications, queued while it ran, come on the tasks/result stream before the result.
    expect(progress).toEqual(['Calling slack slack_post_message', 'Answer ready']);
    expect(writes).toContainEqual({ text: 'hello' });
    await client.close();
  });

  it('another instance answers the polls, the result and the list; other callers get "not found"', async () => {
    const u = await createUser(app);
    const token = await u.pat(['universal-mcp-read-write']);
    const creator = await connect(token, 0);
    const poller = await connect(token, 1);
    const held = gate();
    fake.enqueue({ content: 'The answer is 42.', until: held.opened });
    const { task } = await createTask(creator, 'What is the answer?', 30 * 60_000);
    expect(task).toMatchObject({ status: 'working', ttl: 30 * 60_000, pollInterval: 20 });
    expect((await poller.experimental.tasks.getTask(task.taskId)).status).toBe('working');
    held.open();
    const done = await until(poller, task.taskId, (t) => t.status !== 'working');
    expect(done).toMatchObject({ taskId: task.taskId, status: 'completed', createdAt: task.createdAt });
    expect(await poller.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).toEqual({
      content: [{ type: 'text', text: 'The answer is 42.' }],
      _meta: {
        steps: 1,
        creditsConsumed: expect.any(Number),
        truncated: false,
        'io.modelcontextprotocol/related-task': { taskId: task.taskId },
      },
    });
    expect((await poller.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId]);

    // Another account, and a token of the same account allowed less than the creator's, see no such task.
    const stranger = await connect(await (await createUser(app)).pat(['universal-mcp-read-write']), 1);
    const narrower = await connect(await u.pat(['universal-mcp-read-write'], { default_provider_permission: 'read' }));
    for (const client of [stranger, narrower]) {
      const notFound = { code: -32602, message: expect.stringContaining('Task not found') };
      expect(await rpcError(client.experimental.tasks.getTask(task.taskId))).toEqual(notFound);
      expect(await rpcError(client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema))).toEqual(
        notFound,
      );
      expect(await rpcError(client.experimental.tasks.cancelTask(task.taskId))).toEqual(notFound);
      expect((await client.experimental.tasks.listTasks()).tasks).toEqual([]);
      await client.close();
    }
    await creator.close();
    await poller.close();
  });

  it('progress made on the running instance comes on the tasks/result stream another instance answers', async () => {
    const u = await createUser(app);
    // One client: the call goes to the first instance, every tasks/* request to the second.
    const polled: string[] = [];
    const client = await connectMcp(urls[0] as URL, await u.pat(['universal-mcp-read-write']), {
      fetch: (input, init) => {
        const method = /"method":"(tasks\/[a-z]+)"/.exec(String(init?.body))?.[1];
        if (method) polled.push(method);
        return fetch(method ? (urls[1] as URL) : input, init);
      },
    });
    await client.listTools();
    fake.enqueue(
      { toolCalls: [{ name: 'slack_post_message', arguments: { text: 'from afar' } }] },
      { content: 'Posted it.' },
    );
    const { progress, result } = await streamUseAgent(client, 'Post to Slack');
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'Posted it.' }] });
    expect(polled).toContain('tasks/result');
    expect(progress).toEqual(['Calling slack slack_post_message', 'Answer ready']);
    await client.close();
  });

  it('a read-only token is refused on every tasks/* method and on a task-augmented call, as on a direct call', async () => {
    const u = await createUser(app);
    const writer = await connect(await u.pat(['universal-mcp-read-write']));
    const held = gate();
    fake.enqueue({ content: 'Still here.', until: held.opened });
    const { task } = await createTask(writer, 'Wait');
    const reader = await connect(await u.pat(['universal-mcp-read']));
    const refused = { code: 403, message: expect.stringContaining('Missing required scope: universal-mcp-read-write') };
    const failure = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(await failure(reader.callTool({ name: 'use-agent', arguments: { prompt: 'Wait' } }))).toMatchObject(refused);
    for (const [method, send] of [
      ['tools/call with task', () => createTask(reader, 'Wait')],
      ['tasks/get', () => reader.experimental.tasks.getTask(task.taskId)],
      ['tasks/result', () => reader.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)],
      ['tasks/list', () => reader.experimental.tasks.listTasks()],
      ['tasks/cancel', () => reader.experimental.tasks.cancelTask(task.taskId)],
    ] as const) {
      expect(await failure(send()), method).toMatchObject(refused);
    }
    // The refused cancel changed nothing: the task runs on and ends with its answer.
    held.open();
    expect(await until(writer, task.taskId, (t) => t.status !== 'working')).toMatchObject({ status: 'completed' });
    expect((await writer.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual([task.taskId]);
    await reader.close();
    await writer.close();
  });

  it('a task-augmented call to list-connections (taskSupport "forbidden") is -32601, and runs nothing', async () => {
    const u = await createUser(app);
    const client = await connect(await u.pat(['universal-mcp-read-write']));
    const direct = await client.callTool({ name: 'list-connections', arguments: {} });
    expect(direct.isError).toBeUndefined();
    expect(
      await rpcError(
        client.request(
          { method: 'tools/call', params: { name: 'list-connections', arguments: {}, task: {} } },
          CreateTaskResultSchema,
        ),
      ),
    ).toEqual({ code: -32601, message: expect.stringContaining('list-connections') });
    expect((await client.experimental.tasks.listTasks()).tasks).toEqual([]);
    await client.close();
  });

  it('a cancel, at either instance, stops the run: the write it was about to make never happens', async () => {
    const u = await createUser(app);
    const token = await u.pat(['universal-mcp-read-write']);
    const creator = await connect(token, 0);
    const canceller = await connect(token, 1);
    const held = gate();
    fake.enqueue({
      toolCalls: [{ name: 'slack_post_message', arguments: { text: 'never sent' } }],
      until: held.opened,
    });
    const { task } = await createTask(creator, 'Post to Slack');
    const cancelled = await canceller.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
    // The run on the first instance sees the cancel and stops; only then does the model answer.
    await app.deps.background.drain();
    held.open();
    await other.deps.background.drain();
    expect(writes).not.toContainEqual({ text: 'never sent' });
    expect((await creator.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');
    expect(await rpcError(creator.experimental.tasks.cancelTask(task.taskId))).toEqual({
      code: -32602,
      message: expect.stringContaining('terminal status: cancelled'),
    });
    expect(await creator.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'McpToolAgentExecutionError: Client cancelled task execution.' }],
    });
    await creator.close();
    await canceller.close();
  });

  it('a task past its ttl is "not found" and upkeep deletes it; a run lost with its instance is failed', async () => {
    const u = await createUser(app);
    const client = await connect(await u.pat(['universal-mcp-read-write']));
    fake.enqueue({ content: 'Done.' });
    const { task } = await createTask(client, 'Say done', 1);
    // A ttl below the minimum is raised to it: the result outlives the run.
    expect(task.ttl).toBe(10 * 60_000);
    await until(client, task.taskId, (t) => t.status === 'completed');
    const db = h.database.db;
    await db
      .update(mcpTasks)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(mcpTasks.id, task.taskId));
    expect(await rpcError(client.experimental.tasks.getTask(task.taskId))).toEqual({
      code: -32602,
      message: expect.stringContaining('Task not found'),
    });

    const lost = gate();
    fake.enqueue({ content: 'Too late.', until: lost.opened });
    const { task: running } = await createTask(client, 'Take long');
    await db
      .update(mcpTasks)
      .set({ updatedAt: new Date(Date.now() - TASK_STALE_MS - 1000) })
      .where(eq(mcpTasks.id, running.taskId));
    expect(await sweepMcpTasks(app.deps)).toMatchObject({ deleted: 1, failed: 1 });
    expect(await db.select().from(mcpTasks).where(eq(mcpTasks.id, task.taskId))).toEqual([]);
    expect(await client.experimental.tasks.getTask(running.taskId)).toMatchObject({
      status: 'failed',
      statusMessage: expect.stringContaining('interrupted'),
    });
    lost.open();
    await app.deps.background.drain();
    // The run's late answer does not revive a task that ended.
    expect((await client.experimental.tasks.getTask(running.taskId)).status).toBe('failed');
    await client.close();
  });
});
