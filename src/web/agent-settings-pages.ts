import { type Agent, AVAILABLE_GROUPS, GROUP_DESCRIPTIONS } from '../modules/agents/index.ts';
import { type Html, html, notice } from './html.ts';
import { TOKEN_PLACEHOLDER } from './mcp-client-pages.ts';

/**
 * The agent page's two cards below the chat: "Settings" (the edit form, a POST to `…/settings` answered by a
 * redirect back to `#settings`) and "Use it from code" (the agent's chat API URL with a ready curl and `openai`
 * example, each with a copy button of COPY_SCRIPT).
 */

/** The settings form as typed: every field a string, so a refused form shows exactly what was sent. */
export interface AgentSettingsDraft {
  name: string;
  description: string;
  llm: string;
  personality: string;
  firstPrompt: string;
  temperature: string;
  tools: string[];
  dailyMessagesPerUser: string;
  monthlyCreditsCap: string;
  limitReachedMessage: string;
}

export interface AgentSettingsView {
  /** Models this server serves (GET /models). */
  models: string[];
  /** This server's address (BASE_URL), for the examples. */
  baseUrl: string;
  notice?: string | undefined;
  error?: string | undefined;
  draft?: AgentSettingsDraft | undefined;
}

export const settingsPath = (agentId: string) => `/account/agents/${encodeURIComponent(agentId)}/settings`;

export function draftOfAgent(agent: Agent): AgentSettingsDraft {
  return {
    name: agent.name,
    description: agent.description,
    llm: agent.llm,
    personality: agent.personality,
    firstPrompt: agent.firstPrompt,
    temperature: String(agent.temperature),
    tools: agent.enabledBuiltInTools,
    dailyMessagesPerUser: agent.usageLimits.dailyMessagesPerUser?.toString() ?? '',
    monthlyCreditsCap: agent.usageLimits.monthlyCreditsCap?.toString() ?? '',
    limitReachedMessage: agent.usageLimits.limitReachedMessage ?? '',
  };
}

/** The agent's chat API: `POST {base}/api/v1/agents/:id/chat/completions` (SPEC §4 Agents). */
export const agentApiBase = (baseUrl: string, agentId: string) =>
  `${baseUrl}/api/v1/agents/${encodeURIComponent(agentId)}`;

export function curlExample(baseUrl: string, agentId: string): string {
  return [
    `curl ${agentApiBase(baseUrl, agentId)}/chat/completions \\`,
    `  -H 'Authorization: Bearer ${TOKEN_PLACEHOLDER}' \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d '{"messages":[{"role":"user","content":"Hello! What can you do?"}]}'`,
  ].join('\n');
}

export function openaiExample(baseUrl: string, agent: Agent): string {
  return [
    "import OpenAI from 'openai';",
    '',
    'const client = new OpenAI({',
    `  baseURL: '${agentApiBase(baseUrl, agent.id)}',`,
    `  apiKey: '${TOKEN_PLACEHOLDER}',`,
    '});',
    'const reply = await client.chat.completions.create({',
    `  model: '${agent.llm.replaceAll("'", "\\'")}', // ignored: the agent's own model answers`,
    "  messages: [{ role: 'user', content: 'Hello! What can you do?' }],",
    '});',
    'console.log(reply.choices[0].message.content);',
  ].join('\n');
}

