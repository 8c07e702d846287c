/**
 * Ready-to-paste configurations that point common MCP clients at this server's `/mcp` with a bearer token.
 * Each follows the client's published documentation (linked as `docsUrl`); `TOKEN_PLACEHOLDER` stands where no
 * fresh token is at hand.
 */

export const TOKEN_PLACEHOLDER = 'YOUR_SWITCHBOARD_TOKEN';
/** The name each client lists the server under. */
const SERVER_NAME = 'switchboard';

export interface McpClientConfig {
  id: 'claude-desktop' | 'claude-code' | 'cursor' | 'vscode' | 'windsurf';
  name: string;
  /** Where the snippet goes, in words. */
  where: string;
  format: 'json' | 'shell';
  text: string;
  docsUrl: string;
}

const json = (value: unknown) => JSON.stringify(value, null, 2);
/** `${name}`: a variable the client itself substitutes (an environment variable, a VS Code input). */
const clientVariable = (name: string) => `\${${name}}`;

/** `mcp-remote` refuses a plain-http URL off loopback unless told (`--allow-http`). */
function needsAllowHttp(url: URL): boolean {
  return url.protocol === 'http:' && !['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

/** A shell word in single quotes (a token or URL never holds one, but a BASE_URL might). */
function shellQuote(value: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

export function mcpClientConfigs(mcpUrl: string, token: string = TOKEN_PLACEHOLDER): McpClientConfig[] {
  const url = new URL(mcpUrl);
  const bearer = `Bearer ${token}`;
  return [
    {
      id: 'claude-desktop',
      name: 'Claude Desktop',
      where:
        'claude_desktop_config.json (Settings → Developer → Edit Config), through mcp-remote (needs Node.js); restart Claude Desktop after saving',
      format: 'json',
      // No space around the colon: Claude Desktop on Windows splits arguments at spaces (mcp-remote's README).
      text: json({
        mcpServers: {
          [SERVER_NAME]: {
            command: 'npx',
            args: [
              '-y',
              'mcp-remote',
              mcpUrl,
              '--header',
              `Authorization:${clientVariable('SWITCHBOARD_AUTH')}`,
              ...(needsAllowHttp(url) ? ['--allow-http'] : []),
            ],
            env: { SWITCHBOARD_AUTH: bearer },
          },
        },
      }),
      docsUrl: 'https://github.com/geelen/mcp-remote#readme',
    },
    {
      id: 'claude-code',
      name: 'Claude Code',
      where: 'a terminal (add --scope user to use it in every project)',
      format: 'shell',
      text: `claude mcp add --transport http ${SERVER_NAME} ${shellQuote(mcpUrl)} --header ${shellQuote(`Authorization: ${bearer}`)}`,
      docsUrl: 'https://docs.anthropic.com/en/docs/claude-code/mcp',
    },
    {
      id: 'cursor',
      name: 'Cursor',
      where: '~/.cursor/mcp.json (every project) or .cursor/mcp.json in a project',
      format: 'json',
      text: json({ mcpServers: { [SERVER_NAME]: { url: mcpUrl, headers: { Authorization: bearer } } } }),
      docsUrl: 'https://docs.cursor.com/context/model-context-protocol',
    },
    {
      id: 'vscode',
      name: 'VS Code',
      where: '.vscode/mcp.json in a workspace (VS Code asks for the token once and keeps it in its secret storage)',
      format: 'json',
      text: json({
        servers: {
          [SERVER_NAME]: {
            type: 'http',
            url: mcpUrl,
            headers: { Authorization: `Bearer ${clientVariable('input:switchboard-token')}` },
          },
        },
        inputs: [
          { type: 'promptString', id: 'switchboard-token', description: 'Switchboard access token', password: true },
        ],
      }),
      docsUrl: 'https://code.visualstudio.com/docs/copilot/reference/mcp-configuration',
    },
    {
      id: 'windsurf',
      name: 'Windsurf',
      where: '~/.codeium/windsurf/mcp_config.json (MCP toolbar → Configure), then refresh',
      format: 'json',
      text: json({ mcpServers: { [SERVER_NAME]: { serverUrl: mcpUrl, headers: { Authorization: bearer } } } }),
      docsUrl: 'https://docs.windsurf.com/windsurf/cascade/mcp',
    },
  ];
}
