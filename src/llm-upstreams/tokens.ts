/**
 * Token counts for when an upstream reports no usage (or a stream is cut before it could). The tokenizer
 * (o200k) is loaded on first use: most requests never need it.
 */
let tokenizer: Promise<{ countTokens(text: string): number }> | undefined;

export async function countTokens(text: string): Promise<number> {
  if (!text) return 0;
  tokenizer ??= import('gpt-tokenizer');
  return (await tokenizer).countTokens(text);
}

/** Text of the messages as a model reads it, for counting. */
export function promptText(messages: ReadonlyArray<{ content?: unknown; tool_calls?: unknown; role: string }>): string {
  return messages
    .map((m) => {
      const content = typeof m.content === 'string' ? m.content : m.content ? JSON.stringify(m.content) : '';
      return `${m.role}\n${content}${m.tool_calls ? JSON.stringify(m.tool_calls) : ''}`;
    })
    .join('\n');
}

/**
 * Room for the chat template's own tokens (role markers, the tool preamble) beyond the body the upstream reads:
 * the JSON framing of every message and tool is already longer than those markers, this covers the fixed part.
 */
export const FRAMING_TOKENS = 256;

/**
 * A non-text content part (an image, audio, a file) is billed far above the bytes of its URL: one high-detail
 * image costs gpt-4o-mini up to 2,833 + 5,667 tokens per tile (about 48,000 tokens), the most of any model
 * shipped in the catalog.
 */
const MEDIA_PART_TOKENS = 50_000;

/** Upstreams cap `n` at 128 (OpenAI); the schema refuses more. */
export const MAX_CHOICES = 128;

export interface TokenBound {
  prompt: number;
  completion: number;
}

/**
 * An upper bound on what one request can be billed, without tokenizing. The upstream bills as prompt every
 * field it reads (messages, tool definitions, `response_format` schemas, anything an OpenAI-compatible server
 * adds), so the whole body sent upstream (`bodyBytes`, from `Upstream.prepare`) counts, one token per UTF-8
 * byte: byte-level BPE tokenizers never make a token of less than one byte. Media parts get their own
 * allowance. The completion bound is the output allowance times the choices asked for (`n`, or `best_of`
 * where a server honours it), plus a `prediction` (its rejected tokens are billed as completion). Used only to
 * size a credit hold: the gateway, MCP's agent and agent chats all hold this, so that concurrent requests
 * overdraw by at most one request's real cost.
 */
export function requestTokenBound(
  request: { messages: ReadonlyArray<{ content?: unknown }>; [field: string]: unknown },
  bodyBytes: number,
  maxOutputTokens: number,
): TokenBound {
  let media = 0;
  for (const m of request.messages) {
    if (!Array.isArray(m.content)) continue;
    for (const part of m.content as unknown[]) {
      if (typeof part === 'object' && part !== null && (part as { type?: unknown }).type !== 'text') media++;
    }
  }
  const prompt = bodyBytes + FRAMING_TOKENS + media * MEDIA_PART_TOKENS;

  const asked = positiveInt(request.max_completion_tokens) ?? positiveInt(request.max_tokens) ?? maxOutputTokens;
  const choices = Math.min(MAX_CHOICES, Math.max(positiveInt(request.n) ?? 1, positiveInt(request.best_of) ?? 1));
  const predicted = request.prediction === undefined ? 0 : Buffer.byteLength(JSON.stringify(request.prediction));
  return { prompt, completion: Math.min(asked, maxOutputTokens) * choices + predicted };
}

function positiveInt(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;
}
