import { z } from 'zod';
import { pageQuery, Timestamp } from '../../lib/pagination.ts';

/**
 * SPEC §2 built-in tool groups, plus `knowledge-base` (the account's wikis; an extension). A group whose
 * feature has not landed is refused when enabled, with a 422 that says so: `AVAILABLE_GROUPS` is the one list
 * that later features extend.
 */
export const BUILT_IN_TOOL_GROUPS = [
  'provider-tools',
  'skills',
  'agent-memory',
  'account-tasks',
  'execute-code',
  'knowledge-base',
] as const;
export type BuiltInToolGroup = (typeof BUILT_IN_TOOL_GROUPS)[number];
export const AVAILABLE_GROUPS: ReadonlySet<BuiltInToolGroup> = new Set([
  'provider-tools',
  'knowledge-base',
  'agent-memory',
  'skills',
  'execute-code',
  'account-tasks',
]);
export const DEFAULT_GROUPS: BuiltInToolGroup[] = ['provider-tools'];

/** What each group gives the agent, in a sentence (the tools API and the agent's page show it). */
export const GROUP_DESCRIPTIONS: Record<BuiltInToolGroup, string> = {
  'provider-tools': "The tools of the account's connected services (write tools need read-write permission)",
  skills: "Loads the full prompt of one of the agent's linked skills (skill-load)",
  'agent-memory': 'Long-term memory of each end user across conversations',
  'account-tasks': 'Scheduled task management',
  'execute-code': 'Runs JavaScript or Python in the code sandbox',
  'knowledge-base': "The account's knowledge bases (wikis): search, read, add sources",
};

export const UsageLimits = z
  .object({
    dailyMessagesPerUser: z.number().int().min(1).max(1_000_000).optional(),
    monthlyCreditsCap: z.number().int().min(1).max(1_000_000_000).optional(),
    limitReachedMessage: z.string().max(2000).optional(),
  })
  .strict()
  .meta({ id: 'AgentUsageLimits' });

const fields = {
  name: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .meta({ examples: ['Support bot'] }),
  llm: z
    .string()
    .min(1)
    .max(200)
    .describe('a model id of GET /models; default: the default model')
    .meta({ examples: ['gpt-4o-mini'] }),
  personality: z
    .string()
    .max(20_000)
    .describe('system-style instructions')
    .meta({
      examples: [
        'You are the support agent of Acme Corp. Answer briefly and politely; look orders up before answering.',
      ],
    }),
  description: z
    .string()
    .max(2000)
    .meta({ examples: ['Answers customer questions about orders and returns.'] }),
  temperature: z.number().min(0).max(2),
  firstPrompt: z
    .string()
    .max(4000)
    .describe("the conversation's opening assistant message")
    .meta({ examples: ['Hi! I can help with your orders and returns. What do you need?'] }),
  enabledBuiltInTools: z.array(z.enum(BUILT_IN_TOOL_GROUPS)).max(BUILT_IN_TOOL_GROUPS.length),
  billingAccountType: z.enum(['owner']),
  usageLimits: UsageLimits,
};

export const CreateAgent = z
  .object({
    name: fields.name,
    llm: fields.llm.optional(),
    personality: fields.personality.default(''),
    description: fields.description.default(''),
    temperature: fields.temperature.default(0.7),
    firstPrompt: fields.firstPrompt.default(''),
    enabledBuiltInTools: fields.enabledBuiltInTools.default(DEFAULT_GROUPS),
    billingAccountType: fields.billingAccountType.default('owner'),
    usageLimits: fields.usageLimits.default({}),
  })
  .strict();
export type CreateAgent = z.infer<typeof CreateAgent>;

export const UpdateAgent = z
  .object({
    name: fields.name.optional(),
    llm: fields.llm.optional(),
    personality: fields.personality.optional(),
    description: fields.description.optional(),
    temperature: fields.temperature.optional(),
    firstPrompt: fields.firstPrompt.optional(),
    enabledBuiltInTools: fields.enabledBuiltInTools.optional(),
    billingAccountType: fields.billingAccountType.optional(),
    usageLimits: fields.usageLimits.optional(),
  })
  .strict();
export type UpdateAgent = z.infer<typeof UpdateAgent>;

