import type { z } from 'zod';
import type { ServiceContext } from '../../context.ts';
import { BadGatewayError } from '../../lib/errors.ts';
import { nestedDeeperThan } from '../../lib/json.ts';
import { type Credits, runCompletion } from '../llm/index.ts';

/** What an LLM-assisted action answers, and its bill: all its model calls, the balance after the last. */
export interface Billed<T> {
  value: T;
  credits: Credits;
}

/**
 * One call to the default model that must answer a JSON object of a given shape (tool code, a skill prompt),
 * billed to the caller as an `llm` credit transaction. An answer that is not such an object is retried once
 * with the fault named; a second bad answer is a 502 (the model, not the caller, failed).
 */
export async function askForJson<T extends z.ZodType>(
  ctx: ServiceContext,
  opts: {
    system: string;
    user: string;
    shape: T;
    what: string;
    check?: (value: z.infer<T>) => Promise<string | undefined>;
  },
): Promise<Billed<z.infer<T>>> {
  const model = ctx.deps.llm.catalog.defaultModel?.id ?? '';
  const messages: { role: 'system' | 'user' | 'assistant'; content: string }[] = [
    { role: 'system', content: opts.system },
    { role: 'user', content: opts.user },
  ];
  let fault = '';
  const bill: Credits = { consumed: 0, remaining: 0 };
  for (let attempt = 1; attempt <= 2; attempt++) {
    const { completion, credits } = await runCompletion(
      ctx,
      { model, messages, temperature: 0.2, max_tokens: 4000 },
      { signal: AbortSignal.timeout(ctx.deps.config.llm.timeoutMs), billing: { type: 'llm', description: opts.what } },
    );
    bill.consumed += credits.consumed;
    bill.remaining = credits.remaining;
    const text = completion.choices[0]?.message.content ?? '';
    const parsed = opts.shape.safeParse(jsonObjectIn(text));
    if (parsed.success) {
      fault = (await opts.check?.(parsed.data)) ?? '';
      if (!fault) return { value: parsed.data, credits: bill };
    } else {
      fault = `The answer was not the JSON object asked for (${parsed.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join('.') || 'answer'}: ${i.message}`)
        .join('; ')}).`;
    }
    messages.push(
      { role: 'assistant', content: text },
      { role: 'user', content: `${fault} Answer again with only the JSON object.` },
    );
  }
  throw new BadGatewayError(`The model did not produce a usable answer: ${fault}`);
}

/** The outermost `{...}` of a text (models wrap JSON in prose or code fences), parsed; undefined if none. */
function jsonObjectIn(text: string): unknown {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end <= start) return undefined;
  try {
    const value: unknown = JSON.parse(text.slice(start, end + 1));
    // Nested past the limit is no usable answer: the schema checks and the response would overflow the stack.
    return nestedDeeperThan(value) ? undefined : value;
  } catch {
    return undefined;
  }
}
