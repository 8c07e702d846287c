import { listActiveConnections, providerAgentTools } from '../modules/connections/index.ts';
import { knowledgeAgentTools } from '../modules/knowledge/index.ts';
import type { McpSources } from './server.ts';

const KNOWLEDGE_CONNECTOR = 'knowledge-base';

/** The MCP tools' data in production: the caller's active connections and their provider tools. */
export const connectionSources: McpSources = {
  async activeConnections(ctx) {
    return (await listActiveConnections(ctx)).map((c) => ({
      serviceId: c.providerId,
      serviceLabel: c.metadata.providerName,
      connectedUserAccount: { email: c.metadata.email ?? null, displayName: c.metadata.displayName },
    }));
  },
  // The caller's knowledge bases come along unless the call names another service (`connector: "knowledge-base"` names them).
  async agentTools(ctx, opts) {
    if (opts.connector === KNOWLEDGE_CONNECTOR) return knowledgeAgentTools(ctx);
    const providers = await providerAgentTools(ctx, opts);
    return opts.connector ? providers : [...providers, ...knowledgeAgentTools(ctx)];
  },
};
