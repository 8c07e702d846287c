import type { ServiceContext } from '../context.ts';
import type { AgentRow } from '../db/schema/index.ts';
import type { ChatTool } from '../llm-upstreams/types.ts';

/** A tool the agent may call: provider tools, built-in groups and custom tools all take this shape. */
export interface AgentTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  mode: 'read' | 'write';
  /** Where it comes from (a provider id, `built-in` ...): shown in progress messages. */
  source: string;
  /** A provider tool's connection: the activity log names it. */
  connectionId?: string;
  /** More words the tool search matches (a provider's label), never shown to the model. */
  keywords?: string;
  /** The provider's category (`video-meetings`): matched as loosely as a description. */
  category?: string;
  /** What the provider is for (its description): matched loosely, for a request's domain words ("e-mail"). */
  about?: string;
  /**
   * Runs the call. A tool that bills on its own (a sandbox run) tells `charged` what it cost, so the run's
   * total, `X-Credits-Consumed` and an agent's monthly cap count it like a model call.
   */
  run(args: Record<string, unknown>, signal: AbortSignal, charged?: (credits: number) => void): Promise<unknown>;
}

/** The run a tool group gives tools to: the agent, who the chat is for, and the conversation. */
export interface ToolGroupRun {
  agent: AgentRow;
  endUserId: string;
  conversationId: string;
  /** The chat is the account's own (not a channel's end user): owner-only groups give their tools. */
  owner: boolean;
}

/**
 * A group of agent tools an area offers (src/composition.ts lists them in the order the model sees them): a
 * built-in group an agent enables by `name`, or, without a name, tools every agent has (its linked tools).
 */
export interface AgentToolGroup {
  name?: string;
  /** Given only to the account's own chats, never to a channel's end users. */
  ownerOnly?: boolean;
  tools(ctx: ServiceContext, run: ToolGroupRun): AgentTool[] | Promise<AgentTool[]>;
  /** What the group adds to the agent's instructions when the agent enables it (a skill index). */
  instructions?(ctx: ServiceContext, agent: AgentRow): Promise<string>;
}

export function toChatTool(tool: Pick<AgentTool, 'name' | 'description' | 'parameters'>): ChatTool {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

/** Past this many tools the model gets a catalogue to search instead of every schema at once. */
export const DIRECT_TOOL_LIMIT = 16;

/** The agent's `find_tools` and `GET /providers/tools/search` share one ranking (src/lib/tool-search.ts). */
export { searchTools } from '../lib/tool-search.ts';

/** The three catalogue tools: find, describe (which also loads the tool), and call. */
export const CATALOG_TOOLS: ChatTool[] = [
  toChatTool({
    name: 'find_tools',
    description:
      "Search the tools of the user's connected services by keywords (service name, action, object). Returns names and one-line descriptions.",
    parameters: {
      type: 'object',
      properties: { query: { type: 'string', description: 'keywords, e.g. "github create issue"' } },
      required: ['query'],
    },
  }),
  toChatTool({
    name: 'describe_tool',
    description: 'Get the full parameter schema of a tool found with find_tools. The tool can then be called directly.',
    parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  }),
  toChatTool({
    name: 'call_tool',
    description: 'Run a tool by name with its arguments (an object matching its schema).',
    parameters: {
      type: 'object',
      properties: { name: { type: 'string' }, arguments: { type: 'object' } },
      required: ['name', 'arguments'],
    },
  }),
];
