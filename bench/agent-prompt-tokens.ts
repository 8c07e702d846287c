import { offeredTools, openingMessages } from '../src/agent/runtime.ts';
import type { AgentTool } from '../src/agent/tool-group.ts';
import { loadConfig } from '../src/config.ts';
import { countTokens } from '../src/llm-upstreams/tokens.ts';
import { providerCatalog } from '../src/modules/providers/catalog.ts';

/**
 * Prompt tokens of the first model call of one use-agent run at 1, 10 and 50 connections, with the shipped
 * catalog's tools: the catalogue (find/describe/call) against handing the model every schema. Tokens are
 * counted with the o200k tokenizer over the messages and tool definitions as sent.
 */
export async function benchAgentPromptTokens(): Promise<void> {
  const catalog = providerCatalog(loadConfig({}));
  const providers = catalog.providers.map((p) => p.definition);
  const prompt = 'Find the open GitHub issues labelled bug and post a summary to the #eng Slack channel.';
  const toolsFor = (connections: number): AgentTool[] =>
    Array.from({ length: connections }, (_, i) => {
      const def = providers[i % providers.length];
      if (!def) return [];
      const copy = Math.floor(i / providers.length);
      return def.tools.map((t) => ({
        name: `${t.name.startsWith(`${def.id}_`) ? t.name : `${def.id.replace(/-/g, '_')}_${t.name}`}${copy ? `_${copy + 1}` : ''}`,
        description: t.description,
        parameters: t.parameters as unknown as Record<string, unknown>,
        mode: t.mode,
        source: def.id,
        run: async () => null,
      }));
    }).flat();
  const tokensOf = async (tools: AgentTool[], offered: ReturnType<typeof offeredTools>) =>
    countTokens(JSON.stringify({ messages: openingMessages({ prompt, tools }), tools: offered }));

  console.log(`Agent prompt tokens, first model call (${providers.length} providers in the catalog)`);
  console.log('connections  tools | offered  prompt tokens | every schema  prompt tokens | saved');
  for (const n of [1, 10, 50]) {
    const tools = toolsFor(n);
    const offered = offeredTools(tools);
    const ours = await tokensOf(tools, offered);
    const all = await countTokens(
      JSON.stringify({
        messages: openingMessages({ prompt, tools: [] }),
        tools: tools.map((t) => ({
          type: 'function',
          function: { name: t.name, description: t.description, parameters: t.parameters },
        })),
      }),
    );
    console.log(
      `${String(n).padStart(11)} ${String(tools.length).padStart(6)} | ${String(offered.length).padStart(7)} ${String(ours).padStart(14)} | ${String(tools.length).padStart(12)} ${String(all).padStart(14)} | ${(100 * (1 - ours / all)).toFixed(0)}%`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchAgentPromptTokens();
