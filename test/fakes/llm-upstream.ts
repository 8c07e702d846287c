import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake OpenAI-compatible upstream on loopback. Tests script its answers (text, tool calls, faults, slow
 * streams) and read the requests it received. Unscripted requests answer "ok".
 */
export interface FakeReply {
  content?: string;
  /** `arguments` is sent as its JSON; a string is sent as it is (malformed or pathological JSON). */
  toolCalls?: Array<{ name: string; arguments: Record<string, unknown> | string }>;
  /** Reported usage; default: 7 prompt tokens per message, one completion token per word or call. */
  usage?: { prompt: number; completion: number };
  /**
   * Bill as much as the request allows: one prompt token per byte received (every field counted) and the full
   * output allowance for each of its `n` choices, as an upstream with the costliest tokenizer would.
   */
  billReceived?: boolean;
  /** Leave usage out of the answer (or the stream), as some servers do. */
  noUsage?: boolean;
  /** An HTTP fault instead of an answer. */
  status?: number;
  headers?: Record<string, string>;
  errorMessage?: string;
  /** Wait before answering. */
  delayMs?: number;
  /** Answer once this settles (a test holds requests in flight while it changes the world around them). */
  until?: Promise<unknown>;
  /** Wait between stream chunks. */
  chunkDelayMs?: number;
  /** Cut the connection after sending this many stream chunks (a stream that breaks off). */
  breakAfter?: number;
}

/** A request as the fake received it (the OpenAI body, parsed, plus the headers). */
export interface FakeRequest {
  headers: IncomingMessage['headers'];
  messages: Array<{ role: string; content: string; tool_call_id?: string }>;
  tools?: Array<{ function: { name: string } }>;
  [field: string]: unknown;
}

export interface FakeLlm {
  url: string;
  /** Requests received, parsed, in order. */
  requests: FakeRequest[];
  enqueue(...replies: FakeReply[]): void;
  /** Drops scripted replies nobody asked for. */
  reset(): void;
  /** Streams the fake has seen cut by the client. */
  aborted: number;
  /** Chat requests being answered now, and the most there ever were at once. */
  inFlight: number;
  maxInFlight: number;
  close(): Promise<void>;
}

const words = (s: string) => s.split(/\s+/).filter(Boolean);

export async function startFakeLlm(): Promise<FakeLlm> {
  const queue: FakeReply[] = [];
  const fake: FakeLlm = {
    url: '',
    requests: [],
    aborted: 0,
    inFlight: 0,
    maxInFlight: 0,
    enqueue: (...r) => queue.push(...r),
    reset: () => {
      queue.length = 0;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };

  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.method === 'GET' && req.url?.endsWith('/models')) {
      return json(res, 200, {
        object: 'list',
        data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }],
      });
    }
    if (req.method === 'POST' && req.url?.endsWith('/embeddings')) {
      // One 3-dimensional vector per input; one prompt token per word (per number of a token array).
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model: string; input: unknown };
      fake.requests.push({ messages: [], ...body, headers: req.headers } as FakeRequest);
      const reply = queue.shift();
      if (reply?.status) return json(res, reply.status, { error: { message: reply.errorMessage ?? 'fake fault' } });
      const inputs = Array.isArray(body.input) && typeof body.input[0] !== 'number' ? body.input : [body.input];
      const tokens = inputs.reduce<number>(
        (n, i) => n + (typeof i === 'string' ? words(i).length : (i as []).length),
        0,
      );
      return json(res, 200, {
        object: 'list',
        data: inputs.map((_, index) => ({ object: 'embedding', index, embedding: [index, 0.5, -0.25] })),
        model: body.model,
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      });
    }
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions'))
      return json(res, 404, { error: { message: 'not found' } });
    const raw = Buffer.concat(chunks);
    const body = JSON.parse(raw.toString('utf8') || '{}') as Record<string, unknown>;
    fake.requests.push({ messages: [], ...body, headers: req.headers } as FakeRequest);
    fake.inFlight++;
    fake.maxInFlight = Math.max(fake.maxInFlight, fake.inFlight);
    res.on('close', () => {
      fake.inFlight--;
    });
    const reply = queue.shift() ?? { content: 'ok' };
    if (reply.delayMs) await sleep(reply.delayMs);
    if (reply.until) await reply.until.catch(() => {});
    if (reply.status) {
      return json(
        res,
        reply.status,
        { error: { message: reply.errorMessage ?? `fake fault ${reply.status}` } },
        reply.headers,
      );
    }
    const messages = (body.messages as unknown[]) ?? [];
    const toolCalls = (reply.toolCalls ?? []).map((c, i) => ({
      id: `call_${i}_${Math.random().toString(36).slice(2, 8)}`,
      type: 'function' as const,
      function: {
        name: c.name,
        arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
      },
    }));
    const content = reply.content ?? (toolCalls.length ? null : 'ok');
    const allowance = Number(body.max_completion_tokens ?? body.max_tokens ?? 0) * Number(body.n ?? 1);
    const usage = {
      prompt_tokens: reply.billReceived ? raw.length : (reply.usage?.prompt ?? 7 * messages.length),
      completion_tokens: reply.billReceived
        ? allowance
        : (reply.usage?.completion ?? words(content ?? '').length + toolCalls.length),
      total_tokens: 0,
    };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const finish = toolCalls.length ? 'tool_calls' : 'stop';
    const base = {
      id: `chatcmpl-fake${Date.now()}`,
      created: Math.floor(Date.now() / 1000),
      model: String(body.model),
    };

    if (!body.stream) {
      return json(res, 200, {
        ...base,
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
            finish_reason: finish,
          },
        ],
        ...(reply.noUsage ? {} : { usage }),
      });
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let closed = false;
    res.on('close', () => {
      if (!res.writableFinished) {
        closed = true;
        fake.aborted++;
      }
    });
    let sent = 0;
    const send = async (chunk: unknown) => {
      if (closed) return;
      if (sent++ === reply.breakAfter) {
        closed = true;
        res.socket?.destroy();
        return;
      }
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
    };
    const opts = body.stream_options as { include_usage?: boolean } | undefined;
    // As OpenAI does: with usage asked for, every chunk before the usage chunk carries `"usage": null`.
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
      ...base,
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta, finish_reason: finishReason }],
      ...(opts?.include_usage ? { usage: null } : {}),
    });
    await send(chunk({ role: 'assistant', content: '' }));
    for (const [i, w] of words(content ?? '').entries()) await send(chunk({ content: i === 0 ? w : ` ${w}` }));
    for (const [i, call] of toolCalls.entries()) {
      await send(
        chunk({
          tool_calls: [
            { index: i, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
          ],
        }),
      );
      await send(chunk({ tool_calls: [{ index: i, function: { arguments: call.function.arguments } }] }));
    }
    await send(chunk({}, finish));
    if (opts?.include_usage && !reply.noUsage)
      await send({ ...base, object: 'chat.completion.chunk', choices: [], usage });
    if (!closed) res.end('data: [DONE]\n\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
