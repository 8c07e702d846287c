import type { AgentTool, AgentToolGroup } from '../../agent/tool-group.ts';
import type { ServiceContext } from '../../context.ts';
import { requireScope } from '../../context.ts';
import type { ConnectionRow } from '../../db/schema/index.ts';
import { BadGatewayError, BadRequestError, ForbiddenError, NotFoundError, ValidationError } from '../../lib/errors.ts';
import { sha256Hex } from '../../lib/ids.ts';
import { REDACTED } from '../../lib/redact.ts';
import { recordActivity } from '../activity/index.ts';
import type { ProviderDefinition, ProviderTool, ToolDefinition } from '../providers/index.ts';
import {
  type BuiltRequest,
  buildToolRequest,
  findTool,
  listProviderTools,
  mergePages,
  nextPageRequest,
  providerCatalog,
  providerErrorMessage,
  shapeToolResponse,
  ToolArgumentError,
  toolSearchWords,
} from '../providers/index.ts';
import { activeConnectionRows, connectionsChanged } from './active-cache.ts';
import { apiOf, withCredential } from './api-key.ts';
import { connectionEvent } from './events.ts';
import { providerMessage, sendWithRetry } from './http.ts';
import * as repo from './repo.ts';
import { type ConnectionSettings, connectionSettings } from './settings.ts';
import { assertUsable, freshAccessToken, openAccessToken, refreshConnectionRow } from './tokens.ts';

/**
 * Running provider tools: the REST execute endpoint, the agent and MCP all come through
 * `executeProviderTool`, so the permission rule and the token handling live in one place.
 */

/** Scopes that may run provider tools: the REST API, MCP clients and agents. */
const TOOL_SCOPES = ['connections', 'universal-mcp-read-write', 'agents-use', 'agents-all'] as const;

export interface ExecuteToolInput {
  providerId: string;
  toolName: string;
  connectionId: string;
  arguments?: Record<string, unknown> | undefined;
  signal?: AbortSignal | undefined;
}

/** The provider refused the token (401): the caller refreshes once and tries again. */
class ProviderUnauthorized extends Error {}

/** `providerPermissions[providerId] ?? defaultProviderPermission`. */
export function providerPermission(ctx: ServiceContext, providerId: string): 'read' | 'read-write' {
  return ctx.actor.providerPermissions[providerId] ?? ctx.actor.defaultProviderPermission;
}

/**
 * The permission rule of provider tools, the one place it is written: a tool that writes needs the caller's
 * permission for its provider to be `read-write`; read tools need no more than `read`. Running a tool,
 * listing the tools of a connection and offering tools to the agent all ask this.
 */
export function mayRunTool(ctx: ServiceContext, providerId: string, tool: Pick<ToolDefinition, 'mode'>): boolean {
  return tool.mode !== 'write' || providerPermission(ctx, providerId) === 'read-write';
}

/**
 * `GET /providers/:providerId/tools?connectionId=`: the tools the caller may run on that connection. The
 * connection must be the caller's and of that provider (404 otherwise: an id that is not one of yours is
 * not found); write tools are left out where the caller's permission for the provider is `read`.
 */
export async function listConnectionTools(
  ctx: ServiceContext,
  providerId: string,
  connectionId: string,
): Promise<ProviderTool[]> {
  // The catalog is open to any bearer; a connection of the account is not.
  requireScope(ctx, 'connections');
  const tools = listProviderTools(ctx, providerId);
  const row = await repo.findConnection(ctx.db, ctx.accountId, connectionId);
  if (!row) throw new NotFoundError(`Connection ${connectionId} not found`);
  if (row.providerId !== providerId) {
    throw new NotFoundError(`Connection ${connectionId} is a ${row.providerId} connection, not ${providerId}`);
  }
  return tools.filter((t) => mayRunTool(ctx, providerId, t));
}

/** One call of a tool with one token: every page up to the tool's cap, merged. */
async function runWithToken(
  def: ProviderDefinition,
  connection: Pick<ConnectionRow, 'authType' | 'vars'>,
  tool: ToolDefinition,
  first: BuiltRequest,
  token: string,
  settings: ConnectionSettings,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  const pages: unknown[] = [];
  let req: BuiltRequest | undefined = withCredential(def, connection, first, token);
  while (req) {
    const answer = await sendWithRetry(def, req, settings, signal);
    if (answer.status === 401) throw new ProviderUnauthorized();
    if (answer.status >= 500) {
      throw new BadGatewayError(
        `${def.label} failed (${answer.status}): ${cutToken(providerMessage(def, answer.body), token)}`,
      );
    }
    if (answer.status >= 400) {
      throw new BadRequestError(
        `${def.label} refused the request (${answer.status}): ${cutToken(providerMessage(def, answer.body), token)}`,
      );
    }
    const failure = providerErrorMessage(def, answer.body);
    if (failure) throw new BadRequestError(`${def.label} reported a failure: ${cutToken(failure, token)}`);
    pages.push(answer.body);
    req = nextPageRequest(tool, req, { body: answer.body, headers: answer.headers }, pages.length);
  }
  return withoutToken(mergePages(tool, pages), token);
}

