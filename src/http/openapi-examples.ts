import { ID_PREFIX, type IdKind } from '../lib/ids.ts';

/**
 * Example values for the API reference (/docs), so a request or answer shows what the service really takes and
 * gives (`agt_5kY0…`, `Support bot`, `0 9 * * 1`) instead of `"string"`. A schema's own example (zod
 * `.meta({ examples })`) always wins; these fill the rest, by the property's name within a component, then by
 * the name alone. One place, so the reference stays consistent.
 */

/** An id as the service mints it: the kind's prefix and 22 base64url characters. */
export const exampleId = (kind: IdKind) => `${ID_PREFIX[kind]}_5kY0bq9xTnq1y8Wv3mDgZA`;

/** The kind of id `id` holds in each component. */
const ID_OF: Readonly<Record<string, string>> = {
  Account: exampleId('account'),
  PersonalAccessToken: exampleId('pat'),
  CreatedPersonalAccessToken: exampleId('pat'),
  AuthClient: exampleId('authClient'),
  CreatedAuthClient: exampleId('authClient'),
  Connection: exampleId('connection'),
  CreditTransaction: exampleId('creditTransaction'),
  MessagingChannel: exampleId('messagingChannel'),
  Agent: exampleId('agent'),
  Conversation: exampleId('conversation'),
  ConversationMessage: exampleId('message'),
  AgentMemory: exampleId('memory'),
  ChatFile: exampleId('chatFile'),
  KnowledgeBase: exampleId('knowledgeBase'),
  KnowledgeSource: exampleId('knowledgeSource'),
  KnowledgeLog: exampleId('knowledgeLog'),
  ScheduledTask: exampleId('scheduledTask'),
  ScheduledTaskRun: exampleId('scheduledTaskRun'),
  Skill: exampleId('skill'),
  SkillSummary: exampleId('skill'),
  CustomTool: exampleId('customTool'),
  CustomToolSummary: exampleId('customTool'),
  Provider: 'github',
  Model: 'gpt-4o-mini',
  BuiltInToolGroup: 'provider-tools',
};

