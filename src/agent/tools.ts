import type { ChatTool } from '../llm/types.ts';

/** A tool the agent may call: provider tools, built-in groups and custom tools all take this shape. */
export interface AgentTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  mode: 'read' | 'write';
  /** Where it comes from (a provider id, `built-in` ...): shown in progress messages. */
  source: string;
  run(args: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
}

export function toChatTool(tool: Pick<AgentTool, 'name' | 'description' | 'parameters'>): ChatTool {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}

/** Past this many tools the model gets a catalogue to search instead of every schema at once. */
export const DIRECT_TOOL_LIMIT = 16;

const words = (s: string) => s.toLowerCase().match(/[a-z0-9]+/g) ?? [];

/** Ranks tools by how many query words their name, source and description share. */
export function searchTools(tools: readonly AgentTool[], query: string, limit = 8): AgentTool[] {
  const q = new Set(words(query));
  return tools
    .map((t) => {
      const name = words(`${t.source} ${t.name}`);
      const desc = words(t.description);
      const score = name.filter((w) => q.has(w)).length * 3 + desc.filter((w) => q.has(w)).length;
      return { t, score };
    })
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score || a.t.name.localeCompare(b.t.name))
    .slice(0, limit)
    .map((x) => x.t);
}

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
