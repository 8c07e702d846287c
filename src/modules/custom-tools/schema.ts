import { z } from 'zod';
import { SANDBOX_LANGUAGES, SANDBOX_MAX_TIMEOUT_MS } from '../../code-runner/types.ts';
import { Timestamp } from '../../lib/pagination.ts';

/**
 * SPEC §2 Custom tool and the agent-tool link. A tool's `name` is what the model calls it, so it follows the
 * function-name rule of the OpenAI API (letters, digits, `_` and `-`, starting with a letter); a secret's name
 * is an identifier, as the code reads it (`secrets.API_KEY`).
 */

export const TOOL_LANGUAGES = SANDBOX_LANGUAGES;
export type ToolLanguage = (typeof TOOL_LANGUAGES)[number];
/** The largest `code` a tool may hold (characters). */
export const TOOL_CODE_MAX_CHARS = 100_000;
/** The most secrets a tool may declare. */
export const TOOL_MAX_SECRETS = 20;
/** The longest secret value a link stores. */
export const SECRET_VALUE_MAX_CHARS = 10_000;

export const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

const JsonSchemaObject = z
  .record(z.string(), z.unknown())
  .describe('a JSON Schema of the arguments: `type: "object"` with its `properties` (and `required`)');

const fields = {
  name: z
    .string()
    .regex(TOOL_NAME, 'letters, digits, _ and -, starting with a letter, at most 64')
    .meta({ examples: ['weather_lookup'] }),
  description: z
    .string()
    .max(2000)
    .describe('what the tool does: the model reads it to decide when to call it')
    .meta({ examples: ['Returns the current weather for a city.'] }),
  code: z
    .string()
    .min(1)
    .max(TOOL_CODE_MAX_CHARS)
    .describe(
      'JavaScript/TypeScript: the body of an async function with `args` and `secrets` in scope; what it returns is the result. Python: `args` and `secrets` are dicts; set `result`. What the code prints is stdout.',
    )
    .meta({
      examples: [
        [
          "const url = 'https://api.open-meteo.com/v1/forecast?current_weather=true&latitude=' + args.lat + '&longitude=' + args.lon;",
          'const res = await fetch(url);',
          'return (await res.json()).current_weather;',
        ].join('\n'),
      ],
    }),
  language: z.enum(TOOL_LANGUAGES),
  parameters: JsonSchemaObject,
  requiredSecrets: z
    .array(z.string().regex(SECRET_NAME, 'an identifier: letters, digits and _, not starting with a digit'))
    .max(TOOL_MAX_SECRETS)
    .describe('names of the secrets the code reads; each agent link sets their values'),
  timeoutMs: z.number().int().min(100).max(SANDBOX_MAX_TIMEOUT_MS).describe('wall-clock limit of one run'),
};

export const EMPTY_PARAMETERS = { type: 'object', properties: {} } as const;

export const CreateTool = z
  .object({
    name: fields.name,
    description: fields.description.default(''),
    code: fields.code,
    language: fields.language.default('javascript'),
    parameters: fields.parameters.default({ ...EMPTY_PARAMETERS }),
    requiredSecrets: fields.requiredSecrets.default([]),
    timeoutMs: fields.timeoutMs.optional(),
  })
  .strict();
export type CreateTool = z.infer<typeof CreateTool>;

export const UpdateTool = z
  .object({
    name: fields.name.optional(),
    description: fields.description.optional(),
    code: fields.code.optional(),
    language: fields.language.optional(),
    parameters: fields.parameters.optional(),
    requiredSecrets: fields.requiredSecrets.optional(),
    timeoutMs: fields.timeoutMs.nullable().optional().describe('null: back to the default'),
  })
  .strict();
export type UpdateTool = z.infer<typeof UpdateTool>;

export const Tool = z
  .object({
    id: z.string().meta({ examples: ['tool_Zq3v9dH2TQm0bq1yWzY8cA'] }),
    accountId: z.string(),
    name: z.string(),
    description: z.string(),
    code: z.string(),
    language: z.string(),
    parameters: z.record(z.string(), z.unknown()),
    requiredSecrets: z.array(z.string()),
    timeoutMs: z.number().int().nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'CustomTool' });