/** Names and descriptions that differ by component. */
const BY_COMPONENT: Readonly<Record<string, string>> = {
  'Agent.name': 'Support bot',
  'Agent.description': 'Answers customer questions about orders and returns.',
  'Skill.name': 'Weekly report',
  'SkillSummary.name': 'Weekly report',
  'GeneratedSkillPrompt.name': 'Weekly report',
  'Skill.description': "Writes the Monday status report from the week's closed issues",
  'SkillSummary.description': "Writes the Monday status report from the week's closed issues",
  'GeneratedSkillPrompt.description': "Writes the Monday status report from the week's closed issues",
  'CustomTool.name': 'weather_lookup',
  'CustomToolSummary.name': 'weather_lookup',
  'CustomTool.description': 'Returns the current weather for a city.',
  'CustomToolSummary.description': 'Returns the current weather for a city.',
  'KnowledgeBase.name': 'Company wiki',
  'KnowledgeBase.description': 'Everything we know about our customers and partners.',
  'KnowledgeSource.name': 'Q3 call notes',
  'ScheduledTask.name': 'Monday digest',
  'PersonalAccessToken.name': 'CI deploy',
  'CreatedPersonalAccessToken.name': 'CI deploy',
  'CreatePersonalAccessToken.name': 'CI deploy',
  'AuthClient.name': 'Notes App',
  'CreatedAuthClient.name': 'Notes App',
  'CreateAuthClient.name': 'Notes App',
  'UpdateAuthClient.name': 'Notes App',
  'AuthClientBranding.description': 'Take notes and let an assistant file them where they belong.',
  'Account.name': 'Ada Lovelace',
  'UpdateAccount.name': 'Ada Lovelace',
  'Signup.name': 'Ada Lovelace',
  'Provider.label': 'GitHub',
  'Provider.description': 'Repositories, issues and pull requests.',
  'Provider.category': 'developer-tools',
  'Provider.apiKey.label': 'API token',
  'Provider.apiKey.help':
    'An Atlassian API token; Jira takes it with the e-mail address of your account, on your site.',
  'Provider.apiKey.docsUrl': 'https://id.atlassian.com/manage-profile/security/api-tokens',
  'Provider.apiKey.fields.name': 'site',
  'Provider.apiKey.fields.label': 'Site',
  'Provider.apiKey.fields.placeholder': 'acme',
  'Provider.apiKey.fields.pattern': '[a-z0-9][a-z0-9-]{0,62}',
  'ProviderInput.apiKey.label': 'API token',
  'ProviderInput.apiKey.help':
    'An Atlassian API token; Jira takes it with the e-mail address of your account, on your site.',
  'ProviderInput.apiKey.docsUrl': 'https://id.atlassian.com/manage-profile/security/api-tokens',
  'ProviderInput.apiKey.fields.name': 'site',
  'ProviderInput.apiKey.fields.label': 'Site',
  'ProviderInput.apiKey.fields.placeholder': 'acme',
  'ProviderInput.apiKey.fields.pattern': '[a-z0-9][a-z0-9-]{0,62}',
  'Provider.apiKey.fields.default': 'acme',
  'Provider.connectFields.name': 'loginDomain',
  'Provider.connectFields.label': 'Salesforce login domain',
  'Provider.connectFields.description': 'login for production, test for a sandbox, or your My Domain: acme.my',
  'Provider.connectFields.placeholder': 'login',
  'Provider.connectFields.pattern': 'login|test|[A-Za-z0-9][A-Za-z0-9-]{0,39}\\.my',
  'Provider.connectFields.default': 'login',
  'ProviderInput.apiKey.fields.default': 'acme',
  'ProviderInput.connectFields.name': 'loginDomain',
  'ProviderInput.connectFields.label': 'Salesforce login domain',
  'ProviderInput.connectFields.description': 'login for production, test for a sandbox, or your My Domain: acme.my',
  'ProviderInput.connectFields.placeholder': 'login',
  'ProviderInput.connectFields.pattern': 'login|test|[A-Za-z0-9][A-Za-z0-9-]{0,39}\\.my',
  'ProviderInput.connectFields.default': 'login',
  'Connection.apiBaseUrl': 'https://acme.my.salesforce.com/services/data/v62.0',
  'ConnectionInput.apiBaseUrl': 'https://acme.my.salesforce.com/services/data/v62.0',
  'ProviderTool.name': 'github_get_issue',
  'ProviderTool.description': 'Get one issue of a repository.',
  'AuthScope.name': 'agents-use',
  'AuthScope.description': 'List agents and chat with them',
  'BuiltInToolGroup.description': "Act through the owner's connected services",
  'KnowledgeLog.message': 'Compiled source Q3 call notes: 2 pages updated, 1 created.',
  'KnowledgeLintFinding.message': 'Acme Corp and ACME Corporation look like the same company.',
  'ToolRun.error.name': 'TypeError',
  'ToolRun.error.message': "Cannot read properties of undefined (reading 'temperature')",
  'ConversationMessage.toolCalls.id': 'call_Qm3v0bq9xTnq1y8Wv3mDg',
  'ChatCompletionRequest.messages.tool_calls.id': 'call_Qm3v0bq9xTnq1y8Wv3mDg',
  'AgentChatRequest.messages.content': 'Where is my order 1042?',
  'ChatCompletionRequest.messages.content': 'Summarize this thread in three bullet points.',
  'ChatCompletionRequest.messages.content.type': 'text',
  'PendingConnectionFields.fields.name': 'subdomain',
  'PendingConnectionFields.fields.label': 'Your Zendesk subdomain',
  'PendingConnectionFields.fields.description': 'The part before .zendesk.com',
  'PendingConnectionFields.fields.placeholder': 'acme',
  'PendingConnectionFields.fields.pattern': '^[a-z0-9-]+$',
  'InitiateConnectionResponse.providerMetadata.name': 'GitHub',
  'PendingConnectionFields.providerMetadata.name': 'Zendesk',
  'PendingConnectionFields.providerId': 'zendesk',
  'AgentToolLink.tool.id': exampleId('customTool'),
  'AgentToolLink.tool.name': 'weather_lookup',
  'AgentToolLink.tool.description': 'Returns the current weather for a city.',
  'AgentToolLink.secrets.name': 'WEATHER_API_KEY',
  'AgentSkillLink.skill.id': exampleId('skill'),
  'BuiltInToolGroup.tools.name': 'memory_save',
  'BuiltInToolGroup.tools.description': 'Remember a fact about the user for later conversations.',
  'ProviderToolResult.toolName': 'github_get_issue',
  'ScheduledTaskRun.error': 'The model upstream answered 503 three times; the run gave up.',
  'ScheduledTask.lastRun.error': 'The model upstream answered 503 three times; the run gave up.',
};

