import type { Attributes, Span } from '@opentelemetry/api';
import { endSpan, SpanKind, startSpan, within } from '../lib/tracing.ts';
import type { UpstreamName } from './catalog.ts';
import type { ChatChunk, Upstream, UpstreamCall, Usage } from './types.ts';

/** OpenTelemetry's names of the providers (gen_ai.provider.name); a custom upstream speaks OpenAI's API. */
const PROVIDER: Record<UpstreamName, string> = { openai: 'openai', anthropic: 'anthropic', custom: 'openai' };

/**
 * An upstream whose calls are spans (CLIENT, GenAI semantic conventions): the operation, the provider, the model
 * asked and answered and the tokens used; never the prompt or the answer. Used only while tracing is on; the
 * HTTP client sends the span's `traceparent` upstream.
 */
export function tracedUpstream(name: UpstreamName, upstream: Upstream): Upstream {
  const begin = (call: UpstreamCall, operation: string) => {
    const attributes: Attributes = {
      'gen_ai.operation.name': operation,
      'gen_ai.provider.name': PROVIDER[name],
      'gen_ai.system': PROVIDER[name],
      'gen_ai.request.model': call.model.upstreamModel,
      'switchboard.model': call.model.id,
    };
    return startSpan(`${operation} ${call.model.upstreamModel}`, attributes, SpanKind.CLIENT);
  };
  const traced: Upstream = {
    prepare: (model, request, stream) => upstream.prepare(model, request, stream),
    async complete(call) {
      const span = begin(call, 'chat');
      try {
        const completion = await within(span, () => upstream.complete(call));
        finish(span, completion.model, completion.usage);
        if (completion.choices[0]?.finish_reason)
          span?.setAttribute('gen_ai.response.finish_reasons', [completion.choices[0].finish_reason]);
        endSpan(span);
        return completion;
      } catch (err) {
        endSpan(span, err);
        throw err;
      }
    },
    stream: (call) => tracedStream(upstream, call, begin(call, 'chat')),
  };
  const embed = upstream.embed;
  if (embed) {
    traced.embed = async (call) => {
      const span = begin(call, 'embeddings');
      try {
        const list = await within(span, () => embed.call(upstream, call));
        finish(span, list.model, list.usage && { prompt_tokens: list.usage.prompt_tokens });
        endSpan(span);
        return list;
      } catch (err) {
        endSpan(span, err);
        throw err;
      }
    };
  }
  return traced;
}

function finish(span: Span | undefined, model: string, usage: Partial<Usage> | null | undefined): void {
  if (!span) return;
  span.setAttribute('gen_ai.response.model', model);
  if (usage?.prompt_tokens !== undefined) span.setAttribute('gen_ai.usage.input_tokens', usage.prompt_tokens);
  if (usage?.completion_tokens !== undefined) span.setAttribute('gen_ai.usage.output_tokens', usage.completion_tokens);
}

/** The stream's chunks, read inside the span (so the request upstream carries it); ended with the stream. */
async function* tracedStream(
  upstream: Upstream,
  call: UpstreamCall,
  span: Span | undefined,
): AsyncGenerator<ChatChunk> {
  const it = within(span, () => upstream.stream(call)[Symbol.asyncIterator]());
  let last: ChatChunk | undefined;
  let usage: Usage | null | undefined;
  let failed: unknown;
  try {
    for (;;) {
      const next = await within(span, () => it.next());
      if (next.done) break;
      last = next.value;
      if (last.usage) usage = last.usage;
      yield last;
    }
  } catch (err) {
    failed = err ?? new Error();
    throw err;
  } finally {
    await it.return?.();
    if (last) finish(span, last.model, usage);
    endSpan(span, failed);
  }
}
