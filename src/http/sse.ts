import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { AppError } from '../lib/errors.ts';
import { sseData } from '../lib/sse.ts';
import { type CreditFigures, streamCreditsTail } from './credits.ts';
import { toAppError } from './error-handler.ts';

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

/**
 * Pumps a billed stream (the gateway's completions, Anthropic's messages) into an SSE response: `write` each chunk
 * until the client goes away, honouring back-pressure; an error thrown mid-stream becomes the `fault` (logged when
 * it is the server's); the bill is always settled; then, if the client is still there, `end` writes the tail.
 */
export async function pumpSse<T>(
  reply: FastifyReply,
  raw: ServerResponse,
  stream: { chunks: AsyncIterable<T>; finish(): Promise<CreditFigures> },
  write: (chunk: T) => void,
  end: (outcome: { fault: AppError | undefined; credits: CreditFigures | undefined }) => void,
): Promise<void> {
  let fault: AppError | undefined;
  try {
    for await (const chunk of stream.chunks) {
      if (raw.destroyed) break;
      write(chunk);
      if (raw.writableNeedDrain) await new Promise((resolve) => raw.once('drain', resolve).once('close', resolve));
    }
  } catch (err) {
    fault = toAppError(err);
    if (fault.statusCode >= 500) reply.log.warn({ err }, 'stream broke off');
  } finally {
    // The end (settling the bill, the final write, the request's log line) waits for the event loop's check
    // phase: answers that arrive together (a clump of upstream replies, read in one poll phase) then each get
    // their first bytes out before any of them does its end. Streams' first byte at 200 concurrent: 1.3 ms
    // sooner at p50 (docs/gateway-speed.md).
    await new Promise((resolve) => setImmediate(resolve));
    const credits = await stream.finish().catch((err: unknown) => {
      reply.log.error({ err }, 'settling a stream failed');
      return undefined;
    });
    if (!raw.destroyed) end({ fault, credits });
  }
}
