import { views } from './injection-normalize.ts';
import { scriptsOf } from './injection-rule.ts';
import { INJECTION_RULES, type InjectionFamily } from './injection-rules.ts';

/**
 * The prompt-injection detector: a layered check that runs on the prompt an MCP client sends to
 * `use-agent` (blocked when flagged) and on every tool output the agent reads (quarantined when flagged:
 * the model sees it as data, never as instructions).
 *
 * 1. Normalization (injection-normalize.ts): NFKC, invisible characters out, Cyrillic/Greek look-alikes
 *    folded to Latin where they disguise Latin, accents and Arabic marks off, s p a c e d and l33t letters
 *    joined, base64/hex/%XX/\u runs and rot13 decoded when they read as text.
 * 2. Weighted rules by attack family in ten languages (injection-rules.ts, injection-rules-intl.ts); each rule
 *    counts once, whichever view it matched in, and the score is the sum of the weights. A rule written for
 *    one script (Russian, Japanese, Arabic) runs only on views that hold it.
 *
 * Figures on the held-out parts (test/fixtures/injection-corpus.json, injection-heldout-v2.json) are in docs/benchmarks.md.
 */

export type { InjectionFamily, InjectionRule } from './injection-rules.ts';
export { INJECTION_RULES } from './injection-rules.ts';

/** A prompt is blocked at this score. */
export const INJECTION_THRESHOLD = 1;
/**
 * A tool output is quarantined at this score. The same as prompts: quarantine only labels the output as
 * untrusted data for the model, so a false alarm costs little, and a web page or e-mail is where indirect
 * injections arrive.
 */
export const TOOL_OUTPUT_THRESHOLD = 1;

export interface InjectionVerdict {
  score: number;
  flagged: boolean;
  /** Ids of the rules that matched, in rule order. */
  rules: string[];
  /** Attack families of the rules that matched (without `meta`). */
  families: InjectionFamily[];
}

export function detectInjection(text: string, threshold = INJECTION_THRESHOLD): InjectionVerdict {
  const seen = views(text).map((v) => ({ v, scripts: scriptsOf(v) }));
  const rules: string[] = [];
  const families = new Set<InjectionFamily>();
  let score = 0;
  for (const rule of INJECTION_RULES) {
    const { script } = rule;
    if (seen.some(({ v, scripts }) => (!script || scripts.has(script)) && rule.pattern.test(v))) {
      rules.push(rule.id);
      score += rule.weight;
      if (rule.family !== 'meta') families.add(rule.family);
    }
  }
  score = Math.round(score * 100) / 100;
  return { score, flagged: score >= threshold, rules, families: [...families] };
}