export type Tool = z.infer<typeof Tool>;

export const ToolParams = z.object({ toolId: z.string().min(1).max(100) });
export const AgentToolParams = z.object({
  agentId: z.string().min(1).max(100),
  toolId: z.string().min(1).max(100),
});

export const GenerateCode = z
  .object({
    description: z
      .string()
      .trim()
      .min(1)
      .max(4000)
      .describe('what the tool should do')
      .meta({ examples: ['Look up the current weather for a city with the Open-Meteo API'] }),
    language: fields.language.default('javascript'),
    parameters: fields.parameters.optional().describe('the arguments, if you know them already'),
  })
  .strict();
export type GenerateCode = z.infer<typeof GenerateCode>;

export const GeneratedCode = z
  .object({ code: z.string(), parameters: z.record(z.string(), z.unknown()), requiredSecrets: z.array(z.string()) })
  .meta({ id: 'GeneratedToolCode' });
export type GeneratedCode = z.infer<typeof GeneratedCode>;

const SecretValues = z
  .record(z.string().max(64), z.string().max(SECRET_VALUE_MAX_CHARS).nullable())
  .describe('secret name to value (null removes it)');

export const TestTool = z
  .object({
    arguments: z.record(z.string(), z.unknown()).default({}),
    secrets: z
      .record(z.string().max(64), z.string().max(SECRET_VALUE_MAX_CHARS))
      .optional()
      .describe('values for this run only; never stored'),
  })
  .strict();
export type TestTool = z.infer<typeof TestTool>;

export const ToolRun = z
  .object({
    stdout: z.string(),
    stderr: z.string(),
    result: z.unknown(),
    error: z.object({ name: z.string(), message: z.string() }).nullable(),
    durationMs: z.number(),
    creditsCharged: z.number().int(),
  })
  .meta({ id: 'ToolRun' });
export type ToolRun = z.infer<typeof ToolRun>;

export const BuiltInGroup = z
  .object({
    id: z.string(),
    description: z.string(),
    available: z.boolean().describe('false: not served yet on this server (an agent cannot enable it)'),
    tools: z.array(
      z.object({
        name: z.string(),
        description: z.string(),
        parameters: z.record(z.string(), z.unknown()),
        mode: z.enum(['read', 'write']),
      }),
    ),
  })
  .meta({ id: 'BuiltInToolGroup' });
export type BuiltInGroup = z.infer<typeof BuiltInGroup>;

export const LinkTool = z
  .object({
    toolId: z
      .string()
      .min(1)
      .max(100)
      .meta({ examples: ['tool_5kY0bq9xTnq1y8Wv3mDgZA'] }),
    secrets: SecretValues.optional(),
  })
  .strict();
export type LinkTool = z.infer<typeof LinkTool>;

export const UpdateToolSecrets = z.object({ secrets: SecretValues }).strict();
export type UpdateToolSecrets = z.infer<typeof UpdateToolSecrets>;

export const AgentToolLink = z
  .object({
    agentId: z.string(),
    toolId: z.string(),
    tool: z.object({
      id: z.string(),
      name: z.string(),
      description: z.string(),
      language: z.string(),
      requiredSecrets: z.array(z.string()),
    }),
    secrets: z
      .array(z.object({ name: z.string(), set: z.boolean() }))
      .describe('each declared secret and whether this link sets it; values are never returned'),
    missingSecrets: z.array(z.string()).describe('declared secrets without a value: the tool is not offered until set'),
    ready: z.boolean().describe('the agent is offered the tool (no secret missing)'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'AgentToolLink' });
export type AgentToolLink = z.infer<typeof AgentToolLink>;

export const ToolSummary = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    language: z.string(),
    requiredSecrets: z.array(z.string()),
  })
  .meta({ id: 'CustomToolSummary' });
