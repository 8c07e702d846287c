/** The agents area's front door: what other areas, transports and the composition root use from it. */

export type { ChatOptions, ChatOutcome } from './chat.service.ts';
export { chatWithAgent, toolsOf } from './chat.service.ts';
export { AgentConfigCache, agentConfigChanged, cachedAgentConfig } from './config-cache.ts';
export {
  conversationTranscript,
  deleteConversation,
  listConversations,
  listMessages,
  OWNER,
  ownedConversation,
  toConversation,
} from './conversations.service.ts';
export { ConversationLog, recoverConversationRows } from './events.service.ts';
export { agentJobs } from './jobs.ts';
export { memoryToolGroup } from './memories.service.ts';
export { agentRoutes } from './routes.ts';
export { failOrphanedRuns } from './runs.service.ts';
export type { Agent, BuiltInToolGroup, Conversation, Message } from './schema.ts';
export {
  AgentParams,
  AVAILABLE_GROUPS,
  BUILT_IN_TOOL_GROUPS,
  CreateAgent,
  GROUP_DESCRIPTIONS,
  ListQuery,
  UpdateAgent,
} from './schema.ts';
export type { AgentDeletionHook } from './service.ts';
export {
  AGENT_DELETED_REASON,
  createAgent,
  DEFAULT_AGENT_ID,
  existingAgentId,
  getAgent,
  listAgents,
  ownedAgent,
  updateAgent,
} from './service.ts';
