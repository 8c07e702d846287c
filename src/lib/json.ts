import { hasLoneSurrogate, LONE_SURROGATE_MESSAGE } from './text.ts';

/**
 * How deeply a caller's JSON may nest arrays and objects, wherever the service reads it (every JSON body, the
 * WhatsApp webhook, client registration, a sandbox's result). Past it the value is refused: the walks that
 * follow (JSON.stringify into jsonb, schema checks, redaction) recurse, and thousands of levels overflow the stack.
 */
export const JSON_MAX_DEPTH = 64;

export const JSON_DEPTH_MESSAGE = `JSON must not nest arrays and objects more than ${JSON_MAX_DEPTH} levels deep`;

/**
 * Whether `value` nests arrays and objects more than `max` levels deep (`[]` is one level, `[[1]]` two).
 * Iterative, so any depth is safe to ask about; it stops at the first container past the limit.
 */
export function nestedDeeperThan(value: unknown, max: number = JSON_MAX_DEPTH): boolean {
  if (value === null || typeof value !== 'object') return false;
  const pending: object[] = [value];
  const depths: number[] = [1];
  while (pending.length > 0) {
    const node = pending.pop() as object;
    const depth = depths.pop() as number;
    if (depth > max) return true;
    const children: unknown[] = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) {
      if (child !== null && typeof child === 'object') {
        pending.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** A `\uD800`-`\uDFFF` escape: the only way a JSON text can carry a lone surrogate (UTF-8 cannot encode one). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * What makes a parsed JSON body unacceptable on any route (nested too deep, an unpaired surrogate), or
 * undefined. `text` is the body as received: without a surrogate escape in it, the surrogate walk is skipped.
 */
export function jsonBodyProblem(value: unknown, text?: string): string | undefined {
  if (nestedDeeperThan(value)) return JSON_DEPTH_MESSAGE;
  if ((text === undefined || SURROGATE_ESCAPE.test(text)) && hasLoneSurrogate(value)) return LONE_SURROGATE_MESSAGE;
  return undefined;
}
