import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { Config } from '../../config.ts';
import { creditHeaders, streamCreditHeaders } from '../../http/credits.ts';
import { endChatStream, pumpSse, startSse } from '../../http/sse.ts';
import type { App } from '../../http/types.ts';
import { Cancel } from '../../lib/cancel.ts';
import { sseData } from '../../lib/sse.ts';
import type { ChatRequest } from '../../llm-upstreams/types.ts';
import { messagesRoutes } from './messages.routes.ts';
import { ChatCompletionRequest, ModelList } from './schema.ts';
import * as service from './service.ts';

/**
 * A cancellation that fires when the client goes away before the answer is complete (a Cancel, not an
 * AbortSignal: the gateway makes one per request; `abortSignalOf` makes an AbortSignal of it where one is needed).
 */
export function clientGone(reply: FastifyReply): Cancel {
  const gone = new Cancel();
  // `on`, not `once`: a response closes once, and `once` wraps the listener in a bound function.
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) gone.abort();
  });
  return gone;
}

export async function llmRoutes(app: App, config: Config): Promise<void> {
  const tags = ['LLM'];
  app.post(
    '/chat/completions',
    {
      schema: {
        tags,
        summary: 'OpenAI-compatible chat completion (JSON or SSE stream)',
        description:
          'Billed in credits: `X-Credits-Consumed` and `X-Credits-Remaining` headers. Streams carry the balance at ' +
          'admission in those headers and the final figures as an SSE comment (`: x-credits-consumed=N; ' +
          'x-credits-remaining=M`) and as HTTP trailers, before `data: [DONE]`.',
        body: ChatCompletionRequest,
        response: { 200: z.unknown() },
      },
      config: {
        scopes: ['llm-all'],
        creditGuard: true,
        rateLimit: { max: config.rateLimits.llm, timeWindow: config.rateLimits.windowMs },
      },
    },
    // Not an async function: while the upstream answers (hundreds of requests at once, each for hundreds of ms)
    // a suspended async function holds its frame and its promise, a callback only what it uses.
    (req, reply) => {
      const request = req.body as ChatRequest;
      const signal = clientGone(reply);
      const billing = { type: 'llm' as const };
      if (!request.stream) {
        return service
          .createCompletion(req.ctx, request, { signal, billing })
          .then(({ completion, credits }) => reply.headers(creditHeaders(credits)).send(completion));
      }
      return service.streamCompletion(req.ctx, request, { signal, billing }).then((stream) => writeSse(reply, stream));
    },
  );

  await messagesRoutes(app, config);

  app.get(
    '/models',
    {
      schema: { tags, summary: 'The models this server offers (OpenAI list shape)', response: { 200: ModelList } },
      config: { scopes: ['llm-all'] },
    },
    (req) => ({
      object: 'list' as const,
      data: service.listModels(req.ctx).map((m) => ({
        id: m.id,
        object: 'model' as const,
        created: 0,
        owned_by: m.upstream,
        tier: m.tier,
        context_window: m.contextWindow,
        max_output_tokens: m.maxOutputTokens,
        capabilities: m.capabilities,
        pricing: { prompt: m.promptRate, completion: m.completionRate, unit: 'credits_per_million_tokens' as const },
      })),
    }),
  );
}

/** Writes a completion stream as SSE, honouring back-pressure, and always settles the bill. */
function writeSse(reply: FastifyReply, stream: service.CompletionStream): Promise<void> {
  const raw = startSse(reply, streamCreditHeaders(reply.raw, stream.balanceBefore));
  // Chunks that arrive together (an upstream often sends several in one packet) leave in one write: gathered
  // until the next tick, which delays the first byte by microseconds and saves, per chunk, a write and its
  // chunked-encoding frame.
  let pending = '';
  const flush = () => {
    if (pending && !raw.destroyed) raw.write(pending);
    pending = '';
  };
  return pumpSse(
    reply,
    raw,
    stream,
    (chunk) => {
      if (!pending) process.nextTick(flush);
      pending += sseData(chunk);
    },
    ({ fault, credits }) => {
      // What is still gathered leaves with the end (the flush already scheduled then finds nothing to write).
      const before = pending;
      pending = '';
      endChatStream(raw, { before, fault, credits });
    },
  );
}
