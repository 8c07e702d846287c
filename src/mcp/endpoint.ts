import type { ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { type CreditFigures, creditHeaders, streamCreditHeaders, writeStreamCredits } from '../http/credits.ts';
import type { App } from '../http/types.ts';
import { abortSignalOf } from '../lib/cancel.ts';
import { AppError, ForbiddenError, NotAcceptableError } from '../lib/errors.ts';
import { balanceAfter } from '../modules/credits/service.ts';
import { clientGone } from '../modules/llm/routes.ts';
import { resolveModel } from '../modules/llm/service.ts';
import { loadMcpSdk } from './sdk.ts';
import { createMcpServer, type McpSources } from './server.ts';

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

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/**
 * DNS-rebinding and cross-site defence (the SDK's helper checks only Host). A browser's Origin must be ours
 * (BASE_URL, APP_URL, MCP_ALLOWED_ORIGINS); a server on a loopback address also accepts any loopback origin
 * and refuses a Host that is not loopback, since a rebinding page reaches it under a foreign name.
 */
export function originGuard(
  config: Config,
): (host: string | undefined, origin: string | undefined) => string | undefined {
  const allowed = new Set([
    new URL(config.baseUrl).origin,
    new URL(config.appUrl).origin,
    ...config.mcp.allowedOrigins,
  ]);
  const local = LOOPBACK.has(new URL(config.baseUrl).hostname);
  const hostnameOf = (value: string) => {
    try {
      return new URL(value.includes('://') ? value : `http://${value}`).hostname;
    } catch {
      return '';
    }
  };
  return (host, origin) => {
    if (local && host !== undefined && !LOOPBACK.has(hostnameOf(host))) return `Host ${host} is not allowed`;
    if (origin === undefined || allowed.has(origin)) return undefined;
    if (local && LOOPBACK.has(hostnameOf(origin))) return undefined;
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
      if (method === 'tools/call') {
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

      const signal = abortSignalOf(clientGone(reply));
      const sdk = await loadMcpSdk();
      // The balance before the call, as the account shows it (a stream's opening headers, a call that bills nothing).
      const meter =
        method === 'tools/call'
          ? meterCredits(reply.raw, accept, (await balanceAfter(ctx.deps, ctx.accountId)) ?? ctx.actor.creditBalance)
          : undefined;
      const server = createMcpServer(sdk, {
        ctx,
        sources,
        version: config.version,
        model,
        signal,
        onCharge: meter?.charge,
      });
      const transport = new sdk.StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: accept === 'json',
      });
      reply.hijack();
      for (const [name, value] of Object.entries(reply.getHeaders()))
        if (value !== undefined) reply.raw.setHeader(name, value);
      meter?.start();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      // The SDK insists on both types in Accept; our own negotiation has already decided the format.
      req.raw.headers.accept = 'application/json, text/event-stream';
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, body);
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

/**
 * `X-Credits-*` on a `tools/call` answer, whose response the SDK writes. JSON: the headers, set as each model call
 * is billed (the SDK writes them with the answer). SSE: the headers go out at once with the balance at admission,
 * and the final figures follow just before the stream ends, as chat-completion streams send them.
 */
function meterCredits(raw: ServerResponse, format: 'json' | 'sse', balance: number) {
  let remaining: number | undefined;
  let consumed = 0;
  const figures = (): CreditFigures => ({ consumed, remaining: remaining ?? balance });
  const setHeaders = (headers: Record<string, string>) => {
    if (!raw.headersSent) for (const [name, value] of Object.entries(headers)) raw.setHeader(name, value);
  };
  return {
    start() {
      if (format === 'json') return setHeaders(creditHeaders(figures()));
      setHeaders(streamCreditHeaders(balance));
      const end = raw.end.bind(raw) as (...args: unknown[]) => ServerResponse;
      raw.end = ((...args: unknown[]) => {
        const streaming = String(raw.getHeader('content-type') ?? '').startsWith('text/event-stream');
        if (streaming && raw.headersSent && !raw.destroyed && raw.statusCode === 200)
          writeStreamCredits(raw, figures());
        return end(...args);
      }) as ServerResponse['end'];
    },
    charge(credits: CreditFigures) {
      // Each bill tells the balance after it, every charge answered until then counted (credits' creditBalance).
      remaining = credits.remaining;
      consumed += credits.consumed;
      if (format === 'json') setHeaders(creditHeaders(figures()));
    },
  };
}

/** SPEC §4: `X-Response-Format` wins; otherwise the client must accept both JSON and SSE (SSE is sent). */
function negotiate(req: FastifyRequest): 'json' | 'sse' {
  const format = req.headers['x-response-format'];
  if (format === 'json' || format === 'sse') return format;
  const accept = req.headers.accept ?? '';
  if (accept.includes('application/json') && accept.includes('text/event-stream')) return 'sse';
  throw new NotAcceptableError('Not Acceptable: the client must accept both application/json and text/event-stream');
}