/**
 * A provider that echoes the token back (a debug field, a URL carrying it) must not hand it to the caller
 * or the model: the pattern redaction knows common token shapes, not every provider's, so the exact token
 * sent is cut out of every string of the answer.
 */
function withoutToken(value: unknown, token: string): unknown {
  if (typeof value === 'string') return cutToken(value, token);
  if (Array.isArray(value)) return value.map((v) => withoutToken(v, token));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutToken(v, token)]));
  }
  return value;
}

function cutToken(text: string, token: string): string {
  return token.length >= 8 && text.includes(token) ? text.split(token).join(REDACTED) : text;
}

/**
 * Runs one provider tool on one of the caller's connections and answers the shaped result.
 * - 404 for another account's connection, an unknown provider or tool; 400 for a connection of another provider;
 * - 403 when the tool writes and the caller's permission for the provider is `read`;
 * - 422 naming each argument that does not fit the tool's JSON Schema;
 * - a token refreshed first when within the refresh buffer; a provider 401 refreshes once (one refresh
 *   however many calls hit it) and retries; a second 401 marks the connection (`error`, or `revoked` when it
 *   cannot be refreshed) and answers 502;
 * - provider 429/503 retried once after the wait asked for; then 429 with `Retry-After`; 5xx 502; timeouts 504.
 */
export async function executeProviderTool(ctx: ServiceContext, input: ExecuteToolInput): Promise<unknown> {
  const started = performance.now();
  const mode = providerCatalog(ctx.deps.config)
    .get(input.providerId)
    ?.definition.tools.find((t) => t.name === input.toolName)?.mode;
  const row = {
    kind: 'tool-call' as const,
    via: 'api' as const,
    tool: input.toolName,
    mode,
    providerId: input.providerId,
    connectionId: input.connectionId,
    args: input.arguments ?? {},
  };
  try {
    const result = await runProviderTool(ctx, input);
    void recordActivity(ctx, { ...row, status: 'ok', durationMs: performance.now() - started, result });
    return result;
  } catch (err) {
    void recordActivity(ctx, {
      ...row,
      status: err instanceof ForbiddenError ? 'refused' : 'error',
      durationMs: performance.now() - started,
      error: err instanceof Error ? err.message : String(err),
    });
    throw err;
  }
}

/** `executeProviderTool` without its activity row: the agent runtime records its calls itself. */
async function runProviderTool(ctx: ServiceContext, input: ExecuteToolInput): Promise<unknown> {
  requireScope(ctx, ...TOOL_SCOPES);
  const def = providerCatalog(ctx.deps.config).get(input.providerId)?.definition;
  if (!def) throw new NotFoundError(`Provider ${input.providerId} not found`);
  const tool = findTool(def, input.toolName);
  if (!tool) throw new NotFoundError(`Tool ${input.toolName} not found for provider ${input.providerId}`);
  const row = await repo.findConnection(ctx.db, ctx.accountId, input.connectionId);
  if (!row) throw new NotFoundError(`Connection ${input.connectionId} not found`);
  if (row.providerId !== def.id) {
    throw new BadRequestError(`Connection ${row.id} is a ${row.providerId} connection, not ${def.id}`);
  }
  if (!mayRunTool(ctx, def.id, tool)) {
    throw new ForbiddenError(
      `This token may only run read tools of ${def.label} (provider permission "read"); ${tool.name} writes`,
    );
  }
  let request: BuiltRequest;
  try {
    request = buildToolRequest(apiOf(def, row.authType), tool, input.arguments ?? {}, { baseUrlVars: row.vars });
  } catch (err) {
    // The wire name of a 422 is ValidationError (SPEC §7), whatever subclass reported it.
    if (err instanceof ToolArgumentError) throw new ValidationError(err.message, err.details);
    throw err;
  }
  const settings = connectionSettings(ctx.deps.config);
  const fresh = await freshAccessToken(ctx.deps, row);
  let answer: unknown;
  try {
    answer = await runWithToken(def, fresh.row, tool, request, fresh.token, settings, input.signal);
  } catch (err) {
    if (!(err instanceof ProviderUnauthorized)) throw err;
    answer = await retryAfterUnauthorized(ctx, def, tool, request, fresh.row, fresh.sealed, settings, input.signal);
  }
  return shapeToolResponse(tool, answer);
}