export const Agent = z
  .object({
    id: z.string().meta({ examples: ['agt_5kY0bq9xTnq1y8Wv3mDgZA'] }),
    accountId: z.string(),
    name: z.string(),
    llm: z.string(),
    personality: z.string(),
    description: z.string(),
    temperature: z.number(),
    firstPrompt: z.string(),
    enabledBuiltInTools: z.array(z.string()),
    billingAccountType: z.string(),
    usageLimits: UsageLimits,
    isDefault: z.boolean(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Agent' });
export type Agent = z.infer<typeof Agent>;

export const AgentParams = z.object({ agentId: z.string().min(1).max(100) });
export const ConversationParams = AgentParams.extend({ conversationId: z.string().min(1).max(100) });

const ChatContentPart = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string().max(200_000) }),
  z
    .object({ type: z.literal('file'), file: z.object({ file_id: z.string().min(1).max(100) }) })
    .describe('a file uploaded with POST /agents/:agentId/chat/files'),
]);
export const ChatMessageInput = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.union([z.string().max(200_000), z.array(ChatContentPart).min(1).max(50)]),
});

export const AgentChatRequest = z
  .object({
    messages: z.array(ChatMessageInput).min(1).max(200),
    stream: z.boolean().optional(),
    temperature: z.number().min(0).max(2).optional(),
    max_tokens: z.number().int().min(1).max(200_000).optional(),
    conversationId: z.string().min(1).max(100).optional(),
    model: z.string().max(200).optional().describe('ignored: the agent decides its model'),
    user: z.string().max(200).optional().describe('the end user this chat is for (usage limits count per end user)'),
  })
  .meta({ id: 'AgentChatRequest' });
export type AgentChatRequest = z.infer<typeof AgentChatRequest>;

/** An agent's answer without `stream`: an OpenAI chat.completion of one choice, the agent's final text. */
export const AgentChatCompletion = z
  .object({
    id: z.string().meta({ examples: ['chatcmpl_5kY0bq9xTnq1y8Wv3mDgZA'] }),
    object: z.literal('chat.completion'),
    created: z
      .number()
      .int()
      .meta({ examples: [1767225600] }),
    model: z.string().meta({ examples: ['gpt-4o-mini'] }),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({
          role: z.literal('assistant'),
          content: z.string().meta({ examples: ['Order 1042 left the warehouse on Monday.'] }),
        }),
        finish_reason: z.literal('stop'),
      }),
    ),
    // Counts as the upstream reported them: not checked for being whole, so no upstream's figure fails the answer.
    usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number() }),
  })
  .meta({ id: 'AgentChatCompletion' });
export type AgentChatCompletion = z.infer<typeof AgentChatCompletion>;

export const Conversation = z
  .object({
    id: z.string().meta({ examples: ['conv_Qm3v0bq9xTnq1y8Wv3mDgZ'] }),
    agentId: z.string(),
    title: z.string(),
    metadata: z.record(z.string(), z.unknown()),
    lastActivityAt: Timestamp,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Conversation' });
export type Conversation = z.infer<typeof Conversation>;

export const CreateConversation = z
  .object({
    title: z
      .string()
      .max(300)
      .optional()
      .meta({ examples: ['Order 1042 refund'] }),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type CreateConversation = z.infer<typeof CreateConversation>;

export const Message = z
  .object({
    id: z.string(),
    role: z.enum(['system', 'user', 'assistant', 'tool']),
    content: z.string().nullable(),
    toolCalls: z
      .array(
        z.object({
          id: z.string(),
          type: z.literal('function'),
          function: z.object({ name: z.string(), arguments: z.string() }),
        }),
      )
      .nullable(),
    toolCallId: z.string().nullable(),
    toolName: z.string().nullable(),
    error: z
      .string()
      .nullable()
      .describe(
        'set on the assistant message that marks a failed turn (its content null): why the agent did not answer',
      ),
    createdAt: Timestamp,
    /** Messages are never edited: the time it was written, as `createdAt` (SPEC §2 gives a message timestamps). */
    updatedAt: Timestamp,
  })
  .meta({ id: 'ConversationMessage' });
export type Message = z.infer<typeof Message>;

export const ListQuery = pageQuery();

export const MemoryParams = AgentParams.extend({ memoryId: z.string().min(1).max(100) });
export const MemoryListQuery = ListQuery.extend({
  endUserId: z.string().max(200).optional().describe("one end user's memories (the account's own: owner)"),
});
export const MemorySearchQuery = z.object({
  query: z.string().trim().min(1).max(2000),
  endUserId: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(50).default(10),
});
export const Memory = z
  .object({
    id: z.string().meta({ examples: ['mem_Xq3v9dH2TQm0bq1yWzY8cA'] }),
    endUserId: z.string(),
    content: z.string(),
    conversationId: z.string().nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    score: z.number().optional().describe('search only: how close it is'),
  })
  .meta({ id: 'AgentMemory' });

export const ChatFile = z
  .object({
    fileId: z.string().meta({ examples: ['file_9hQ2v0bq9xTnq1y8Wv3mDg'] }),
    filename: z.string(),
    mimeType: z.string(),
    size: z.number().int(),
    purpose: z.literal('chat'),
  })
  .meta({ id: 'ChatFile' });
