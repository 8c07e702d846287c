import type { ChatChunk, ChatCompletion, Upstream } from '../types.ts';
import { UpstreamError } from '../types.ts';
import { classifyTransportError, postUpstream, upstreamEvents } from './http.ts';

/** Any OpenAI-compatible server (OpenAI, OpenRouter, vLLM, Ollama, LM Studio): the request passes as is. */
export function openAiUpstream(opts: { baseUrl: string; apiKey: string | undefined; timeoutMs: number }): Upstream {
  const url = `${opts.baseUrl}/chat/completions`;
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
    async complete({ body, signal }) {
      const res = await postUpstream(url, headers, body, signal, opts.timeoutMs);
      try {
        return (await res.body.json()) as ChatCompletion;
      } catch (err) {
        throw asFault(classifyTransportError(err, signal), 'The model provider sent an unreadable answer');
      }
    },
    async *stream({ body, signal }) {
      const res = await postUpstream(url, headers, body, signal, opts.timeoutMs);
      try {
        for await (const ev of upstreamEvents(res)) {
          if (ev.data === '[DONE]') return;
          yield JSON.parse(ev.data) as ChatChunk;
        }
      } catch (err) {
        throw asFault(classifyTransportError(err, signal), 'The model provider stream broke off');
      }
    },
  };
}

function asFault(err: unknown, message: string): unknown {
  return err instanceof SyntaxError ? new UpstreamError('failed', message) : err;
}
