import type {
  CreateTaskOptions,
  QueuedMessage,
  TaskMessageQueue,
  TaskStore,
} from '@modelcontextprotocol/sdk/experimental/tasks';
import type { CallToolResult, Request, Task } from '@modelcontextprotocol/sdk/types.js';
import { coversDelegation, delegationOf, readDelegation } from '../../access/delegation.ts';
import { DEFAULT_AGENT_TIMEOUT_MS } from '../../agent/runtime.ts';
import type { Deps, ServiceContext } from '../../context.ts';
import type { McpTaskRow, McpTaskStatus } from '../../db/schema/index.ts';
import { newId } from '../../lib/ids.ts';
import * as repo from './repo.ts';

/** How long a task and its result are kept from its creation: the client's `ttl`, within these bounds. */
export const TASK_TTL = { defaultMs: 60 * 60_000, minMs: 10 * 60_000, maxMs: 24 * 60 * 60_000 } as const;
/** A task still running this long after its last step lost its run (the instance stopped): upkeep fails it. */
export const TASK_STALE_MS = DEFAULT_AGENT_TIMEOUT_MS + 5 * 60_000;
const PAGE_SIZE = 50;
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const TERMINAL = new Set<McpTaskStatus>(['completed', 'failed', 'cancelled']);

/** The task as the protocol shows it (tasks/get, tasks/list, CreateTaskResult). */
function taskOf(row: McpTaskRow): Task {
  return {
    taskId: row.id,
    status: row.status,
    ...(row.statusMessage ? { statusMessage: row.statusMessage } : {}),
    createdAt: row.createdAt.toISOString(),
    lastUpdatedAt: row.updatedAt.toISOString(),
    ttl: row.ttlMs,
    pollInterval: row.pollIntervalMs,
  };
}

/**
 * The SDK's task store for one request: the caller's tasks only. A task belongs to its account and is shown to
 * a token allowed at least what the creating token was (scopes, provider permissions, knowledge bases); anything
 * else, like an expired task, is "not found" (-32602), the protocol's answer for an unknown id.
 */
export function callerTaskStore(ctx: ServiceContext): TaskStore & TaskMessageQueue {
  const db = ctx.db;
  const caller = delegationOf(ctx.actor);
  const visible = async (id: string) => {
    const row = await repo.findTask(db, ctx.accountId, id, new Date());
    return row && coversDelegation(caller, readDelegation(row.runAs, [])) ? row : undefined;
  };
  return {
    async createTask(params: CreateTaskOptions, _requestId, request: Request): Promise<Task> {
      const ttl = Math.min(TASK_TTL.maxMs, Math.max(TASK_TTL.minMs, params.ttl ?? TASK_TTL.defaultMs));
      const now = new Date();
      const row = await repo.insertTask(db, {
        id: newId('mcpTask'),
        accountId: ctx.accountId,
        tokenId: ctx.actor.tokenId,
        runAs: caller,
        toolName: String(request.params?.name ?? request.method),
        ttlMs: ttl,
        pollIntervalMs: ctx.deps.config.mcp.taskPollIntervalMs,
        createdAt: now,
        updatedAt: now,
        expiresAt: new Date(now.getTime() + ttl),
      });
      ctx.log.info({ taskId: row.id, tool: row.toolName, ttl }, 'MCP task created');
      return taskOf(row);
    },
    async getTask(id) {
      const row = await visible(id);
      return row ? taskOf(row) : null;
    },
    async storeTaskResult(id, status, result) {
      await repo.settleTask(db, ctx.accountId, id, { status, statusMessage: null, result });
    },
    async getTaskResult(id) {
      const row = await visible(id);
      if (row?.result) return row.result;
      // Cancelled, or failed without a result (its run was lost): a tool error saying so, as the call would have.
      return endedWithout(row?.statusMessage ?? 'The task has no result.');
    },
    async updateTaskStatus(id, status, statusMessage) {
      await repo.settleTask(db, ctx.accountId, id, { status, statusMessage: statusMessage ?? null });
    },
    async listTasks(cursor) {
      const after = cursor === undefined ? undefined : parseCursor(cursor);
      const rows = await repo.listTasks(db, ctx.accountId, new Date(), PAGE_SIZE, after);
      const last = rows.at(-1);
      return {
        tasks: rows.filter((r) => coversDelegation(caller, readDelegation(r.runAs, []))).map(taskOf),
        ...(rows.length === PAGE_SIZE && last ? { nextCursor: cursorOf(last) } : {}),
      };
    },
    // The queue of notifications (progress) that `tasks/result` delivers; only ever of a task the caller sees.
    async enqueue() {
      throw new Error('Only a running task queues messages');
    },
    async dequeue(id) {
      const [message] = await repo.takeMessages(db, ctx.accountId, id, false);
      return message as QueuedMessage | undefined;
    },
    async dequeueAll(id) {
      return (await repo.takeMessages(db, ctx.accountId, id, true)) as unknown as QueuedMessage[];
    },
  };
}

