import { listActiveConnections } from '../modules/connections/service.ts';
import { providerAgentTools } from '../modules/connections/tools.ts';
import type { McpSources } from './server.ts';

/** The MCP tools' data in production: the caller's active connections and their provider tools. */
export const connectionSources: McpSources = {
  async activeConnections(ctx) {
    return (await listActiveConnections(ctx)).map((c) => ({
      serviceId: c.providerId,
      serviceLabel: c.metadata.providerName,
      connectedUserAccount: { email: c.metadata.email ?? null, displayName: c.metadata.displayName },
    }));
  },
  agentTools: (ctx, opts) => providerAgentTools(ctx, opts),
};
