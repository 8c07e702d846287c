import { foldMarks } from './injection-normalize.ts';

/** The building blocks of the injection rules (injection-rules.ts, injection-rules-intl.ts). */
export type InjectionFamily =
  | 'override'
  | 'roleplay'
  | 'fake-system'
  | 'prompt-leak'
  | 'exfiltration'
  | 'escalation'
  | 'obfuscation'
  | 'indirect'
  | 'meta';

/** Scripts a rule needs in a text before it is worth running (a Russian rule on an English page is not). */
export type RuleScript = 'cyrillic' | 'japanese' | 'arabic';

export interface InjectionRule {
  id: string;
  family: InjectionFamily;
  weight: number;
  pattern: RegExp;
  script?: RuleScript;
}

const SCRIPT_TESTS: Record<RuleScript, RegExp> = {
  cyrillic: /[\u0400-\u04ff]/,
  japanese: /[\u3040-\u30ff\u4e00-\u9fff]/,
  arabic: /[\u0600-\u06ff]/,
};

const ANY_SCRIPT = /[\u0400-\u04ff\u0600-\u06ff\u3040-\u30ff\u4e00-\u9fff]/;

/** Which of the rule scripts a text holds (one scan for a text in none of them, the usual case). */
export function scriptsOf(text: string): Set<RuleScript> {
  const out = new Set<RuleScript>();
  if (!ANY_SCRIPT.test(text)) return out;
  for (const [script, test] of Object.entries(SCRIPT_TESTS) as Array<[RuleScript, RegExp]>) {
    if (test.test(text)) out.add(script);
  }
  return out;
}

/** A bounded gap inside one sentence. */
export const G = '[^.\\n?!؟]{0,40}?';
/** The same for Chinese and Japanese. */
export const Z = '[^。\\n？！]{0,15}?';
/** Word edges that work for every script (`\b` only knows ASCII letters). */
export const B0 = '(?<![\\p{L}\\p{N}])';
export const B1 = '(?![\\p{L}\\p{N}])';

/** A rule's source is folded like the text it runs on (accents and Arabic letter forms), so it is written plainly. */
export function rule(family: InjectionFamily, id: string, weight: number, source: string): InjectionRule {
  return { id, family, weight, pattern: new RegExp(foldMarks(source), 'u') };
}

/** The same rules, run only on texts that hold `script`. */
export function inScript(script: RuleScript, rules: InjectionRule[]): InjectionRule[] {
  return rules.map((r) => ({ ...r, script }));
}