function endedWithout(message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `McpToolAgentExecutionError: ${message}` }] };
}

function cursorOf(row: McpTaskRow): string {
  return Buffer.from(JSON.stringify([row.createdAt.toISOString(), row.id])).toString('base64url');
}

function parseCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown[];
    const createdAt = new Date(String(at));
    if (typeof id === 'string' && !Number.isNaN(createdAt.getTime())) return { createdAt, id };
  } catch {}
  throw new Error('Invalid cursor');
}

export interface TaskRun {
  signal: AbortSignal;
  /** One step of the run: the task's status message, and a progress notification when the call asked for them. */
  onProgress: (p: { progress: number; total: number; message: string }) => Promise<void>;
}

/**
 * Runs a task's work after its CreateTaskResult is sent, as background work of this instance, and stores the
 * result (a tool error: `failed`). The run stops when the task is cancelled: a cancel can arrive at any
 * instance, so the run looks at the task's status every poll interval.
 */
export function runTask(
  ctx: ServiceContext,
  task: Task,
  progressToken: string | number | undefined,
  work: (run: TaskRun) => Promise<CallToolResult>,
): void {
  const { db } = ctx;
  const controller = new AbortController();
  const watch = setInterval(async () => {
    const status = await repo.taskStatus(db, task.taskId).catch(() => undefined);
    if (status === undefined || TERMINAL.has(status)) controller.abort(new Error('The task was cancelled'));
  }, ctx.deps.config.mcp.taskPollIntervalMs);
  watch.unref();
  const related = { [RELATED_TASK]: { taskId: task.taskId } };
  const onProgress: TaskRun['onProgress'] = async (p) => {
    const notification =
      progressToken === undefined
        ? undefined
        : {
            type: 'notification',
            timestamp: Date.now(),
            message: {
              jsonrpc: '2.0',
              method: 'notifications/progress',
              params: { progressToken, progress: p.progress, total: p.total, message: p.message, _meta: related },
            },
          };
    await repo.recordStep(db, task.taskId, p.message, notification);
  };
  const done = (async () => {
    try {
      const result = await work({ signal: controller.signal, onProgress });
      const failed = result.isError === true;
      const text = result.content[0]?.type === 'text' ? result.content[0].text : null;
      const stored = await repo.settleTask(db, ctx.accountId, task.taskId, {
        status: failed ? 'failed' : 'completed',
        statusMessage: failed ? text : null,
        result: result as Record<string, unknown>,
      });
      ctx.log.info({ taskId: task.taskId, failed, stored }, 'MCP task ended');
    } finally {
      clearInterval(watch);
    }
  })();
  ctx.deps.background.track('MCP task', done);
}

/** Upkeep (mcp.tasks-cleanup): expired tasks deleted, lost runs failed. */
export function sweepMcpTasks(deps: Deps, now = new Date()): Promise<{ deleted: number; failed: number }> {
  return repo.sweepTasks(deps.database.db, now, new Date(now.getTime() - TASK_STALE_MS));
}
