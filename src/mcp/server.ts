import type { ToolTaskHandler } from '@modelcontextprotocol/sdk/experimental/tasks';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { judgeInjection } from '../agent/injection-guard.ts';
import { sanitizeOutput } from '../agent/output.ts';
import { AgentError, runAgent } from '../agent/runtime.ts';
import type { AgentTool } from '../agent/tool-group.ts';
import type { ServiceContext } from '../context.ts';
import { AppError, CreditsExhaustedError } from '../lib/errors.ts';
import { redactSecrets } from '../lib/redact.ts';
import { recordActivity } from '../modules/activity/index.ts';
import type { Credits } from '../modules/llm/index.ts';
import { callerTaskStore, runTask } from '../modules/mcp-tasks/index.ts';
import type { McpSdk } from './sdk.ts';

/** What list-connections reports of one active connection (SPEC §4 `_meta.active`). */
export interface ActiveConnection {
  serviceId: string;
  serviceLabel: string;
  connectedUserAccount: { email: string | null; displayName: string };
}

/** Where the two tools get their data: the connections module in production, anything in tests. */
export interface McpSources {
  activeConnections(ctx: ServiceContext): Promise<ActiveConnection[]>;
  agentTools(ctx: ServiceContext, opts: { connector?: string | undefined }): Promise<AgentTool[]>;
}

export interface McpCallOptions {
  ctx: ServiceContext;
  sources: McpSources;
  version: string;
  /** `X-LLM-Model`, already checked against the catalog. */
  model?: string | undefined;
  signal: AbortSignal;
  /** Told the bill of each model call a tool makes (the endpoint reports the total in `X-Credits-*`). */
  onCharge?: (credits: Credits) => void;
  /** The request is a `tools/call` without `task`: use-agent runs in it (otherwise it is registered for tasks). */
  plainToolCall: boolean;
}

/** SPEC §7 MCP tool errors: a tool result with `isError` and the error's name in its text. */
export type McpToolErrorName =
  | 'McpToolUnauthorizedError'
  | 'McpToolInsufficientCreditsError'
  | 'McpToolPromptInjectionBlockedError'
  | 'McpToolAgentExecutionError';

export function toolError(name: McpToolErrorName, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `${name}: ${redactSecrets(message)}` }] };
}

const USE_AGENT_DESCRIPTION =
  "Act on the user's connected services (Gmail, GitHub, Slack, Notion, calendars, files ...) with an agent that " +
  'reads and writes through them. Describe the goal in plain language in `prompt`; one call may combine several ' +
  'services (for example read a GitHub issue and post it to Slack). Optionally narrow it to one service with ' +
  "`connector` (a service id from list-connections). Returns the agent's answer as text.";

const LIST_CONNECTIONS_DESCRIPTION =
  'List the services the user has connected and can be used by use-agent, with the account connected at each ' +
  '(`_meta.active`: serviceId, serviceLabel, connectedUserAccount).';

/** Tools that answer at once and never run as a task (`execution.taskSupport: "forbidden"`). */
const TASK_FORBIDDEN = new Set(['list-connections']);

/**
 * Why a task-augmented `tools/call` of `name` is refused (JSON-RPC -32601, as the tasks spec says), or undefined
 * when the tool may run as a task. The SDK would run such a tool and then fail its answer with -32602.
 */
export function taskCallRefusal(name: unknown): string | undefined {
  if (typeof name !== 'string' || !TASK_FORBIDDEN.has(name)) return undefined;
  return `Tool ${name} does not run as a task (taskSupport: "forbidden"): call it without \`task\``;
}

