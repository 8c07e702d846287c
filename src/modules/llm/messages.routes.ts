import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { Config } from '../../config.ts';
import { creditHeaders, streamCreditHeaders, streamCreditsTail } from '../../http/credits.ts';
import { pumpSse, startSse } from '../../http/sse.ts';
import type { App } from '../../http/types.ts';
import { sseEvent } from '../../lib/sse.ts';
import {
  anthropicErrorType,
  type MessagesRequest,
  messagesStreamTranslator,
  type OutEvent,
} from '../../llm-upstreams/anthropic-messages.ts';
import * as embeddings from './embeddings.service.ts';
import * as messages from './messages.service.ts';
import { clientGone } from './routes.ts';
import { EmbeddingsRequest, MessagesRequest as MessagesBody, MessageTokenCount } from './schema.ts';

/**
 * Anthropic's Messages API (`/api/v1/messages`: the Anthropic SDK's base URL is `<server>/api`) and OpenAI's
 * embeddings, beside the chat completions: the same tokens (Anthropic clients may send theirs as `x-api-key`),
 * scope, credit guard, rate limit and X-Credits-* headers.
 */
export async function messagesRoutes(app: App, config: Config): Promise<void> {
  const tags = ['LLM'];
  const rateLimit = { max: config.rateLimits.llm, timeWindow: config.rateLimits.windowMs };
  app.post(
    '/messages',
    {
      schema: {
        tags,
        summary: 'Anthropic Messages API (JSON or SSE stream), served by any upstream',
        description:
          'For the Anthropic SDK and Claude Code: base URL `<server>/api`, the token as `x-api-key` or Bearer. ' +
          'Billed like `/chat/completions` (X-Credits-* headers; streams end with the figures as an SSE comment and ' +
          'trailers). Errors in Anthropic\'s shape: `{"type": "error", "error": {"type", "message"}}`.',
        body: MessagesBody,
        response: { 200: z.unknown() },
      },
      config: { scopes: ['llm-all'], creditGuard: true, apiKeyHeader: true, rateLimit },
    },
    (req, reply) => {
      const request = req.body as MessagesRequest;
      const signal = clientGone(reply);
      const billing = { type: 'llm' as const };
      if (!request.stream) {
        return messages
          .createMessage(req.ctx, request, { signal, billing })
          .then(({ message, credits }) => reply.headers(creditHeaders(credits)).send(message));
      }
      return messages.streamMessage(req.ctx, request, { signal, billing }).then((s) => writeEvents(reply, s));
    },
  );

  app.post(
    '/messages/count_tokens',
    {
      schema: {
        tags,
        summary: "Anthropic's token count for a Messages request (the gateway's estimate; free)",
        body: MessagesBody.omit({ max_tokens: true }).extend({ max_tokens: z.number().int().positive().optional() }),
        response: { 200: MessageTokenCount },
      },
      config: { scopes: ['llm-all'], apiKeyHeader: true, rateLimit },
    },
    async (req) => ({
      input_tokens: await messages.countMessageTokens(req.ctx, req.body as MessagesRequest),
    }),
  );

  app.post(
    '/embeddings',
    {
      schema: {
        tags,
        summary: 'OpenAI-compatible embeddings, passed through to an upstream that serves them',
        description:
          "Billed per input token at the model's prompt rate (X-Credits-* headers). 404 `model_not_found` when no " +
          'configured upstream serves embeddings with the model.',
        body: EmbeddingsRequest,
        response: { 200: z.unknown() },
      },
      config: { scopes: ['llm-all'], creditGuard: true, rateLimit },
    },
    (req, reply) =>
      embeddings
        .createEmbeddings(req.ctx, req.body as embeddings.EmbeddingsRequest, {
          signal: clientGone(reply),
          billing: { type: 'llm' },
        })
        .then(({ embeddings: list, credits }) => reply.headers(creditHeaders(credits)).send(list)),
  );
}

/** Writes a completion stream as Anthropic's events; the bill is always settled, and its figures end the stream. */
function writeEvents(reply: FastifyReply, stream: messages.MessageStream): Promise<void> {
  const raw = startSse(reply, streamCreditHeaders(reply.raw, stream.balanceBefore));
  const translate = messagesStreamTranslator(stream.model);
  const write = (events: OutEvent[]) => {
    if (!raw.destroyed && events.length) raw.write(events.map((e) => sseEvent(e.type, e)).join(''));
  };
  return pumpSse(
    reply,
    raw,
    stream,
    (chunk) => write(translate.chunk(chunk)),
    ({ fault, credits }) => {
      const tail = fault
        ? sseEvent('error', {
            type: 'error',
            error: { type: anthropicErrorType(fault.statusCode), message: fault.message },
          })
        : translate
            .end(stream.billed())
            .map((e) => sseEvent(e.type, e))
            .join('');
      raw.end(tail + (credits ? streamCreditsTail(raw, credits) : ''));
    },
  );
}
