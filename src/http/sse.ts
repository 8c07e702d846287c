import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

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
