import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake Anthropic Messages API on loopback (`POST /v1/messages`, JSON or SSE). Tests script its answers
 * (text, tool use, both streamed, HTTP faults, `error` events mid-stream) and read the requests it got. It
 * checks what adapters tend to get wrong and the real API refuses (auth headers, max_tokens, empty text blocks,
 * temperature above 1 or with top_p) plus strictly alternating roles, which the adapter promises; it answers
 * 400 `invalid_request_error` as Anthropic does. Unscripted
 * requests answer "ok".
 */
export interface FakeAnthropicReply {
  text?: string;
  toolUses?: Array<{ name: string; input: Record<string, unknown>; id?: string }>;
  /** A thinking block before the answer (it shifts the content block indices). */
  thinking?: string;
  /** Default: `tool_use` when there are tool uses, else `end_turn`. */
  stopReason?: string;
  /** Default: 10 input tokens per message; one output token per word and five per tool use. */
  usage?: { input: number; output: number; cacheRead?: number; cacheCreation?: number };
  /** An HTTP fault instead of an answer, with Anthropic's error body. */
  status?: number;
  errorType?: string;
  errorMessage?: string;
  headers?: Record<string, string>;
  /** Streams only: an `error` event after this many content events (0: before any content). */
  streamError?: { type: string; message?: string; afterDeltas?: number };
  /** Streams only: stop sending (and close) before `message_stop`. */
  truncate?: boolean;
  delayMs?: number;
  chunkDelayMs?: number;
}

export interface FakeAnthropicBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  source?: Record<string, unknown>;
  thinking?: string;
  signature?: string;
}

/** A request as Anthropic would receive it. */
export interface FakeAnthropicRequest {
  headers: IncomingHttpHeaders;
  body: {
    model: string;
    max_tokens: number;
    messages: Array<{ role: string; content: string | FakeAnthropicBlock[] }>;
    system?: string | Array<{ type: 'text'; text: string }>;
    tools?: Array<{ name: string; description?: string; input_schema: Record<string, unknown> }>;
    tool_choice?: Record<string, unknown>;
    stop_sequences?: string[];
    temperature?: number;
    top_p?: number;
    stream?: boolean;
    metadata?: Record<string, unknown>;
    [field: string]: unknown;
  };
}

export interface FakeAnthropic {
  /** The base URL, as ANTHROPIC_BASE_URL takes it (no /v1). */
  url: string;
  requests: FakeAnthropicRequest[];
  enqueue(...replies: FakeAnthropicReply[]): void;
  reset(): void;
  close(): Promise<void>;
}

export const FAKE_ANTHROPIC_KEY = 'sk-ant-fake';

