import { z } from 'zod';
import { MAX_CHOICES } from '../../llm-upstreams/tokens.ts';

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

const MessagesBlock = z.looseObject({ type: z.string().min(1).max(64) });

/** Anthropic's Messages request: the fields the gateway translates are checked, other fields are ignored. */
export const MessagesRequest = z
  .looseObject({
    model: z.string().min(1).optional().describe('a model id from GET /models; the default model when omitted'),
    max_tokens: z.number().int().positive(),
    messages: z
      .array(
        z.looseObject({
          role: z.enum(['user', 'assistant']),
          content: z.union([z.string(), z.array(MessagesBlock)]),
        }),
      )
      .min(1),
    system: z
      .union([z.string().meta({ examples: ['You are a concise assistant.'] }), z.array(MessagesBlock)])
      .optional(),
    tools: z
      .array(
        z.looseObject({
          name: z.string().min(1).max(64),
          description: z.string().optional(),
          input_schema: z.record(z.string(), z.unknown()).optional(),
          type: z.string().optional(),
        }),
      )
      .optional(),
    tool_choice: z
      .union([
        z.looseObject({ type: z.enum(['auto', 'any', 'none']), disable_parallel_tool_use: z.boolean().optional() }),
        z.looseObject({
          type: z.literal('tool'),
          name: z.string().min(1),
          disable_parallel_tool_use: z.boolean().optional(),
        }),
      ])
      .optional(),
    temperature: z.number().min(0).max(1).optional(),
    top_p: z.number().min(0).max(1).optional(),
    stop_sequences: z
      .array(z.string().meta({ examples: ['END'] }))
      .max(4)
      .optional(),
    metadata: z.looseObject({ user_id: z.string().nullable().optional() }).optional(),
    stream: z.boolean().optional(),
  })
  .meta({ id: 'MessagesRequest' });

export const MessageTokenCount = z.object({ input_tokens: z.number().int() }).meta({ id: 'MessageTokenCount' });

/** Bounds of one embeddings request (OpenAI's own: 2048 inputs, 8192 tokens each). */
export const MAX_EMBEDDING_INPUTS = 2048;
export const MAX_EMBEDDING_INPUT_CHARS = 100_000;
const MAX_EMBEDDING_INPUT_TOKENS = 8192;
const EmbeddingText = z
  .string()
  .min(1)
  .max(MAX_EMBEDDING_INPUT_CHARS)
  .meta({ examples: ['The quick brown fox jumps over the lazy dog'] });
const EmbeddingTokens = z.array(z.number().int().min(0)).min(1).max(MAX_EMBEDDING_INPUT_TOKENS);

export const EmbeddingsRequest = z
  .looseObject({
    model: z.string().min(1).max(256).describe('an embedding model the upstream serves (from GET /models)'),
    input: z.union([
      EmbeddingText,
      z.array(EmbeddingText).min(1).max(MAX_EMBEDDING_INPUTS),
      EmbeddingTokens,
      z.array(EmbeddingTokens).min(1).max(MAX_EMBEDDING_INPUTS),
    ]),
    encoding_format: z.enum(['float', 'base64']).optional(),
    dimensions: z.number().int().positive().max(65_536).optional(),
    user: z.string().max(256).optional(),
  })
  .meta({ id: 'EmbeddingsRequest' });