/** A fresh MCP server for one request (the endpoint is stateless): the two tools of SPEC §4. */
export function createMcpServer(sdk: McpSdk, opts: McpCallOptions): McpServer {
  const { ctx, sources } = opts;
  const tasks = callerTaskStore(ctx);
  const server = new sdk.McpServer(
    { name: 'switchboard', version: opts.version },
    {
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      jsonSchemaValidator: sdk.jsonSchemaValidator,
      taskStore: tasks,
      taskMessageQueue: tasks,
    },
  );

  server.registerTool(
    'list-connections',
    {
      title: 'List connected services',
      description: LIST_CONNECTIONS_DESCRIPTION,
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async () => {
      const active = await sources.activeConnections(ctx);
      const lines = active.map(
        (c) =>
          `- ${c.serviceLabel} (${c.serviceId}): ${c.connectedUserAccount.displayName}` +
          (c.connectedUserAccount.email ? ` <${c.connectedUserAccount.email}>` : ''),
      );
      const text = active.length
        ? `${active.length} connected service${active.length === 1 ? '' : 's'}:\n${lines.join('\n')}`
        : 'No services are connected yet. The user can connect services in Switchboard.';
      return { content: [{ type: 'text', text }], _meta: { active } };
    },
  );

  const useAgentConfig = {
    title: 'Use the agent on connected services',
    description: USE_AGENT_DESCRIPTION,
    inputSchema: {
      prompt: z.string().min(1).max(20_000).describe('What to do, in plain language'),
      connector: z.string().min(1).max(100).optional().describe('Limit the agent to one service id'),
    },
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
  };
  if (opts.plainToolCall) {
    // A call without `task` runs in its request, as before tasks: progress on its stream, stopped when it is cut.
    server.registerTool('use-agent', useAgentConfig, (args, extra) => {
      const progressToken = extra._meta?.progressToken;
      return useAgent(opts, args, {
        signal: AbortSignal.any([opts.signal, extra.signal]),
        onCharge: opts.onCharge,
        onProgress:
          progressToken === undefined
            ? undefined
            : (p) =>
                extra.sendNotification({
                  method: 'notifications/progress',
                  params: { progressToken, progress: p.progress, total: p.total, message: p.message },
                }),
      });
    });
  } else {
    // tools/list and task-augmented calls (protocol 2025-11-25 tasks): the answer is a task, run after it is sent.
    const handler: ToolTaskHandler<typeof useAgentConfig.inputSchema> = {
      createTask: async (args, extra) => {
        const task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl });
        runTask(ctx, task, extra._meta?.progressToken, (run) => useAgent(opts, args, run));
        return { task };
      },
      getTask: (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
    };
    server.experimental.tasks.registerToolTask(
      'use-agent',
      { ...useAgentConfig, execution: { taskSupport: 'optional' } },
      handler,
    );
  }
  // registerTool declared `tools.listChanged: true`, but a stateless server never sends list-changed
  // notifications: say `tools: {}` (an undefined member is dropped from the JSON answer).
  server.server.registerCapabilities({ tools: { listChanged: undefined } });
  return server;
}

/** use-agent: the injection check, then the agent on the caller's connections (SPEC §4). */
async function useAgent(
  opts: McpCallOptions,
  { prompt, connector }: { prompt: string; connector?: string | undefined },
  run: {
    signal: AbortSignal;
    onCharge?: ((credits: Credits) => void) | undefined;
    onProgress?: ((p: { progress: number; total: number; message: string }) => Promise<void>) | undefined;
  },
): Promise<CallToolResult> {
  const { ctx, sources } = opts;
  const billing = { type: 'mcp', description: 'MCP use-agent' } as const;
  const { signal } = run;
  let guardCredits = 0;
  const verdict = await judgeInjection(ctx, prompt, {
    kind: 'prompt',
    billing: { type: 'mcp', description: 'MCP use-agent injection check' },
    signal,
    onCharge: async (credits) => {
      guardCredits += credits.consumed;
      await run.onCharge?.(credits);
    },
  });
  if (verdict.flagged) {
    void recordActivity(ctx, {
      kind: 'agent-run',
      via: 'use-agent',
      status: 'blocked',
      credits: guardCredits,
      args: { prompt, connector },
      error: `The prompt was blocked as a likely prompt injection (${verdict.families.join(', ')})`,
    });
    ctx.log.warn(
      { rules: verdict.rules, families: verdict.families, score: verdict.score, guard: verdict.guard },
      'use-agent prompt blocked',
    );
    return toolError(
      'McpToolPromptInjectionBlockedError',
      `The prompt was blocked as a likely prompt injection (${verdict.families.join(', ')}).`,
    );
  }
  try {
    const tools = await sources.agentTools(ctx, { connector });
    if (connector && tools.length === 0) {
      return toolError('McpToolAgentExecutionError', `No active connection for service "${connector}".`);
    }
    const result = await runAgent(ctx, {
      prompt,
      model: opts.model,
      tools,
      billing,
      onCharge: run.onCharge,
      signal,
      activity: { via: 'use-agent' },
      onProgress: run.onProgress,
    });
    const out = sanitizeOutput(result.text);
    return {
      content: [{ type: 'text', text: out.text }],
      _meta: { steps: result.steps, creditsConsumed: result.creditsConsumed + guardCredits, truncated: out.truncated },
    };
  } catch (err) {
    if (err instanceof CreditsExhaustedError) return toolError('McpToolInsufficientCreditsError', err.message);
    if (err instanceof AgentError || err instanceof AppError)
      return toolError('McpToolAgentExecutionError', err.message);
    ctx.log.error({ err }, 'use-agent failed');
    return toolError('McpToolAgentExecutionError', 'The agent failed unexpectedly.');
  }
}
