import { hasLoneSurrogate, LONE_SURROGATE_MESSAGE } from './text.ts';

/**
 * How deeply a caller's JSON may nest arrays and objects, wherever the service reads it (every JSON body, the
 * WhatsApp webhook, client registration, a sandbox's result). Past it the value is refused: the walks that
 * follow (JSON.stringify into jsonb, schema checks, redaction) recurse, and thousands of levels overflow the stack.
 */
export const JSON_MAX_DEPTH = 64;

export const JSON_DEPTH_MESSAGE = `JSON must not nest arrays and objects more than ${JSON_MAX_DEPTH} levels deep`;

/**
 * Whether `value` nests arrays and objects more than `max` levels deep (`[]` is one level, `[[1]]` two). Safe at
 * any depth: the walk goes no deeper than `max + 1` frames, stopping at the first container past the limit.
 * It runs on every JSON body, so it allocates nothing (a small fraction of parsing the body: docs/benchmarks.md).
 */
export function nestedDeeperThan(value: unknown, max: number = JSON_MAX_DEPTH): boolean {
  return value !== null && typeof value === 'object' && exceeds(value, max);
}

/** Whether `node` (which may itself open `room` more levels) holds a container past them. */
function exceeds(node: object, room: number): boolean {
  if (room <= 0) return true;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const child: unknown = node[i];
      if (child !== null && typeof child === 'object' && exceeds(child, room - 1)) return true;
    }
    return false;
  }
  for (const key in node) {
    if (!Object.hasOwn(node, key)) continue;
    const child: unknown = (node as Record<string, unknown>)[key];
    if (child !== null && typeof child === 'object' && exceeds(child, room - 1)) return true;
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