/** By the property's name alone. */
const BY_NAME: Readonly<Record<string, string>> = {
  accountId: exampleId('account'),
  agentId: exampleId('agent'),
  conversationId: exampleId('conversation'),
  kbId: exampleId('knowledgeBase'),
  taskId: exampleId('scheduledTask'),
  skillId: exampleId('skill'),
  toolId: exampleId('customTool'),
  connectionId: exampleId('connection'),
  pendingId: exampleId('pendingConnection'),
  clientId: exampleId('authClient'),
  client_id: exampleId('authClient'),
  catalogEntryId: 'github',
  providerId: 'github',
  toolName: 'github_get_issue',
  file_id: exampleId('chatFile'),
  sourceIds: exampleId('knowledgeSource'),
  knowledge_base_ids: exampleId('knowledgeBase'),
  name: 'Acme',
  label: 'GitHub',
  providerLabel: 'GitHub',
  description: 'Repositories, issues and pull requests.',
  title: 'Acme Corp',
  summary: 'Manufacturing customer since 2021; renews in March.',
  content: '# Acme Corp\n\nAcme is a customer since 2021. Its contact is [[Jane Doe]].',
  text: 'What does this invoice say is due?',
  message: 'Done.',
  prompt: 'Summarize my unread email from the last week.',
  personality: 'You are the support agent of Acme Corp. Answer briefly and politely.',
  firstPrompt: 'Hi! I can help with your orders and returns. What do you need?',
  limitReachedMessage: "You've reached today's message limit. Please come back tomorrow.",
  customInstructions: 'Keep one page per company.',
  llm: 'gpt-4o-mini',
  model: 'gpt-4o-mini',
  owned_by: 'openai',
  tier: 'standard',
  user: 'user-42',
  endUserId: 'user-42',
  email: 'ada@example.com',
  password: 'correct horse battery staple',
  avatar: 'https://avatars.example.com/u/42.png',
  logo: 'https://notes.example.com/logo.png',
  logoUrl: 'https://switchboard.example.com/providers/logos/github.svg',
  providerIcon: 'https://switchboard.example.com/providers/logos/github.svg',
  providerName: 'GitHub',
  displayName: 'Ada Lovelace',
  providerUserId: '583231',
  scope: 'account llm-all',
  scopes: 'account',
  allowedScopes: 'account',
  roles: 'confidential',
  redirectUris: 'https://notes.example.com/callback',
  redirect_uris: 'https://notes.example.com/callback',
  redirect_uri: 'https://notes.example.com/callback',
  redirectUrl: 'https://notes.example.com/settings/integrations?connectionId=conn_5kY0bq9xTnq1y8Wv3mDgZA',
  authorizationUrl:
    'https://github.com/login/oauth/authorize?client_id=Iv1.8a61f9b3a7aba766&state=ost_Hq9xTnq1y8Wv3mDgZA5kY0',
  client_name: 'Notes App',
  client_secret: 'sec_Hq9xTnq1y8Wv3mDgZA5kY0bq9xTnq1y8Wv3mDgZA5kY0b',
  clientSecret: 'sec_Hq9xTnq1y8Wv3mDgZA5kY0bq9xTnq1y8Wv3mDgZA5kY0b',
  code: 'c0ffee-4f1d-9a2b',
  code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
  access_token: 'eyJhbGciOiJSUzI1NiIsImtpZCI6ImtleV81a1kwIn0.eyJzdWIiOiJhY2NfNWtZMCJ9.c2lnbmF0dXJl',
  refresh_token: 'rt_Hq9xTnq1y8Wv3mDgZA5kY0bq9xTnq1y8Wv3mDgZA5kY0b',
  id_token: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhY2NfNWtZMCJ9.c2lnbmF0dXJl',
  session_token: 'sess_Hq9xTnq1y8Wv3mDgZA5kY0bq9xTnq1y8Wv3mDgZA5kY0b',
  personal_access_token: 'pat_Hq9xTnq1y8Wv3mDgZA5kY0bq9xTnq1y8Wv3mDgZA5kY0b',
  token_prefix: 'pat_Hq9xTn',
  bearerToken: 'ghp_16C7e42F292c6912E7710c838347Ae178B4a',
  resource: 'https://switchboard.example.com/mcp',
  resource_name: 'Switchboard',
  resource_documentation: 'https://switchboard.example.com/docs',
  authorization_servers: 'https://switchboard.example.com',
  scopes_supported: 'account',
  bearer_methods_supported: 'header',
  error: 'invalid_grant',
  error_description: 'The refresh token has expired.',
  botUsername: 'acme_support_bot',
  botId: '7412345678',
  phoneNumberId: '106540352242922',
  allowedOrigins: 'https://shop.acme.example',
  webhookUrl: 'https://switchboard.example.com/api/v1/messaging-channels/telegram/webhook/mch_5kY0bq9xTnq1y8Wv3mDgZA',
  widgetSnippet:
    '<script src="https://switchboard.example.com/webchat.js" data-channel="mch_5kY0bq9xTnq1y8Wv3mDgZA" async></script>',
  enabledBuiltInTools: 'provider-tools',
  billingAccountType: 'end-user',
  filename: 'invoice-1042.pdf',
  mimeType: 'application/pdf',
  tags: 'customer',
  aliases: 'ACME Corporation',
  targetSlug: 'jane-doe',
  backlinks: 'jane-doe',
  slug: 'acme-corp',
  pages: 'acme-corp',
  cronExpression: '0 9 * * 1',
  timezone: 'Europe/Paris',
  schedule: 'At 09:00 AM, only on Monday',
  stdout: 'fetched 1 forecast\n',
  stderr: '',
  requiredSecrets: 'WEATHER_API_KEY',
  missingSecrets: 'WEATHER_API_KEY',
  language: 'javascript',
  arguments: '{"owner":"acme","repo":"shop","issue_number":1042}',
  tool_call_id: 'call_Qm3v0bq9xTnq1y8Wv3mDg',
  toolCallId: 'call_Qm3v0bq9xTnq1y8Wv3mDg',
  sourceId: exampleId('knowledgeSource'),
  rawContent: 'Call with Jane Doe of Acme Corp on 2026-09-14: they renew in March and want SSO.',
  url: 'https://acme.example/about',
  output: 'You have 3 unread emails from last week: the Acme renewal, a build failure and the team lunch.',
  disabledReason: 'The agent was deleted.',
  lastError: 'invalid_grant: the refresh token was revoked',
  requestId: exampleId('request'),
  idempotencyKey: 'order-1042-refund',
  lastEventId: '42',
  stop: '\n\n',
  type: 'function',
};

