import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { AppError } from '../lib/errors.ts';
import { sseData } from '../lib/sse.ts';
import { type CreditFigures, streamCreditsTail } from './credits.ts';

/**
 * Takes the response over for a Server-Sent Events stream: the headers fastify has set so far (request id,
 * rate limits) plus the stream's own and `extra`, written at once. Answers the raw response to write events to.
 */
export function startSse(reply: FastifyReply, extra: Record<string, string> = {}): ServerResponse {
  reply.hijack();
  // getHeaders answers a new object: the stream's headers are added to it rather than to a third copy.
  const headers = Object.assign(reply.getHeaders() as Record<string, string>, STREAM_HEADERS, extra);
  reply.raw.writeHead(200, headers);
  return reply.raw;
}

const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/**
 * Ends an OpenAI-compatible stream (the gateway's, an agent chat's) in one write: `before` (what is still to go),
 * the event that tells why it stopped after it began (`fault`: the §7 error in OpenAI's error object), the final
 * credit figures (an SSE comment, and the trailers), then `data: [DONE]`.
 */
export function endChatStream(
  raw: ServerResponse,
  end: { before?: string; fault?: AppError | undefined; credits?: CreditFigures | undefined },
): void {
  let tail = end.before ?? '';
  if (end.fault) {
    const { message, name: type, statusCode: code } = end.fault;
    tail += sseData({ error: { message, type, code } });
  }
  if (end.credits) tail += streamCreditsTail(raw, end.credits);
  raw.end(`${tail}data: [DONE]\n\n`);
}
