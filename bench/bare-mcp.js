import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { z } from 'zod';

/**
 * The baseline of the MCP benchmark: the SDK's McpServer on its Streamable HTTP transport, stateless (a fresh
 * server and transport per request, as the SDK's stateless example does), on plain node:http, with the same two
 * tools answering the same shapes from memory. No auth, no database, no logging. Like Switchboard it shares one
 * JSON Schema validator between requests (the SDK's default builds an Ajv instance per server, which would
 * halve this baseline). Started the way the service starts (its own process, plain JavaScript). `node bench/bare-mcp.js '<active JSON>'` takes the
 * `_meta.active` list to answer. Prints its URL; serves until SIGTERM.
 */
const jsonSchemaValidator = new AjvJsonSchemaValidator();
const active = JSON.parse(process.argv[2] ?? '[]');
const text = `${active.length} connected services:\n${active
  .map(
    (c) =>
      `- ${c.serviceLabel} (${c.serviceId}): ${c.connectedUserAccount.displayName}` +
      (c.connectedUserAccount.email ? ` <${c.connectedUserAccount.email}>` : ''),
  )
  .join('\n')}`;

function mcpServer() {
  const server = new McpServer(
    { name: 'bare', version: '1.0.0' },
    { capabilities: { tools: {} }, jsonSchemaValidator },
  );
  server.registerTool(
    'list-connections',
    {
      title: 'List connected services',
      description: 'List the services the user has connected, with the account connected at each.',
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async () => ({ content: [{ type: 'text', text }], _meta: { active } }),
  );
  server.registerTool(
    'use-agent',
    {
      title: 'Use the agent on connected services',
      description: "Act on the user's connected services with an agent.",
      inputSchema: {
        prompt: z.string().min(1).max(20_000).describe('What to do, in plain language'),
        connector: z.string().min(1).max(100).optional().describe('Limit the agent to one service id'),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
    },
    async () => ({ content: [{ type: 'text', text: 'ok' }] }),
  );
  return server;
}

const http = createServer(async (req, res) => {
  if (req.method !== 'POST' || req.url !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  const server = mcpServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res);
});
http.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const addr = http.address();
  process.stdout.write(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}\n`);
});
process.on('SIGTERM', () => http.close(() => process.exit(0)));
