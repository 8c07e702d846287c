/** SPEC §5 scopes; the descriptions are what the consent screen and `GET /auth-scopes` show. */
export const SCOPES = {
  'universal-mcp-read': 'Discover the MCP tools (initialize, tools/list)',
  'universal-mcp-read-write': 'Full MCP access, including running tools (tools/call)',
  'llm-all': 'Use the LLM gateway: chat completions and the model list',
  'agents-use': 'Chat with existing agents; read agents, conversations, memories and linked tools',
  'agents-all': 'Create, manage and delete agents, tools, skills and scheduled tasks',
  connections: 'Manage your connections to external services',
  account:
    'Read and update your account details; use the knowledge-base API (never your apps, access tokens or deleting the account: those need you signed in)',
  'messaging-channels': 'Manage messaging channels (Telegram, WhatsApp, web chat)',
  openid: 'OpenID Connect identity',
  profile: 'Your profile information',
  email: 'Your e-mail address',
} as const;

export type Scope = keyof typeof SCOPES;
export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

export function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPES, value);
}
