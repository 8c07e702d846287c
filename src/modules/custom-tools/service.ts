import { z } from 'zod';
import { type AgentTool, CATALOG_TOOLS } from '../../agent/tool-group.ts';
import { requireScope, type ServiceContext } from '../../context.ts';
import type { AgentRow, CustomToolRow } from '../../db/schema/index.ts';
import { ConflictError, ForbiddenError, isUniqueViolation, NotFoundError, ValidationError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import {
  AVAILABLE_GROUPS,
  agentConfigChanged,
  BUILT_IN_TOOL_GROUPS,
  type BuiltInToolGroup,
  GROUP_DESCRIPTIONS,
  OWNER,
  toolsOf,
} from '../agents/index.ts';
import { parametersProblem, syntaxProblem } from './check.ts';
import { askForJson, type Billed } from './generate.ts';
import * as repo from './repo.ts';
import { type BilledToolRun, runTool } from './run.ts';
import {
  type BuiltInGroup,
  type CreateTool,
  type GenerateCode,
  type GeneratedCode,
  SECRET_NAME,
  type TestTool,
  TOOL_CODE_MAX_CHARS,
  TOOL_MAX_SECRETS,
  type Tool,
  type UpdateTool,
} from './schema.ts';

/**
 * Custom tools (SPEC §4 "Tools and skills"): code an account writes once, with a JSON-Schema input and named
 * secrets, and links to agents. Only `agents-all` reads and writes them (their code is the account's own).
 * A tool is stored only when its `parameters` compile as a JSON Schema of an object and its name clashes with
 * no built-in tool; generated code is returned only once it parses.
 */

const MANAGE = ['agents-all'] as const;
const READ = ['agents-all', 'agents-use'] as const;

export function toTool(row: CustomToolRow): Tool {
  return {
    id: row.id,
    accountId: row.accountId,
    name: row.name,
    description: row.description,
    code: row.code,
    language: row.language,
    parameters: row.parameters,
    requiredSecrets: row.requiredSecrets,
    timeoutMs: row.timeoutMs,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export async function ownedTool(ctx: ServiceContext, toolId: string): Promise<CustomToolRow> {
  requireScope(ctx, ...MANAGE);
  const row = await repo.findTool(ctx.db, ctx.accountId, toolId);
  if (!row) throw new NotFoundError(`Tool ${toolId} not found`);
  return row;
}

/** An agent that exists nowhere, with these groups: nothing is linked to it, and none of its tools runs here. */
function probeAgent(ctx: ServiceContext, groups: readonly BuiltInToolGroup[]): AgentRow {
  return { id: '', accountId: ctx.accountId, name: '', enabledBuiltInTools: [...groups] } as unknown as AgentRow;
}

/** The built-in tools of `groups`, from the function that gives agents their tools. */
async function builtInTools(ctx: ServiceContext, groups: readonly BuiltInToolGroup[]): Promise<AgentTool[]> {
  try {
    return await toolsOf(ctx, probeAgent(ctx, groups), OWNER, '');
  } catch (err) {
    if (err instanceof ForbiddenError) return [];
    throw err;
  }
}

let reserved: ReadonlySet<string> | undefined;

/**
 * Names a custom tool may not take: the built-in tools' (provider tools aside) and the tool catalogue's. They
 * are the same for every account (the probe agent has no linked tools; the callers hold `agents-all`), so the
 * set is made by the first create or update and kept for the life of the process.
 */
async function reservedNames(ctx: ServiceContext): Promise<ReadonlySet<string>> {
  if (!reserved) {
    const groups = [...AVAILABLE_GROUPS].filter((g) => g !== 'provider-tools');
    const names = (await builtInTools(ctx, groups)).map((t) => t.name);
    reserved = new Set([...names, ...CATALOG_TOOLS.map((t) => t.function.name), 'execute-code', 'skill-load']);
  }
  return reserved;
}

async function checkTool(
  ctx: ServiceContext,
  input: { name?: string | undefined; parameters?: Record<string, unknown> | undefined },
): Promise<void> {
  if (input.name !== undefined && (await reservedNames(ctx)).has(input.name)) {
    throw new ValidationError(`The name ${input.name} belongs to a built-in tool: choose another`, [
      { field: 'body.name', message: 'taken by a built-in tool' },
    ]);
  }
  if (input.parameters !== undefined) {
    const problem = parametersProblem(input.parameters);
    if (problem) throw new ValidationError(problem, [{ field: 'body.parameters', message: problem }]);
  }
}

function nameTaken(err: unknown, name: string | undefined): never {
  if (isUniqueViolation(err)) throw new ConflictError(`A tool named "${name}" already exists`);
  throw err;
}

export async function createTool(ctx: ServiceContext, input: CreateTool): Promise<Tool> {
  requireScope(ctx, ...MANAGE);
  await checkTool(ctx, input);
  const row = await repo
    .insertTool(ctx.db, {
      id: newId('customTool'),
      accountId: ctx.accountId,
      name: input.name,
      description: input.description,
      code: input.code,
      language: input.language,
      parameters: input.parameters,
      requiredSecrets: [...new Set(input.requiredSecrets)],
      timeoutMs: input.timeoutMs ?? null,
    })
    .catch((err: unknown) => nameTaken(err, input.name));
  return toTool(row);
}

export async function listTools(
  ctx: ServiceContext,
  p: { page: number; limit: number; sortBy: repo.ToolSort; sortOrder: 'asc' | 'desc' },
): Promise<Page<Tool>> {
  requireScope(ctx, ...MANAGE);
  const { rows, total } = await repo.listTools(ctx.db, ctx.accountId, p);
  return toPage(rows.map(toTool), total, p);
}

export async function getTool(ctx: ServiceContext, toolId: string): Promise<Tool> {
  return toTool(await ownedTool(ctx, toolId));
}

/** Changes the fields given; `timeoutMs: null` goes back to the sandbox's default. */
export async function updateTool(ctx: ServiceContext, toolId: string, input: UpdateTool): Promise<Tool> {
  const current = await ownedTool(ctx, toolId);
  await checkTool(ctx, input);
  const { requiredSecrets, ...rest } = input;
  const row = await repo
    .updateTool(ctx.db, ctx.accountId, current.id, {
      ...rest,
      ...(requiredSecrets ? { requiredSecrets: [...new Set(requiredSecrets)] } : {}),
    })
    .catch((err: unknown) => nameTaken(err, input.name));
  agentConfigChanged(ctx.deps, ctx.accountId);
  if (!row) throw new NotFoundError(`Tool ${toolId} not found`);
  return toTool(row);
}

/** Deletes the tool; its links to agents (and their secrets) go with it. */
export async function deleteTool(ctx: ServiceContext, toolId: string): Promise<void> {
  const current = await ownedTool(ctx, toolId);
  const deleted = await repo.deleteTool(ctx.db, ctx.accountId, current.id);
  agentConfigChanged(ctx.deps, ctx.accountId);
  if (!deleted) throw new NotFoundError(`Tool ${toolId} not found`);
}

/** Runs the stored tool once with the arguments and secrets given (never stored), billed to the caller. */
export async function testTool(ctx: ServiceContext, toolId: string, input: TestTool): Promise<BilledToolRun> {
  const tool = await ownedTool(ctx, toolId);
  const unknown = Object.keys(input.secrets ?? {}).filter((n) => !tool.requiredSecrets.includes(n));
  if (unknown.length) {
    throw new ValidationError(`Secrets the tool does not declare: ${unknown.join(', ')}`, [
      { field: 'body.secrets', message: `not declared: ${unknown.join(', ')}` },
    ]);
  }
  return runTool(ctx, tool, input.arguments, input.secrets ?? {});
}

// ---- Built-in groups -----------------------------------------------------------------------------------

/**
 * The built-in groups with their tools, read from the very function that gives agents their tools (an agent
 * with every available group enabled): provider tools are those of the caller's active connections.
 */
export async function listBuiltInGroups(ctx: ServiceContext): Promise<{ data: BuiltInGroup[] }> {
  requireScope(ctx, ...READ);
  const tools = await builtInTools(ctx, [...AVAILABLE_GROUPS]);
  const groups = new Set<string>(BUILT_IN_TOOL_GROUPS);
  const groupOf = (t: AgentTool): string | undefined =>
    groups.has(t.source) ? t.source : t.source === 'custom' ? undefined : 'provider-tools';
  return {
    data: BUILT_IN_TOOL_GROUPS.map((id) => ({
      id,
      description: GROUP_DESCRIPTIONS[id],
      available: AVAILABLE_GROUPS.has(id),
      tools: tools
        .filter((t) => groupOf(t) === id)
        .map((t) => ({ name: t.name, description: t.description, parameters: t.parameters, mode: t.mode })),
    })),
  };
}

// ---- Code generation -----------------------------------------------------------------------------------

/** Compiles Python source (given as an argument, never run) inside the sandbox: its own parser says what is wrong. */
const PY_COMPILE = 'compile(args["source"], "tool", "exec")\nresult = True';
const PY_SYNTAX_ERRORS = new Set(['SyntaxError', 'IndentationError', 'TabError']);

/**
 * Why the code does not parse, or undefined. JavaScript and TypeScript by esbuild; Python by `compile()` in the
 * sandbox's Python (a few seconds the first time it starts; not billed). When Python cannot be reached the
 * code is returned unchecked rather than refused.
 */
async function codeProblem(
  ctx: ServiceContext,
  language: CreateTool['language'],
  code: string,
): Promise<string | undefined> {
  if (language !== 'python') return syntaxProblem(language, code);
  try {
    const run = await ctx.deps.sandbox.run({
      language: 'python',
      code: PY_COMPILE,
      args: { source: code },
      secrets: {},
      timeoutMs: 30_000,
    });
    if (run.error && PY_SYNTAX_ERRORS.has(run.error.name)) return `${run.error.name}: ${run.error.message}`;
    if (run.error)
      ctx.log.warn({ error: run.error.name }, 'python syntax check could not run; code returned unchecked');
  } catch (err) {
    ctx.log.warn({ err }, 'python syntax check could not run; code returned unchecked');
  }
  return undefined;
}

const CODE_CONTRACT: Record<CreateTool['language'], string> = {
  javascript:
    'JavaScript. The code is the BODY of an async function: `args` (the validated arguments) and `secrets` (an object of the declared secret values) are in scope; `return` the result (any JSON value). `fetch` is available for HTTP(S); `console.log` output is captured. No require, import, process or file system.',
  typescript:
    'TypeScript. The code is the BODY of an async function: `args` (the validated arguments) and `secrets` (an object of the declared secret values) are in scope; `return` the result (any JSON value). Types are stripped before it runs. `fetch` is available for HTTP(S); `console.log` output is captured. No require, import, process or file system.',
  python:
    'Python 3 (Pyodide). `args` and `secrets` are dicts in scope; set the variable `result` to the result (any JSON-serialisable value). What the code prints is captured. Standard library only.',
};

const GeneratedShape = z.object({
  code: z.string().min(1).max(TOOL_CODE_MAX_CHARS),
  parameters: z.record(z.string(), z.unknown()),
  requiredSecrets: z.array(z.string().regex(SECRET_NAME)).max(TOOL_MAX_SECRETS).default([]),
});

/**
 * Tool code written by the default model (billed to the caller), returned only once its parameters compile as
 * a JSON Schema and (JavaScript, TypeScript) its code parses; a first answer that fails is sent back to the
 * model with the fault once. Nothing is stored.
 */
export async function generateToolCode(ctx: ServiceContext, input: GenerateCode): Promise<Billed<GeneratedCode>> {
  requireScope(ctx, ...MANAGE);
  if (input.parameters) await checkTool(ctx, { parameters: input.parameters });
  const system = `You write custom tools for an AI agent. Answer ONLY a JSON object {"code": string, "parameters": object, "requiredSecrets": string[]}.
- code: ${CODE_CONTRACT[input.language]}
- parameters: a JSON Schema with "type": "object", its "properties" (each with a description) and "required".
- requiredSecrets: the names (identifiers such as API_KEY) of secrets the code reads from \`secrets\`; never write a secret value into the code.`;
  const user = input.parameters
    ? `${input.description}\n\nUse exactly these parameters: ${JSON.stringify(input.parameters)}`
    : input.description;
  const { value: out, credits } = await askForJson(ctx, {
    system,
    user,
    shape: GeneratedShape,
    what: 'Tools: code generation',
    check: async (v) => {
      const schema = input.parameters ?? v.parameters;
      const bad = parametersProblem(schema);
      if (bad) return `The parameters are not usable: ${bad}.`;
      const syntax = await codeProblem(ctx, input.language, v.code);
      return syntax ? `The code does not parse: ${syntax}.` : undefined;
    },
  });
  return {
    value: {
      code: out.code,
      parameters: input.parameters ?? out.parameters,
      requiredSecrets: [...new Set(out.requiredSecrets)],
    },
    credits,
  };
}
