import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

/** The parts of the MCP SDK the endpoint uses, with one JSON Schema validator shared by every request. */
export interface McpSdk {
  McpServer: typeof McpServer;
  /** The transport on web-standard Request and Response: the endpoint writes the answer itself (endpoint.ts). */
  WebStandardStreamableHTTPServerTransport: typeof WebStandardStreamableHTTPServerTransport;
  JSONRPCMessageSchema: typeof JSONRPCMessageSchema;
  SUPPORTED_PROTOCOL_VERSIONS: readonly string[];
  /**
   * The SDK otherwise builds an Ajv instance per server, the largest part of constructing one (our tools
   * validate with zod; Ajv serves only elicitation).
   */
  jsonSchemaValidator: AjvJsonSchemaValidator;
}

let loading: Promise<McpSdk> | undefined;

/**
 * The SDK is imported on the first /mcp request, not at start: it and its dependencies cost start-up time and
 * memory that a process serving no MCP client never needs (docs/benchmarks.md, "Figures behind the code").
 */
export function loadMcpSdk(): Promise<McpSdk> {
  loading ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/mcp.js'),
    import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('@modelcontextprotocol/sdk/validation/ajv'),
  ]).then(
    ([mcp, http, types, ajv]) => ({
      McpServer: mcp.McpServer,
      WebStandardStreamableHTTPServerTransport: http.WebStandardStreamableHTTPServerTransport,
      JSONRPCMessageSchema: types.JSONRPCMessageSchema,
      SUPPORTED_PROTOCOL_VERSIONS: types.SUPPORTED_PROTOCOL_VERSIONS,
      jsonSchemaValidator: new ajv.AjvJsonSchemaValidator(),
    }),
    (err: unknown) => {
      loading = undefined;
      throw err;
    },
  );
  return loading;
}
