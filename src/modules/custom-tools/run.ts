import type { ServiceContext } from '../../context.ts';
import type { CustomToolRow } from '../../db/schema/index.ts';
import { ValidationError } from '../../lib/errors.ts';
import { runBilled } from '../sandbox/index.ts';
import { argumentsProblem } from './check.ts';
import type { ToolLanguage, ToolRun } from './schema.ts';

/** A run as the API answers it, and the balance after its charge (the answer's `X-Credits-Remaining`). */
export type BilledToolRun = ToolRun & { creditsRemaining: number };

/**
 * One run of a custom tool: the arguments checked against its schema, then its code in the sandbox with only
 * the secrets it declares, billed to the caller. Every secret value given is cut out of what comes back
 * (stdout, stderr, the result, the error), so printing or returning a secret never shows it.
 */
export async function runTool(
  ctx: ServiceContext,
  tool: Pick<CustomToolRow, 'id' | 'name' | 'language' | 'code' | 'parameters' | 'requiredSecrets' | 'timeoutMs'>,
  args: Record<string, unknown>,
  secrets: Record<string, string>,
): Promise<BilledToolRun> {
  const problem = argumentsProblem(tool.parameters, args);
  if (problem) {
    throw new ValidationError(`The arguments do not fit the tool's parameters: ${problem}`, [
      { field: 'arguments', message: problem },
    ]);
  }
  const declared = Object.fromEntries(
    tool.requiredSecrets.flatMap((name) => (secrets[name] !== undefined ? [[name, secrets[name]]] : [])),
  ) as Record<string, string>;
  const run = await runBilled(
    ctx,
    {
      language: tool.language as ToolLanguage,
      code: tool.code,
      args,
      secrets: declared,
      ...(tool.timeoutMs ? { timeoutMs: tool.timeoutMs } : {}),
    },
    { description: `Tool ${tool.name}` },
  );
  return { ...scrubSecrets(run, Object.values(declared)), creditsRemaining: run.creditsRemaining };
}

const REDACTED = '[secret]';

/** `run` with every occurrence of each secret value replaced (values under 4 characters are left: too common). */
export function scrubSecrets(run: ToolRun, values: readonly string[]): ToolRun {
  const secrets = [...new Set(values.filter((v) => v.length >= 4))].sort((a, b) => b.length - a.length);
  if (!secrets.length) return run;
  const scrub = (text: string) => secrets.reduce((t, s) => t.split(s).join(REDACTED), text);
  const deep = (v: unknown): unknown => {
    if (typeof v === 'string') return scrub(v);
    if (Array.isArray(v)) return v.map(deep);
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [scrub(k), deep(x)]));
    }
    return v;
  };
  return {
    ...run,
    stdout: scrub(run.stdout),
    stderr: scrub(run.stderr),
    result: deep(run.result),
    error: run.error ? { name: scrub(run.error.name), message: scrub(run.error.message) } : null,
  };
}