export async function startFakeAnthropic(): Promise<FakeAnthropic> {
  const queue: FakeAnthropicReply[] = [];
  let counter = 0;
  const fake: FakeAnthropic = {
    url: '',
    requests: [],
    enqueue: (...r) => queue.push(...r),
    reset: () => {
      queue.length = 0;
      fake.requests.length = 0;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const server: Server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/messages') {
      return fail(res, 404, 'not_found_error', `No route ${req.method} ${req.url}`);
    }
    if (req.headers['x-api-key'] !== FAKE_ANTHROPIC_KEY) {
      return fail(res, 401, 'authentication_error', 'invalid x-api-key');
    }
    if (req.headers['anthropic-version'] !== '2023-06-01') {
      return fail(res, 400, 'invalid_request_error', 'anthropic-version header is required');
    }
    let body: FakeAnthropicRequest['body'];
    try {
      body = JSON.parse(Buffer.concat(parts).toString('utf8')) as FakeAnthropicRequest['body'];
    } catch {
      return fail(res, 400, 'invalid_request_error', 'body is not JSON');
    }
    fake.requests.push({ headers: req.headers, body });
    const invalid = validate(body);
    if (invalid) return fail(res, 400, 'invalid_request_error', invalid);

    const reply = queue.shift() ?? { text: 'ok' };
    if (reply.delayMs) await sleep(reply.delayMs);
    if (reply.status) {
      return fail(
        res,
        reply.status,
        reply.errorType ?? 'api_error',
        reply.errorMessage ?? `fake fault ${reply.status}`,
        reply.headers,
      );
    }

    const id = `msg_fake${++counter}`;
    const toolUses = (reply.toolUses ?? []).map((t, i) => ({ ...t, id: t.id ?? `toolu_fake${counter}_${i}` }));
    const text = reply.text ?? (toolUses.length ? undefined : 'ok');
    const stopReason = reply.stopReason ?? (toolUses.length ? 'tool_use' : 'end_turn');
    const usage = {
      input_tokens: reply.usage?.input ?? 10 * body.messages.length,
      output_tokens: reply.usage?.output ?? words(text ?? '').length + 5 * toolUses.length,
      cache_creation_input_tokens: reply.usage?.cacheCreation ?? 0,
      cache_read_input_tokens: reply.usage?.cacheRead ?? 0,
    };
    const content: FakeAnthropicBlock[] = [
      ...(reply.thinking ? [{ type: 'thinking', thinking: reply.thinking, signature: 'sig' }] : []),
      ...(text !== undefined ? [{ type: 'text', text }] : []),
      ...toolUses.map((t) => ({ type: 'tool_use', id: t.id, name: t.name, input: t.input })),
    ];

    if (!body.stream) {
      return json(res, 200, {
        id,
        type: 'message',
        role: 'assistant',
        model: body.model,
        content,
        stop_reason: stopReason,
        stop_sequence: stopReason === 'stop_sequence' ? (body.stop_sequences?.[0] ?? null) : null,
        usage,
      });
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let deltas = 0;
    const send = async (type: string, data: Record<string, unknown>) => {
      if (res.destroyed) return;
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
    };
    const breakOff = async () => {
      if (!reply.streamError) return;
      await send('error', { error: { type: reply.streamError.type, message: reply.streamError.message ?? 'boom' } });
      throw new StopStream();
    };
    const delta = async (index: number, d: Record<string, unknown>) => {
      if (deltas === (reply.streamError?.afterDeltas ?? 0)) await breakOff();
      deltas++;
      await send('content_block_delta', { index, delta: d });
    };
    try {
      await send('message_start', {
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...usage, output_tokens: 1 },
        },
      });
      await send('ping', {});
      for (const [index, block] of content.entries()) {
        if (block.type === 'thinking') {
          await send('content_block_start', { index, content_block: { type: 'thinking', thinking: '' } });
          await delta(index, { type: 'thinking_delta', thinking: reply.thinking });
          await delta(index, { type: 'signature_delta', signature: 'sig' });
        } else if (block.type === 'text') {
          await send('content_block_start', { index, content_block: { type: 'text', text: '' } });
          for (const [i, w] of words(block.text ?? '').entries()) {
            await delta(index, { type: 'text_delta', text: i === 0 ? w : ` ${w}` });
          }
        } else {
          await send('content_block_start', {
            index,
            content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
          });
          // Anthropic streams the input as JSON fragments cut anywhere, even inside strings.
          for (const piece of fragments(JSON.stringify(block.input))) {
            await delta(index, { type: 'input_json_delta', partial_json: piece });
          }
        }
        await send('content_block_stop', { index });
      }
      await breakOff();
      if (reply.truncate) {
        res.destroy();
        return;
      }
      await send('message_delta', {
        delta: { stop_reason: stopReason, stop_sequence: null },
        usage: { output_tokens: usage.output_tokens },
      });
      await send('message_stop', {});
      res.end();
    } catch (err) {
      if (!(err instanceof StopStream)) throw err;
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

class StopStream extends Error {}

/** The checks of the real API that a translation can trip. */
function validate(body: FakeAnthropicRequest['body']): string | undefined {
  if (typeof body.model !== 'string' || !body.model) return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  for (const [i, m] of body.messages.entries()) {
    if (m.role !== 'user' && m.role !== 'assistant') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    if (i > 0 && body.messages[i - 1]?.role === m.role)
      return 'messages: roles must alternate between "user" and "assistant"';
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    if (!Array.isArray(blocks) || blocks.length === 0) return `messages.${i}: content must not be empty`;
    for (const b of blocks) {
      if (b.type === 'text' && !b.text) return `messages.${i}: text content blocks must be non-empty`;
      if (b.type === 'tool_use' && (typeof b.input !== 'object' || b.input === null)) {
        return `messages.${i}: tool_use.input must be an object`;
      }
    }
  }
  if (body.temperature !== undefined && body.top_p !== undefined) {
    return '`temperature` and `top_p` cannot both be specified for this model. Please use only one.';
  }
  if (body.temperature !== undefined && (body.temperature < 0 || body.temperature > 1)) {
    return 'temperature: Input should be less than or equal to 1';
  }
  return undefined;
}

function fragments(s: string): string[] {
  const size = Math.max(1, Math.ceil(s.length / 3));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

const words = (s: string) => s.split(/\s+/).filter(Boolean);

function fail(
  res: ServerResponse,
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
) {
  json(res, status, { type: 'error', error: { type, message } }, headers);
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