/** Path and query parameters whose meaning differs from a body property of the same name. */
const PARAMETERS: Readonly<Record<string, string>> = {
  id: exampleId('pat'),
  memoryId: exampleId('memory'),
  sourceId: exampleId('knowledgeSource'),
  channelId: exampleId('messagingChannel'),
  version: '3',
  type: 'llm,mcp',
  tag: 'customer',
  tags: 'customer,partner',
  q: 'acme pricing',
  query: 'favourite coffee order',
  category: 'developer-tools',
  filter: '{"status":{"$in":["active","expired"]},"providerId":"github"}',
  status: 'active,expired',
  'filter[status]': 'active,expired',
  state: 'ost_Hq9xTnq1y8Wv3mDgZA5kY0',
  error: 'access_denied',
  error_description: 'The user denied access',
  'hub.mode': 'subscribe',
  'hub.verify_token': 'my-verify-token',
  'hub.challenge': '1158201444',
};

/** Examples for a route's path or query parameters (an object schema of them). */
export function addParameterExamples(schema: unknown): void {
  const properties = (schema as { properties?: Record<string, Record<string, unknown>> } | undefined)?.properties;
  for (const [name, property] of Object.entries(properties ?? {})) {
    const example = PARAMETERS[name] ?? BY_NAME[name];
    if (example !== undefined && !described(property)) property.examples = [example];
  }
}

