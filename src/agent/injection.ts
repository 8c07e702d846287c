/**
 * A scored prompt-injection detector. Each rule that matches adds its weight; a text whose score reaches
 * the threshold is treated as an injection attempt. It runs on the prompt an MCP client sends (blocked) and
 * on every tool output (quarantined: the model sees it as data, never as instructions). Rules, threshold and
 * measured rates on the labelled set in test/fixtures/injection-set.json are documented in the README.
 */
export interface InjectionRule {
  id: string;
  weight: number;
  pattern: RegExp;
}

export const INJECTION_THRESHOLD = 1;

export const INJECTION_RULES: InjectionRule[] = [
  {
    id: 'override-instructions',
    weight: 1,
    pattern:
      /\b(ignore|disregard|forget|override|overwrite|bypass|skip)\b[^.\n]{0,40}?\b(instructions?|prompts?|rules|directives|guidelines|guardrails|constraints|polic(y|ies)|context)\b/i,
  },
  {
    id: 'new-instructions',
    weight: 0.6,
    pattern:
      /\b(new|updated|real|actual|true|hidden|secret)\s+(instructions?|system\s+prompt|directives?|orders)\s*[:-]/i,
  },
  {
    id: 'role-reassignment',
    weight: 0.6,
    pattern:
      /\b(you are now|from now on,? you|act as (an? )?(unrestricted|unfiltered|evil|jailbroken)|pretend (to be|you are) (an? )?(unrestricted|unfiltered|different|evil)|enter (developer|debug|god|dan) mode|do anything now)\b/i,
  },
  {
    id: 'jailbreak-terms',
    weight: 0.6,
    pattern:
      /\b(jailbreak(ed)?|DAN mode|developer mode enabled|no restrictions|without (any )?restrictions|unfiltered mode)\b/i,
  },
  {
    id: 'prompt-exfiltration',
    weight: 1,
    pattern:
      /\b(reveal|print|show|output|repeat|leak|dump|disclose|tell me)\b[^.\n]{0,30}\b(system prompt|your (instructions|prompt|rules)|hidden (prompt|instructions)|initial prompt|api keys?|access tokens?|credentials|secrets?)\b/i,
  },
  {
    id: 'data-exfiltration',
    weight: 1,
    pattern:
      /\b(send|forward|post|upload|email|e-mail|exfiltrate|transmit|copy)\b[^.\n]{0,50}\b(all|every|the|the user'?s?|their|your)\b[^.\n]{0,30}\b(emails?|messages|files|documents|contacts|tokens?|passwords?|credentials|secrets|data)\b[^.\n]{0,40}\b(to|at)\b[^.\n]{0,20}(https?:\/\/|[\w.+-]+@[\w-]+\.[\w.]+|\bwebhook\b|\bthis address\b)/i,
  },
  {
    id: 'chat-template-tokens',
    weight: 1,
    pattern: /<\|(im_start|im_end|system|endoftext|start_header_id)\|>|\[\/?INST\]|<<SYS>>/i,
  },
  {
    id: 'fake-role-header',
    weight: 0.6,
    pattern: /(^|\n)\s*(#{1,4}\s*)?(system|assistant|developer)\s*(message|prompt)?\s*:\s*\S/i,
  },
  {
    id: 'tool-hijack',
    weight: 0.5,
    pattern:
      /\b(call|invoke|use|run|execute)\s+(the\s+)?[\w-]+\s+tool\b[^.\n]{0,60}\b(immediately|now|without (asking|confirmation|telling))\b/i,
  },
  {
    id: 'secrecy',
    weight: 0.4,
    pattern: /\b(do not|don't|never)\s+(tell|inform|mention|reveal|let)\b[^.\n]{0,20}\b(the user|anyone|them)\b/i,
  },
  {
    id: 'encoded-payload',
    weight: 1,
    pattern:
      /\b(decode|decrypt)\b[^.\n]{0,30}\b(base64|rot13|hex)\b[^.\n]{0,40}\b(execute|follow|run|obey)\b|\b(base64|rot13)[- ]?(decode|encoded)\b[^.\n]{0,40}\b(instructions?|execute|follow|run)\b/i,
  },
  {
    id: 'credential-harvest',
    weight: 0.6,
    pattern:
      /\b(export|dump|list|print|send|collect)\b[^.\n]{0,20}\b(all|every)\b[^.\n]{0,20}\b(credentials|passwords|tokens|secrets|api keys)\b/i,
  },
  {
    id: 'task-redirect',
    weight: 0.6,
    pattern: /\b(ignore|disregard|forget)\b[^.\n]{0,30}\b(request|task|question)\b[^.\n]{0,20}\binstead\b/i,
  },
];

export interface InjectionVerdict {
  score: number;
  flagged: boolean;
  rules: string[];
}

export function detectInjection(text: string, threshold = INJECTION_THRESHOLD): InjectionVerdict {
  const rules: string[] = [];
  let score = 0;
  for (const rule of INJECTION_RULES) {
    if (rule.pattern.test(text)) {
      rules.push(rule.id);
      score += rule.weight;
    }
  }
  score = Math.round(score * 100) / 100;
  return { score, flagged: score >= threshold, rules };
}