export function agentSettingsCards(agent: Agent, csrf: string, v: AgentSettingsView): Html {
  const d = v.draft ?? draftOfAgent(agent);
  // The agent's model stays selectable when this server no longer serves it (saving it unchanged is allowed).
  const models = v.models.includes(d.llm) ? v.models : [d.llm, ...v.models];
  const chatUrl = `${agentApiBase(v.baseUrl, agent.id)}/chat/completions`;
  return html`
    <section class="card" id="settings" aria-labelledby="settings-h">
      <h2 id="settings-h">Settings</h2>
      ${notice(v.notice)}
      ${notice(v.error, true)}
      <form method="post" action="${settingsPath(agent.id)}">
        <input type="hidden" name="csrf" value="${csrf}">
        <label for="set-name">Name</label><input type="text" id="set-name" name="name" required maxlength="100" value="${d.name}">
        <label for="set-description">Description</label><input type="text" id="set-description" name="description" maxlength="2000" value="${d.description}">
        <label for="set-llm">Model</label><select id="set-llm" name="llm">${models.map(
          (m) =>
            html`<option value="${m}"${m === d.llm ? ' selected' : ''}>${m}${v.models.includes(m) ? '' : ' (not served now)'}</option>`,
        )}</select>
        <label for="set-personality">Personality</label><textarea id="set-personality" name="personality" rows="4" style="width:100%" maxlength="20000">${d.personality}</textarea>
        <label for="set-first">Opening line (the first turn of a new conversation)</label><textarea id="set-first" name="firstPrompt" rows="2" style="width:100%" maxlength="4000">${d.firstPrompt}</textarea>
        <label for="set-temperature">Temperature (0 to 2: lower is steadier, higher more varied)</label><input type="number" id="set-temperature" name="temperature" required min="0" max="2" step="0.05" value="${d.temperature}">
        <fieldset class="checks"><legend>Tool groups</legend>${[...AVAILABLE_GROUPS].map(
          (g) =>
            html`<label><input type="checkbox" name="tools" value="${g}"${d.tools.includes(g) ? ' checked' : ''}> <span><code>${g}</code><br><span class="muted small">${GROUP_DESCRIPTIONS[g]}</span></span></label>`,
        )}</fieldset>
        <fieldset><legend>Usage limits (empty: none)</legend>
          <label for="set-daily">Turns a day per end user</label><input type="number" id="set-daily" name="dailyMessagesPerUser" min="1" step="1" value="${d.dailyMessagesPerUser}">
          <label for="set-monthly">Credits a month (the agent's whole spend)</label><input type="number" id="set-monthly" name="monthlyCreditsCap" min="1" step="1" value="${d.monthlyCreditsCap}">
          <label for="set-limit-message">Text the agent answers at a limit</label><input type="text" id="set-limit-message" name="limitReachedMessage" maxlength="2000" value="${d.limitReachedMessage}" placeholder="This agent has reached its usage limit for now. Please try again later.">
        </fieldset>
        <div class="actions"><button type="submit" class="primary">Save settings</button></div>
      </form>
    </section>
    <section class="card" id="code" aria-labelledby="code-h">
      <h2 id="code-h">Use it from code</h2>
      <p>The agent's chat API (OpenAI's chat completions format): <code id="agent-api-url" style="overflow-wrap:anywhere">${chatUrl}</code> <button type="button" class="button" data-copy="agent-api-url" hidden>Copy <span class="sr-only">the API URL</span></button></p>
      <p class="small">It needs a token with the scope <code>agents-use</code> (or <code>agents-all</code>): make one on <a href="/account/tokens">Tokens</a> and put it in place of <code>${TOKEN_PLACEHOLDER}</code>. The answer's <code>X-Conversation-Id</code> header, sent back as <code>conversationId</code>, continues the conversation; <code>"stream": true</code> streams it.</p>
      <h3 id="code-curl-h">curl</h3>
      <pre class="snippet"><code id="agent-curl">${curlExample(v.baseUrl, agent.id)}</code></pre>
      <button type="button" class="button" data-copy="agent-curl" hidden>Copy <span class="sr-only">the curl example</span></button>
      <h3 id="code-openai-h">JavaScript, <code>openai</code> package</h3>
      <pre class="snippet"><code id="agent-openai">${openaiExample(v.baseUrl, agent)}</code></pre>
      <button type="button" class="button" data-copy="agent-openai" hidden>Copy <span class="sr-only">the openai example</span></button>
    </section>`;
}
