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
 * An upper bound on prompt tokens without tokenizing: a token is at least one character for the texts these
 * models read, so the serialized length bounds the count. Used only to size a credit hold.
 */
export function promptTokenBound(messages: unknown): number {
  return JSON.stringify(messages).length;
}
