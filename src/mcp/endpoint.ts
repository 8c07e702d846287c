import type { ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { type CreditFigures, creditHeaders, streamCreditHeaders, writeStreamCredits } from '../http/credits.ts';
import { hostnameOf, LOOPBACK_HOSTS, servedOrigins } from '../http/origins.ts';
import type { App } from '../http/types.ts';
import { abortSignalOf } from '../lib/cancel.ts';
import { AppError, ForbiddenError, NotAcceptableError } from '../lib/errors.ts';
import { balanceAfter } from '../modules/credits/index.ts';
import { clientGone, resolveModel } from '../modules/llm/index.ts';
import { loadMcpSdk } from './sdk.ts';
import { createMcpServer, type McpSources, taskCallRefusal } from './server.ts';

class MethodNotAllowedError extends AppError {
  constructor(message: string) {
    super(405, message, { Allow: 'POST' });
  }
}

/** `WWW-Authenticate` for MCP clients: where to discover the authorization server (RFC 9728). */
export function mcpChallenge(baseUrl: string, extra = ''): string {
  return `Bearer resource_metadata="${baseUrl}/.well-known/oauth-protected-resource"${extra}`;
}

/** What an MCP client should ask for: discovery and calling the tools. */
const MCP_SCOPES = 'universal-mcp-read universal-mcp-read-write';

/**
 * DNS-rebinding and cross-site defence (the SDK's helper checks only Host). A browser's Origin must be ours
 * (BASE_URL, APP_URL, MCP_ALLOWED_ORIGINS); a server on a loopback address also accepts any loopback origin
 * and refuses a Host that is not loopback, since a rebinding page reaches it under a foreign name.
 */
export function originGuard(
  config: Config,
): (host: string | undefined, origin: string | undefined) => string | undefined {
  const allowed = new Set([...servedOrigins(config), ...config.mcp.allowedOrigins]);
  const local = LOOPBACK_HOSTS.has(new URL(config.baseUrl).hostname);
  return (host, origin) => {
    if (local && host !== undefined && !LOOPBACK_HOSTS.has(hostnameOf(host))) return `Host ${host} is not allowed`;
    if (origin === undefined || allowed.has(origin)) return undefined;
    if (local && LOOPBACK_HOSTS.has(hostnameOf(origin))) return undefined;
    return `Origin ${origin} is not allowed`;
  };
}

/**
 * `POST /mcp`: JSON-RPC over the SDK's Streamable HTTP transport, stateless (a fresh server per request).
 * Checks here, before the SDK sees the request: Origin, Accept/`X-Response-Format`, batches, the scope and
 * credit rules of `tools/call`, and `X-LLM-Model`.
 */
export async function mcpRoutes(app: App, config: Config, sources: McpSources): Promise<void> {
  const checkOrigin = originGuard(config);
  const readWrite = 'universal-mcp-read-write' as const;

  app.post(
    '/mcp',
    {
      schema: {
        tags: ['MCP'],
        summary: 'MCP endpoint (JSON-RPC 2.0 over Streamable HTTP): initialize, tools/list, tools/call',
        description:
          'Tools: `use-agent` and `list-connections`. `initialize` and `tools/list` need `universal-mcp-read`; ' +
          '`tools/call` needs `universal-mcp-read-write`. Every request needs a positive credit balance (402). ' +
          '`tools/call` answers carry `X-Credits-Consumed` and `X-Credits-Remaining` (SSE: the balance at ' +
          'admission in the headers, the final figures as an SSE comment and HTTP trailers, as chat completions). ' +
          'JSON or SSE answer by `Accept` (both `application/json` and `text/event-stream` required) or ' +
          '`X-Response-Format: json|sse`.',
      },
      config: {
        auth: 'bearer',
        scopes: ['universal-mcp-read', readWrite],
        creditGuard: true,
        rateLimit: { max: config.rateLimits.mcp, timeWindow: config.rateLimits.windowMs },
      },
      onSend: async (_req, reply, payload) => {
        // Both scopes: MCP clients authorize with the challenge's scope, and a token of `universal-mcp-read`
        // alone could list the tools but call none (a refresh cannot widen it, so the SDK's step-up fails).
        if (reply.statusCode === 401)
          reply.header('WWW-Authenticate', mcpChallenge(config.baseUrl, `, scope="${MCP_SCOPES}"`));
        return payload;
      },
    },
    async (req, reply) => {
      const refused = checkOrigin(req.headers.host, req.headers.origin);
      if (refused) throw new ForbiddenError(refused);
      const accept = negotiate(req);
      const body = req.body as unknown;
      if (Array.isArray(body)) {
        return reply
          .code(400)
          .send({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Batch requests are not supported' } });
      }
      const ctx = req.ctx;
      const method = (body as { method?: unknown } | null)?.method;
      const params = (body as { params?: { name?: unknown; task?: unknown } } | null)?.params;
      // Tasks come only from tools/call, and tasks/result hands over what the call answered: the same scope.
      if (method === 'tools/call' || (typeof method === 'string' && method.startsWith('tasks/'))) {
        if (!ctx.scopes.has(readWrite)) {
          reply.header(
            'WWW-Authenticate',
            mcpChallenge(config.baseUrl, `, error="insufficient_scope", scope="${readWrite}"`),
          );
          throw new ForbiddenError(`Missing required scope: ${readWrite}`);
        }
      }
      const modelHeader = req.headers['x-llm-model'];
      const model = typeof modelHeader === 'string' && modelHeader ? resolveModel(ctx, modelHeader).id : undefined;

      const sdk = await loadMcpSdk();
      // The SDK answers these faults with `"id": null`; a client matches an answer to its request by id.
      const id = requestId(body);
      if (!sdk.JSONRPCMessageSchema.safeParse(body).success)
        return reply.code(400).send(rpcError(id, -32600, 'Invalid Request: not a JSON-RPC 2.0 message'));
      const version = req.headers['mcp-protocol-version'];
      if (typeof version === 'string' && method !== 'initialize' && !sdk.SUPPORTED_PROTOCOL_VERSIONS.includes(version))
        return reply
          .code(400)
          .send(
            rpcError(
              id,
              -32000,
              `Bad Request: Unsupported protocol version: ${version} (supported versions: ${sdk.SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
            ),
          );

      const taskRefused = method === 'tools/call' && params?.task !== undefined && taskCallRefusal(params.name);
      if (taskRefused) return reply.send(rpcError(id, -32601, taskRefused));

      const signal = abortSignalOf(clientGone(reply));
      // The balance before the call, as the account shows it (a stream's opening headers, a call that bills nothing).
      const meter =
        method === 'tools/call'
          ? creditMeter((await balanceAfter(ctx.deps, ctx.accountId)) ?? ctx.actor.creditBalance)
          : undefined;
      const server = createMcpServer(sdk, {
        ctx,
        sources,
        version: config.version,
        model,
        signal,
        onCharge: meter?.charge,
        plainToolCall: method === 'tools/call' && params?.task === undefined,
      });
      const transport = new sdk.WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: accept === 'json',
      });
      reply.hijack();
      const raw = reply.raw;
      for (const [name, value] of Object.entries(reply.getHeaders()))
        if (value !== undefined) raw.setHeader(name, value);
      raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        const answer = await transport.handleRequest(webRequest(req, config.baseUrl), { parsedBody: body });
        await relay(raw, answer, meter);
      } catch (err) {
        req.log.error({ err }, 'MCP request failed');
        if (raw.headersSent) raw.destroy();
        else
          raw
            .writeHead(500, { 'content-type': 'application/json' })
            .end(JSON.stringify(rpcError(id, -32603, 'Internal error')));
      }
    },
  );

  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method,
      url: '/mcp',
      schema: { hide: true },
      config: { auth: 'public' },
      handler: async () => {
        throw new MethodNotAllowedError(`${method} /mcp is not supported: this server keeps no sessions; use POST`);
      },
    });
  }
}

type JsonRpcId = string | number | null;

function requestId(body: unknown): JsonRpcId {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function rpcError(id: JsonRpcId, code: number, message: string) {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

/** The request as the SDK's web-standard transport reads it: its headers (the body is handed over parsed). */
function webRequest(req: FastifyRequest, baseUrl: string): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name === 'content-length' || name === 'transfer-encoding' || value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  // The SDK insists on both types in Accept; our own negotiation has already decided the format.
  headers.set('accept', 'application/json, text/event-stream');
  return new Request(`${baseUrl}${req.url}`, { method: 'POST', headers });
}

type CreditMeter = ReturnType<typeof creditMeter>;

/** The credits a `tools/call` consumes, told by each model call its tools make. */
function creditMeter(balance: number) {
  let remaining: number | undefined;
  let consumed = 0;
  return {
    /** The balance at admission, as the account shows it. */
    admitted: balance,
    figures: (): CreditFigures => ({ consumed, remaining: remaining ?? balance }),
    charge(credits: CreditFigures) {
      // Each bill tells the balance after it, every charge answered until then counted (credits' creditBalance).
      remaining = credits.remaining;
      consumed += credits.consumed;
    },
  };
}

/**
 * Writes the SDK's answer. A stream (SSE) goes out as it comes, framed by Node (chunked); with a meter
 * (`tools/call`), its headers carry the balance at admission and its end the final figures (an SSE comment, and
 * trailers where the framing has them: streamCreditHeaders), however soon the stream ended. Anything else (JSON
 * answers, the SDK's errors, 202) is complete: it goes out whole with its length, and the final figures in its
 * headers.
 */
async function relay(raw: ServerResponse, answer: Response, meter: CreditMeter | undefined): Promise<void> {
  const head: Record<string, string> = {};
  answer.headers.forEach((value, name) => {
    head[name] = value;
  });
  if (!answer.body || !head['content-type']?.startsWith('text/event-stream')) {
    const body = Buffer.from(await answer.arrayBuffer());
    if (meter) Object.assign(head, creditHeaders(meter.figures()));
    raw.writeHead(answer.status, { ...head, 'content-length': String(body.length) }).end(body);
    return;
  }
  if (meter) Object.assign(head, streamCreditHeaders(raw, meter.admitted));
  raw.writeHead(answer.status, head);
  const reader = answer.body.getReader();
  const stop = () => void reader.cancel().catch(() => undefined);
  raw.on('close', stop);
  try {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      if (raw.destroyed) return;
      if (!raw.write(chunk.value)) await drained(raw);
    }
  } finally {
    raw.off('close', stop);
  }
  if (raw.destroyed) return;
  if (meter) writeStreamCredits(raw, meter.figures());
  raw.end();
}

/** Resolves when `raw` can take more, or is gone. */
function drained(raw: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.on('drain', done);
    raw.on('close', done);
  });
}

/** SPEC §4: `X-Response-Format` wins; otherwise the client must accept both JSON and SSE (SSE is sent). */
function negotiate(req: FastifyRequest): 'json' | 'sse' {
  const format = req.headers['x-response-format'];
  if (format === 'json' || format === 'sse') return format;
  const accept = req.headers.accept ?? '';
  if (accept.includes('application/json') && accept.includes('text/event-stream')) return 'sse';
  throw new NotAcceptableError('Not Acceptable: the client must accept both application/json and text/event-stream');
}
