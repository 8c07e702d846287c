import { requireScope, type ServiceContext } from '../../context.ts';
import type { CancelSignal } from '../../lib/cancel.ts';
import {
  type AppError,
  BadGatewayError,
  BadRequestError,
  GatewayTimeoutError,
  ServiceUnavailableError,
  TooManyRequestsError,
  ValidationError,
} from '../../lib/errors.ts';
import type { CatalogModel } from '../../llm-upstreams/catalog.ts';
import { creditsFor } from '../../llm-upstreams/catalog.ts';
import { countTokens, promptText, requestTokenBound } from '../../llm-upstreams/tokens.ts';
import type {
  Billing,
  ChatChunk,
  ChatCompletion,
  ChatRequest,
  ChatToolCall,
  Credits,
  Upstream,
  Usage,
} from '../../llm-upstreams/types.ts';
import { UpstreamError } from '../../llm-upstreams/types.ts';
import { type CreditHold, holdCredits, settleCredits } from '../credits/index.ts';

export type { Billing, Credits } from '../../llm-upstreams/types.ts';

export const NO_UPSTREAM =
  'No LLM upstream is configured: set LLM_BASE_URL (and LLM_API_KEY) for an OpenAI-compatible server, OPENAI_API_KEY, or ANTHROPIC_API_KEY';

/** The catalog model for an id (or the default model); 422 listing the models when it is unknown. */
export function resolveModel(ctx: ServiceContext, id: string | undefined): CatalogModel {
  const { catalog } = ctx.deps.llm;
  if (!catalog.configured) throw new ServiceUnavailableError(NO_UPSTREAM);
  const model = id ? catalog.get(id) : catalog.defaultModel;
  if (model) return model;
  const problem = ctx.deps.llm.discoveryProblem();
  const known = catalog.available.map((m) => m.id).join(', ') || 'none';
  const why = problem ? ` (${problem})` : '';
  throw new ValidationError(`Unknown model "${id ?? ''}". Available models: ${known}${why}`, [
    { field: 'body.model', message: `must be one of: ${known}` },
  ]);
}

export function listModels(ctx: ServiceContext): CatalogModel[] {
  requireScope(ctx, 'llm-all');
  if (!ctx.deps.llm.catalog.configured) throw new ServiceUnavailableError(NO_UPSTREAM);
  ctx.deps.llm.discoveryProblem(); // a failed listing is tried again here as well
  return ctx.deps.llm.catalog.available;
}

function upstreamOf(ctx: ServiceContext, model: CatalogModel): Upstream {
  const upstream = ctx.deps.llm.upstreamFor(model);
  if (!upstream) throw new ServiceUnavailableError(NO_UPSTREAM);
  return upstream;
}

function checkCapabilities(model: CatalogModel, request: ChatRequest): void {
  if (request.tools?.length && !model.capabilities.tools) {
    throw new ValidationError(`Model ${model.id} does not support tools`, [
      { field: 'body.tools', message: `not supported by ${model.id}` },
    ]);
  }
}

/** The §7 answer for an upstream fault. */
export function upstreamFault(err: unknown): unknown {
  if (!(err instanceof UpstreamError)) return err;
  const faults: Record<UpstreamError['fault'], () => AppError> = {
    rate_limited: () => new TooManyRequestsError(err.retryAfterSeconds ?? 30, `${err.message}; retry later`),
    rejected: () => new BadRequestError(err.message),
    failed: () => new BadGatewayError(err.message),
    timeout: () => new GatewayTimeoutError(err.message),
  };
  return faults[err.fault]();
}

/**
 * The most a request can cost (see requestTokenBound), from the body the upstream will read: what every
 * credit-consuming LLM call holds on admission, the gateway's own and those the agent runtime makes for MCP and
 * agent chats.
 */
function worstCaseCredits(model: CatalogModel, request: ChatRequest, body: Buffer): number {
  const bound = requestTokenBound(request, body.length, model.maxOutputTokens);
  return creditsFor(model, bound.prompt, bound.completion);
}

/**
 * Admission: the model, its upstream, the body serialized once (a request the upstream cannot express is
 * refused here, before anything is held) and the hold sized from that body.
 */
async function admit(ctx: ServiceContext, request: ChatRequest, stream: boolean) {
  const model = resolveModel(ctx, request.model);
  checkCapabilities(model, request);
  const upstream = upstreamOf(ctx, model);
  let body: Buffer;
  try {
    body = upstream.prepare(model, request, stream);
  } catch (err) {
    throw upstreamFault(err);
  }
  const hold = await holdCredits(ctx, worstCaseCredits(model, request, body));
  return { model, upstream, hold, body };
}