/** Numbers by name; any other number shows its smallest allowed value, or 1 (never -2^53). */
const NUMBERS: Readonly<Record<string, number>> = {
  creditBalance: 98_750,
  balanceAfter: 98_750,
  amount: -125,
  creditsConsumed: 125,
  creditsCharged: 2,
  promptTokens: 980,
  completionTokens: 145,
  durationMs: 184,
  temperature: 0.7,
  timeoutMs: 10_000,
  attempts: 1,
  total: 42,
  page: 1,
  limit: 20,
  statusCode: 200,
  version: 3,
  confidence: 0.9,
  score: 0.82,
  expires_in: 3600,
  expiresIn: 7_776_000,
  sentParts: 1,
  seq: 7,
};

type Schema = Record<string, unknown>;

function described(s: Record<string, unknown>): boolean {
  return ['examples', 'example', 'enum', 'const', 'format', 'pattern'].some((k) => k in s);
}

/**
 * Fills examples into `schema` (a component named `component`, or a route's body or parameters) wherever a
 * string has none. `path` is the property path within the component, without array steps (`fields.name`).
 */
export function addExamples(schema: unknown, component: string, path: string[] = []): void {
  if (!schema || typeof schema !== 'object') return;
  const s = schema as Schema;
  if ('$ref' in s || 'examples' in s || 'example' in s) return;
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    for (const branch of (s[key] as unknown[] | undefined) ?? []) addExamples(branch, component, path);
  }
  if (s.properties && typeof s.properties === 'object') {
    for (const [name, property] of Object.entries(s.properties as Record<string, unknown>)) {
      addExamples(property, component, [...path, name]);
    }
  }
  if (s.type === 'array' && s.items) addExamples(s.items, component, path);
  const types = [s.type].flat();
  const name = path.at(-1);
  if (!name || described(s)) return;
  if (types.includes('integer') || types.includes('number')) {
    const min = typeof s.minimum === 'number' && s.minimum > Number.MIN_SAFE_INTEGER ? s.minimum : undefined;
    const max = typeof s.maximum === 'number' && s.maximum < Number.MAX_SAFE_INTEGER ? s.maximum : undefined;
    const wanted = NUMBERS[name] ?? Math.max(min ?? 1, 1);
    s.examples = [Math.min(Math.max(wanted, min ?? wanted), max ?? wanted)];
    return;
  }
  if (!types.includes('string')) return;
  const example =
    (path.length === 1 && name === 'id' ? ID_OF[component] : undefined) ??
    BY_COMPONENT[`${component}.${path.join('.')}`] ??
    BY_NAME[name];
  if (example !== undefined) s.examples = [example];
}
