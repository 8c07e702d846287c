import type { AgentTool, AgentToolGroup } from '../../agent/tool-group.ts';
import { SANDBOX_LANGUAGES, type SandboxLanguage } from '../../code-runner/index.ts';
import type { ServiceContext } from '../../context.ts';
import { BadRequestError } from '../../lib/errors.ts';
import { argText } from '../../lib/text.ts';
import { runBilled } from './service.ts';

/** The most code the model may send in one call. */
export const EXECUTE_CODE_MAX_CHARS = 100_000;
/** What the model reads of a run: stdout, stderr and the result (as JSON) are each cut to these sizes. */
export const EXECUTE_CODE_LIMITS = { stdout: 8000, stderr: 2000, result: 8000 } as const;

const cut = (text: string, limit: number) =>
  text.length <= limit ? text : `${text.slice(0, limit)}\n[cut: ${text.length - limit} more characters]`;

/**
 * The `execute-code` built-in group: one tool running the model's JavaScript, TypeScript or Python in the code
 * sandbox (no arguments, no secrets: nothing of the account's), billed to the account like any run, with its
 * output cut so a chatty program cannot flood the model's context.
 */
export function executeCodeTools(ctx: ServiceContext): AgentTool[] {
  return [
    {
      name: 'execute-code',
      description:
        'Run code in a sandbox and read its output: for calculations, data processing or checking an idea. javascript/typescript: the code is the body of an async function, `return` the result, console.log prints. python: set the variable `result`, print() prints, top-level await works. `fetch` reaches public http(s) URLs only. No files, no packages beyond the standard library. Each run is billed per second (default limit 30 s).',
      parameters: {
        type: 'object',
        properties: {
          language: { type: 'string', enum: [...SANDBOX_LANGUAGES] },
          code: { type: 'string', description: 'The program', maxLength: EXECUTE_CODE_MAX_CHARS },
        },
        required: ['language', 'code'],
        additionalProperties: false,
      },
      mode: 'read',
      source: 'execute-code',
      async run(args, _signal, charged) {
        const language = argText(args.language) as SandboxLanguage;
        if (!(SANDBOX_LANGUAGES as readonly string[]).includes(language)) {
          throw new BadRequestError(`language must be one of ${SANDBOX_LANGUAGES.join(', ')}`);
        }
        const code = typeof args.code === 'string' ? args.code : '';
        if (!code.trim()) throw new BadRequestError('code is empty');
        if (code.length > EXECUTE_CODE_MAX_CHARS) {
          throw new BadRequestError(`code is longer than ${EXECUTE_CODE_MAX_CHARS} characters`);
        }
        const run = await runBilled(
          ctx,
          { language, code, args: {}, secrets: {} },
          { description: 'Agent execute-code' },
        );
        charged?.(run.creditsCharged);
        const resultJson = JSON.stringify(run.result) ?? 'null';
        return {
          stdout: cut(run.stdout, EXECUTE_CODE_LIMITS.stdout),
          stderr: cut(run.stderr, EXECUTE_CODE_LIMITS.stderr),
          result:
            resultJson.length <= EXECUTE_CODE_LIMITS.result ? run.result : cut(resultJson, EXECUTE_CODE_LIMITS.result),
          error: run.error,
          durationMs: run.durationMs,
          creditsCharged: run.creditsCharged,
        };
      },
    },
  ];
}

/** The `execute-code` group. */
export const executeCodeToolGroup: AgentToolGroup = { name: 'execute-code', tools: (ctx) => executeCodeTools(ctx) };