/**
 * Replaces the hold by the real cost. The write happens after the answer (it adds no latency); shutdown
 * drains it, and if the process dies first the hold expires and is given back. `remaining` is the balance after
 * this charge and every one answered before it, as `creditBalance` shows it (settleCredits).
 */
export function settle(
  ctx: ServiceContext,
  hold: CreditHold,
  model: CatalogModel,
  usage: Pick<Usage, 'prompt_tokens' | 'completion_tokens'>,
  billing: Billing,
): Credits {
  const consumed = creditsFor(model, usage.prompt_tokens, usage.completion_tokens);
  const settled = settleCredits(ctx, hold, {
    type: billing.type,
    cost: consumed,
    description: billing.description ?? `Chat completion (${model.id})`,
    model: model.id,
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
  });
  ctx.deps.background.track('settle credits', settled.written);
  return { consumed, remaining: settled.remaining };
}

/**
 * One non-streamed completion, billed exactly once: the worst case is held on admission and replaced by the
 * real cost. A failed upstream call costs nothing; one the caller abandoned costs its prompt.
 */
export function createCompletion(
  ctx: ServiceContext,
  request: ChatRequest,
  opts: { signal: CancelSignal; billing: Billing },
): Promise<{ completion: ChatCompletion; credits: Credits }> {
  // Not async: that would wrap runCompletion's promise in one more, held for the whole call.
  try {
    requireScope(ctx, 'llm-all');
  } catch (err) {
    return Promise.reject(err);
  }
  return runCompletion(ctx, request, opts);
}

/**
 * The completion itself, for callers that authorized their caller already (the agent runtime runs under
 * MCP's or an agent's scopes, not `llm-all`). With `onDelta` the upstream is asked for a stream and each piece
 * of answer text is told as it arrives (a chat page shows the reply as it is written); the answer is the same
 * completion either way. A failed upstream call costs nothing; one the caller abandoned costs its prompt and,
 * when streamed, what was generated until then.
 */
export async function runCompletion(
  ctx: ServiceContext,
  request: ChatRequest,
  opts: { signal: CancelSignal; billing: Billing; onDelta?: ((text: string) => void | Promise<void>) | undefined },
): Promise<{ completion: ChatCompletion; credits: Credits }> {
  const { model, upstream, hold, body } = await admit(ctx, request, opts.onDelta !== undefined);
  const call = { model, body, signal: opts.signal };
  let completion: ChatCompletion;
  const sofar = { text: '' };
  try {
    completion = opts.onDelta
      ? await gatherStream(upstream.stream(call), opts.onDelta, sofar)
      : await upstream.complete(call);
  } catch (err) {
    const abandoned = opts.signal.aborted;
    const usage = abandoned ? await countedUsage(request, sofar.text) : { prompt_tokens: 0, completion_tokens: 0 };
    settle(ctx, hold, model, usage, opts.billing);
    throw upstreamFault(err);
  }
  const usage = completion.usage ?? (await countedUsage(request, completionText(completion)));
  const credits = settle(ctx, hold, model, usage, opts.billing);
  // Changed in place, not copied: the upstream's answer is this call's own.
  completion.model = model.id;
  completion.usage = withTotal(usage);
  return { completion, credits };
}

/**
 * A streamed answer gathered into the completion the upstream would have sent whole: the text, the tool calls
 * (their pieces joined by index), the finish reason and the usage of the last chunk. `sofar.text` holds what
 * was generated, so an abandoned stream is billed for it.
 */
async function gatherStream(
  chunks: AsyncIterable<ChatChunk>,
  onDelta: (text: string) => void | Promise<void>,
  sofar: { text: string },
): Promise<ChatCompletion> {
  let id = '';
  let created = Math.floor(Date.now() / 1000);
  let content: string | null = null;
  let finish: string | null = null;
  let usage: Usage | undefined;
  const calls = new Map<number, ChatToolCall>();
  for await (const chunk of chunks) {
    id ||= chunk.id;
    created = chunk.created || created;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    finish = choice.finish_reason ?? finish;
    const text = choice.delta?.content;
    if (text) {
      content = (content ?? '') + text;
      sofar.text += text;
      await onDelta(text);
    }
    for (const piece of choice.delta?.tool_calls ?? []) {
      const call = calls.get(piece.index) ?? { id: '', type: 'function', function: { name: '', arguments: '' } };
      calls.set(piece.index, call);
      if (piece.id) call.id = piece.id;
      call.function.name += piece.function?.name ?? '';
      call.function.arguments += piece.function?.arguments ?? '';
      sofar.text += `${piece.function?.name ?? ''}${piece.function?.arguments ?? ''}`;
    }
  }
  const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  return {
    id,
    object: 'chat.completion',
    created,
    model: '',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
        finish_reason: finish,
      },
    ],
    usage,
  };
}

