import type { SseEvent } from '../lib/sse.ts';
import { END_OF_STREAM, postEvents, postJson } from './http.ts';
import type { ChatChunk, ChatCompletion, EmbeddingList, Upstream } from './types.ts';

/** Any OpenAI-compatible server (OpenAI, OpenRouter, vLLM, Ollama, LM Studio): the request passes as is. */
export function openAiUpstream(opts: { baseUrl: string; apiKey: string | undefined; timeoutMs: number }): Upstream {
  const url = new URL(`${opts.baseUrl}/chat/completions`);
  const embeddingsUrl = new URL(`${opts.baseUrl}/embeddings`);
  const headers: Record<string, string> = opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {};

  return {
    prepare(model, request, stream) {
      const payload = stream
        ? {
            ...request,
            model: model.upstreamModel,
            stream: true,
            // Usage is how we bill: always ask for it.
            stream_options: { ...(request.stream_options ?? {}), include_usage: true },
          }
        : { ...request, model: model.upstreamModel, stream: false };
      return Buffer.from(JSON.stringify(payload));
    },
    complete: ({ body, signal }) => postJson(url, headers, body, signal, opts.timeoutMs) as Promise<ChatCompletion>,
    stream: ({ body, signal }) => postEvents(url, headers, body, signal, opts.timeoutMs, chunkOf),
    embed: ({ body, signal }) =>
      postJson(embeddingsUrl, headers, body, signal, opts.timeoutMs) as Promise<EmbeddingList>,
  };
}

/** An event of an OpenAI stream: a chunk, or its end. */
const chunkOf = (ev: SseEvent): ChatChunk | typeof END_OF_STREAM =>
  ev.data === '[DONE]' ? END_OF_STREAM : (JSON.parse(ev.data) as ChatChunk);
