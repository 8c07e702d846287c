import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError, type Task } from '@modelcontextprotocol/sdk/types.js';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import type { AgentTool } from '../../agent/tools.ts';
import { mcpTasks } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';
import type { McpSources } from '../../mcp/server.ts';
import { sweepMcpTasks, TASK_STALE_MS } from './service.ts';

const writes: unknown[] = [];
const sources: McpSources = {
  async activeConnections() {
    return [];
  },
  async agentTools(ctx) {
    const tools: AgentTool[] = [
      {
        name: 'slack_post_message',
        description: 'Post to Slack',
        parameters: { type: 'object', properties: { text: { type: 'string' } } },
        mode: 'write',
        source: 'slack',
        run: async (args) => {
          writes.push(args);
          return { ok: true };
        },
      },
    ];
    const perm = ctx.actor.providerPermissions.slack ?? ctx.actor.defaultProviderPermission;
    return perm === 'read-write' ? tools : [];
  },
};

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
    const { buildApp } = await import('../../app.ts');
    for (let i = 0; i < 2; i++) {
      const a = await buildApp({ config: h.config, database: h.database, keyRing: h.keyRing, mcpSources: sources });
      await a.listen({ port: 0, host: '127.0.0.1' });
      const addr = a.server.address();
      urls.push(new URL(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/mcp`));
      if (i === 0) app = a;
      else other = a;
    }
  });
  afterAll(async () => {
    await app.close();
    await other.close();
    await h.close();
    await fake.close();
  });

  const connect = async (token: string, instance = 0) => {
    const client = new Client({ name: 'test-client', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(urls[instance] as URL, {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    return client;
  };
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
    const seen: string[] = [];
    const progress: Array<string | undefined> = [];
    let result: unknown;
    for await (const message of client.experimental.tasks.callToolStream(
      { name: 'use-agent', arguments: { prompt: 'Post hello to Slack' } },
      undefined,
      { onprogress: (p) => progress.push(p.message) },
    )) {
      if (message.type === 'taskCreated') seen.push(`created ${message.task.status}`);
      if (message.type === 'taskStatus') {
        if (seen.at(-1) !== `status ${message.task.status}`) seen.push(`status ${message.task.status}`);
        held.open(); // the model answers only once the client saw the task working
      }
      if (message.type === 'result') result = message.result;
      if (message.type === 'error') throw message.error;
    }
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