function withTotal(u: Pick<Usage, 'prompt_tokens' | 'completion_tokens'> & { total_tokens?: number }): Usage {
  return { ...u, total_tokens: u.total_tokens ?? u.prompt_tokens + u.completion_tokens };
}

function completionText(c: ChatCompletion): string {
  return c.choices
    .map((ch) => `${ch.message.content ?? ''}${ch.message.tool_calls ? JSON.stringify(ch.message.tool_calls) : ''}`)
    .join('');
}

export async function countedUsage(request: ChatRequest, generated: string): Promise<Usage> {
  const prompt_tokens = await countTokens(promptText(request.messages));
  const completion_tokens = await countTokens(generated);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

export interface CompletionStream {
  /** The balance when the request was admitted. */
  balanceBefore: number;
  chunks: AsyncIterableIterator<ChatChunk>;
  /**
   * Settles the bill: the upstream's usage when it sent it, else what was generated, counted. Always call
   * it (in a finally), also when the client went away; it is idempotent.
   */
  finish(): Promise<Credits>;
  /** The tokens billed, once `finish` has settled. */
  billed(): Pick<Usage, 'prompt_tokens' | 'completion_tokens'> | undefined;
}

/**
 * A streamed completion. The first chunk is awaited before this returns, so an upstream that refuses the
 * request still gets a proper HTTP error instead of a broken stream.
 */
export async function streamCompletion(
  ctx: ServiceContext,
  request: ChatRequest,
  opts: { signal: CancelSignal; billing: Billing },
): Promise<CompletionStream> {
  requireScope(ctx, 'llm-all');
  const { model, upstream, hold, body } = await admit(ctx, request, true);
  const source = upstream.stream({ model, body, signal: opts.signal })[Symbol.asyncIterator]();
  const wantsUsage = request.stream_options?.include_usage === true;
  let usage: Usage | undefined;
  let generated = '';

  let refused = false; // the upstream failed before sending anything: the call is free
  let finished: Promise<Credits> | undefined;
  let billed: Pick<Usage, 'prompt_tokens' | 'completion_tokens'> | undefined;
  const finish = () => {
    finished ??= (async () => {
      await source.return?.(undefined).catch(() => {});
      billed = refused
        ? { prompt_tokens: 0, completion_tokens: 0 }
        : (usage ?? (await countedUsage(request, generated)));
      return settle(ctx, hold, model, billed, opts.billing);
    })();
    return finished;
  };

  const observe = (chunk: ChatChunk): ChatChunk | undefined => {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices ?? []) {
      generated += choice.delta?.content ?? '';
      for (const call of choice.delta?.tool_calls ?? [])
        generated += `${call.function?.name ?? ''}${call.function?.arguments ?? ''}`;
    }
    if (!wantsUsage) {
      if (!chunk.choices?.length) return undefined; // the usage-only chunk we asked for on our own account
      // The chunk is this stream's own (parsed from the upstream's event): changed in place, not copied once or
      // twice a chunk. JSON.stringify leaves an undefined field out.
      if (chunk.usage !== undefined) chunk.usage = undefined;
    }
    chunk.model = model.id;
    return chunk;
  };

  let first: IteratorResult<ChatChunk>;
  try {
    first = await source.next();
  } catch (err) {
    refused = !opts.signal.aborted;
    await finish();
    throw upstreamFault(err);
  }

  // The chunks for the client, as an iterator written out (an async generator here cost a few promises and
  // objects a chunk). The source is closed by `finish`, which the caller always calls.
  let pending: IteratorResult<ChatChunk> | undefined = first;
  const chunks: AsyncIterableIterator<ChatChunk> = {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      for (;;) {
        let next = pending;
        pending = undefined;
        if (!next) {
          try {
            next = await source.next();
          } catch (err) {
            throw upstreamFault(err);
          }
        }
        if (next.done) return { done: true, value: undefined };
        const out = observe(next.value);
        if (out) return { done: false, value: out };
      }
    },
  };

  return { balanceBefore: hold.balanceBefore, chunks, finish, billed: () => billed };
}
