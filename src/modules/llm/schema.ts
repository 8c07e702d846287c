import { z } from 'zod';
import { MAX_CHOICES } from '../../llm/tokens.ts';

const Message = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string() })), z.null()]).optional(),
  name: z.string().optional(),
  tool_calls: z
    .array(
      z.looseObject({
        id: z.string(),
        type: z.literal('function'),
        function: z.object({ name: z.string(), arguments: z.string() }),
      }),
    )
    .optional(),
  tool_call_id: z.string().optional(),
});

const Tool = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1).max(64),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});

/** SPEC §4 fields are checked; any other OpenAI field passes through to the upstream untouched. */
export const ChatCompletionRequest = z
  .looseObject({
    model: z.string().min(1).optional().describe('a model id from GET /models; the default model when omitted'),
    messages: z.array(Message).min(1),
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().min(0).max(1).optional(),
    max_tokens: z.number().int().positive().optional(),
    max_completion_tokens: z.number().int().positive().optional(),
    n: z.number().int().min(1).max(MAX_CHOICES).optional().describe('choices to generate; each is billed'),
    best_of: z.number().int().min(1).max(MAX_CHOICES).optional(),
    stream: z.boolean().optional(),
    stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
    stop: z.union([z.string(), z.array(z.string()).max(4), z.null()]).optional(),
    tools: z.array(Tool).optional(),
    tool_choice: z.unknown().optional(),
    response_format: z.looseObject({ type: z.enum(['text', 'json_object', 'json_schema']) }).optional(),
    seed: z.number().int().nullable().optional(),
  })
  .meta({ id: 'ChatCompletionRequest' });
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

export const Model = z
  .object({
    id: z.string(),
    object: z.literal('model'),
    created: z.number().int(),
    owned_by: z.string(),
    tier: z.string(),
    context_window: z.number().int(),
    max_output_tokens: z.number().int(),
    capabilities: z.object({ tools: z.boolean(), vision: z.boolean(), streaming: z.boolean(), json: z.boolean() }),
    pricing: z.object({
      prompt: z.number().int().describe('credits per million prompt tokens'),
      completion: z.number().int().describe('credits per million completion tokens'),
      unit: z.literal('credits_per_million_tokens'),
    }),
  })
  .meta({ id: 'Model' });

export const ModelList = z.object({ object: z.literal('list'), data: z.array(Model) }).meta({ id: 'ModelList' });
