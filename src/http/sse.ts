import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { AppError } from '../lib/errors.ts';
import { sseData } from '../lib/sse.ts';

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
 * The event that tells the client of an OpenAI-compatible stream why it stops after it began: the §7 error in
 * OpenAI's error object. The caller writes `data: [DONE]` after it.
 */
export function sseFault(fault: AppError): string {
  return sseData({ error: { message: fault.message, type: fault.name, code: fault.statusCode } });
}
