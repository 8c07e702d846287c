import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  type StreamableHTTPClientTransportOptions,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { TestHarness } from '../../test/harness.ts';
import type { AgentTool } from '../agent/tool-group.ts';
import type { App } from '../http/types.ts';
import type { McpSources } from './server.ts';

/** What the fake `slack_post_message` tool was asked to post, in order (shared by the test files of a worker). */
export const mcpWrites: unknown[] = [];

/**
 * Two services as the MCP tools see them: GitHub with one read tool, Slack with one write tool, the write tool
 * given to the agent only when the token's provider permission for Slack is read-write.
 */
export const testMcpSources: McpSources = {
  async activeConnections() {
    return [
      {
        serviceId: 'github',
        serviceLabel: 'GitHub',
        connectedUserAccount: { email: 'ada@example.test', displayName: 'Ada' },
      },
      { serviceId: 'slack', serviceLabel: 'Slack', connectedUserAccount: { email: null, displayName: 'ada' } },
    ];
  },
  async agentTools(ctx, { connector }) {
    const all: AgentTool[] = [
      {
        name: 'github_get_issue',
        description: 'Read a GitHub issue',
        parameters: { type: 'object', properties: { number: { type: 'integer' } } },
        mode: 'read',
        source: 'github',
        run: async (args) => ({
          number: args.number,
          title: 'Login broken',
          token: 'ghp_0123456789abcdefghijABCDEFGHIJ',
        }),
      },
      {
        name: 'slack_post_message',
        description: 'Post to Slack',
        parameters: { type: 'object', properties: { text: { type: 'string' } } },
        mode: 'write',
        source: 'slack',
        run: async (args) => {
          mcpWrites.push(args);
          return { ok: true };
        },
      },
    ];
    const perm = (p: string) => ctx.actor.providerPermissions[p] ?? ctx.actor.defaultProviderPermission;
    return all.filter(
      (t) => (!connector || t.source === connector) && (t.mode === 'read' || perm(t.source) === 'read-write'),
    );
  },
};

/** An app over the harness's database with the test sources, listening on loopback: its `/mcp` URL. */
export async function listenMcpApp(h: TestHarness): Promise<{ app: App; url: URL }> {
  const { buildApp } = await import('../app.ts');
  const app = await buildApp({
    config: h.config,
    database: h.database,
    keyRing: h.keyRing,
    mcpSources: testMcpSources,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  return { app, url: new URL(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/mcp`) };
}

/** The MCP SDK client connected to `url` with the token (and any other headers or fetch). */
export async function connectMcp(
  url: URL,
  token: string,
  opts: { headers?: Record<string, string>; fetch?: StreamableHTTPClientTransportOptions['fetch'] } = {},
): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { authorization: `Bearer ${token}`, ...opts.headers } },
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
    }),
  );
  return client;
}
