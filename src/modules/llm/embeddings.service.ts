import { requireScope, type ServiceContext } from '../../context.ts';
import type { CancelSignal } from '../../lib/cancel.ts';
import { NotFoundError, ServiceUnavailableError } from '../../lib/errors.ts';
import { creditsFor } from '../../llm-upstreams/catalog.ts';
import { countTokens, FRAMING_TOKENS } from '../../llm-upstreams/tokens.ts';
import type { EmbeddingList } from '../../llm-upstreams/types.ts';
import { holdCredits } from '../credits/index.ts';
import { type Billing, type Credits, NO_UPSTREAM, settle, upstreamFault } from './service.ts';

export interface EmbeddingsRequest {
  model: string;
  input: string | string[] | number[] | number[][];
  [k: string]: unknown;
}

/**
 * OpenAI's embeddings, passed through to the model's upstream when it serves them, billed per input token at
 * the model's prompt rate (the upstream's count, else ours). A model no upstream embeds with is a 404
 * `model_not_found`, as OpenAI answers it. The hold is one token per byte of the body sent.
 */
export async function createEmbeddings(
  ctx: ServiceContext,
  request: EmbeddingsRequest,
  opts: { signal: CancelSignal; billing: Billing },
): Promise<{ embeddings: EmbeddingList; credits: Credits }> {
  requireScope(ctx, 'llm-all');
  const model = ctx.deps.llm.catalog.get(request.model);
  const upstream = model && ctx.deps.llm.upstreamFor(model);
  if (!model || !upstream?.embed) {
    if (!ctx.deps.llm.catalog.configured) throw new ServiceUnavailableError(NO_UPSTREAM);
    throw new NotFoundError(
      `The model "${request.model}" does not exist or no configured upstream serves embeddings with it: pick an embedding model from GET /api/v1/models, or have the operator list one in LLM_MODELS (e.g. text-embedding-3-small=20000/0) served by an OpenAI-compatible upstream (LLM_BASE_URL)`,
      'model_not_found',
    );
  }
  const body = Buffer.from(JSON.stringify({ ...request, model: model.upstreamModel }));
  const hold = await holdCredits(ctx, creditsFor(model, body.length + FRAMING_TOKENS, 0));
  let embeddings: EmbeddingList;
  try {
    embeddings = await upstream.embed({ model, body, signal: opts.signal });
  } catch (err) {
    settle(ctx, hold, model, { prompt_tokens: 0, completion_tokens: 0 }, opts.billing);
    throw upstreamFault(err);
  }
  const prompt = embeddings.usage?.prompt_tokens ?? (await countTokens(textOf(request.input)));
  const credits = settle(
    ctx,
    hold,
    model,
    { prompt_tokens: prompt, completion_tokens: 0 },
    {
      ...opts.billing,
      description: opts.billing.description ?? `Embeddings (${model.id})`,
    },
  );
  embeddings.model = model.id;
  embeddings.usage = { prompt_tokens: prompt, total_tokens: prompt };
  return { embeddings, credits };
}

/** Token arrays count one token per number. */
function textOf(input: EmbeddingsRequest['input']): string {
  if (typeof input === 'string') return input;
  return input.map((i) => (typeof i === 'string' ? i : Array.isArray(i) ? 'x '.repeat(i.length) : 'x ')).join('\n');
}