async function retryAfterUnauthorized(
  ctx: ServiceContext,
  def: ProviderDefinition,
  tool: ToolDefinition,
  request: BuiltRequest,
  row: ConnectionRow,
  refusedSealed: string,
  settings: ConnectionSettings,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  let refused = refusedSealed;
  if (row.canRefresh && row.refreshTokenEnc) {
    const refreshed = await refreshConnectionRow(ctx.deps, ctx.accountId, row.id, {
      force: true,
      unlessTokenChangedFrom: refusedSealed,
    });
    assertUsable(refreshed, def);
    if (refreshed.accessTokenEnc !== refusedSealed) {
      try {
        return await runWithToken(
          def,
          refreshed,
          tool,
          request,
          openAccessToken(ctx.deps, refreshed),
          settings,
          signal,
        );
      } catch (err) {
        if (!(err instanceof ProviderUnauthorized)) throw err;
        refused = refreshed.accessTokenEnc;
      }
    }
  }
  const canRefresh = row.canRefresh && !!row.refreshTokenEnc;
  const status = canRefresh ? 'error' : 'revoked';
  const lastError = `${def.label} refused the token (401)`;
  await ctx.db.transaction(async (tx) => {
    const marked = await repo.markTokenRefused(tx, ctx.accountId, row.id, refused, { status, canRefresh, lastError });
    // Not marked: the token changed meanwhile, so the status did not move (no webhook); the refusal is logged.
    await connectionEvent(ctx.deps, tx, { before: row, after: marked ?? row, event: status, error: lastError }, ctx);
  });
  connectionsChanged(ctx.deps, ctx.accountId);
  ctx.log.warn({ connectionId: row.id, providerId: def.id, status }, 'provider refused the connection token');
  throw new BadGatewayError(
    `${def.label} refused the token of connection ${row.id} (401)${canRefresh ? ' even after a refresh' : ''}; ` +
      `the connection is now ${status}: ${canRefresh ? 'refresh or reconnect it' : 'reconnect it'}`,
  );
}

// ---- agent tools ----

const MAX_TOOL_NAME = 64;

/** `github_create_issue`: the tool name prefixed with the provider id (once), at most 64 characters. */
export function agentToolName(providerId: string, toolName: string, suffix = ''): string {
  const prefix = providerId.replace(/[^a-z0-9_]/g, '_');
  const base = toolName.startsWith(`${prefix}_`) ? toolName : `${prefix}_${toolName}`;
  const name = `${base}${suffix}`;
  if (name.length <= MAX_TOOL_NAME) return name;
  const hash = sha256Hex(name).slice(0, 8);
  return `${name.slice(0, MAX_TOOL_NAME - 9)}_${hash}`;
}

/**
 * The tools of the caller's active connections as agent tools, optionally of one provider (`connector`).
 * Write tools are left out where the caller's permission for the provider is `read`. With several
 * connections of one provider, the first keeps the plain names and the others get `_2`, `_3` ... with the
 * account named in the description.
 */
export async function providerAgentTools(
  ctx: ServiceContext,
  opts: { connector?: string | undefined } = {},
): Promise<AgentTool[]> {
  requireScope(ctx, ...TOOL_SCOPES);
  const catalog = providerCatalog(ctx.deps.config);
  const rows = await activeConnectionRows(ctx.deps, ctx.db, ctx.accountId, opts.connector);
  const byProvider = new Map<string, ConnectionRow[]>();
  for (const row of rows) byProvider.set(row.providerId, [...(byProvider.get(row.providerId) ?? []), row]);
  const out: AgentTool[] = [];
  for (const [providerId, connections] of byProvider) {
    const def = catalog.get(providerId)?.definition;
    if (!def) continue;
    const tools = def.tools.filter((t) => mayRunTool(ctx, providerId, t));
    connections.forEach((connection, n) => {
      const several = connections.length > 1;
      for (const tool of tools) {
        out.push({
          name: agentToolName(providerId, tool.name, n === 0 ? '' : `_${n + 1}`),
          description: several
            ? `${tool.description} (${def.label} account: ${connection.metadata.displayName})`
            : tool.description,
          parameters: tool.parameters as unknown as Record<string, unknown>,
          mode: tool.mode,
          source: providerId,
          connectionId: connection.id,
          ...toolSearchWords(def, tool),
          run: (args, signal) =>
            runProviderTool(ctx, {
              providerId,
              toolName: tool.name,
              connectionId: connection.id,
              arguments: args,
              signal,
            }),
        });
      }
    });
  }
  return out;
}

/** The `provider-tools` group: the tools of the caller's active connections. */
export const providerToolGroup: AgentToolGroup = {
  name: 'provider-tools',
  tools: (ctx) => providerAgentTools(ctx, {}),
};
