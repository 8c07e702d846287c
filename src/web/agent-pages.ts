import type { Agent, Conversation, Message } from '../modules/agents/index.ts';
import { activityUrl } from './activity-pages.ts';
import { type Html, html, layout, notice } from './html.ts';
import { renderMarkdown } from './markdown.ts';
import type { PageUser } from './pages.ts';

/**
 * The agents pages: the account's agents with a form to make one, and the chat with one agent: its
 * conversations (reopen, delete), the open conversation's messages with every tool step visible, and the
 * message form. Forms are POSTs with the CSRF token answered by a redirect, so every page works without
 * JavaScript; on the chat page a small same-origin script (agent-chat-script.ts) streams the reply in.
 */

export const AGENTS_PATH = '/account/agents';
export const agentPath = (agentId: string, conversationId?: string) =>
  `${AGENTS_PATH}/${encodeURIComponent(agentId)}${conversationId ? `?c=${encodeURIComponent(conversationId)}` : ''}`;

export function agentsPage(v: {
  user: PageUser;
  csrf: string;
  agents: Agent[];
  models: string[];
  groups: string[];
  error?: string | undefined;
  draft?: { name: string; personality: string } | undefined;
}): string {
  const body = html`
    <h1>Agents</h1>
    ${notice(v.error, true)}
    <section class="card" aria-labelledby="list-h">
      <h2 id="list-h">Your agents</h2>
      ${
        v.agents.length === 0
          ? html`<p class="muted">No agents yet: make one below.</p>`
          : html`<ul class="items">${v.agents.map(
              (a) =>
                html`<li><div class="grow"><a href="${agentPath(a.id)}"><strong>${a.name}</strong></a>${a.isDefault ? html` <span class="badge badge-active">default</span>` : ''}<br><span class="muted small">${a.llm} · ${a.enabledBuiltInTools.join(', ') || 'no tools'}</span>${a.description ? html`<br><span class="small">${a.description}</span>` : ''}</div></li>`,
            )}</ul>`
      }
    </section>
    <section class="card" aria-labelledby="new-h">
      <h2 id="new-h">New agent</h2>
      <form method="post" action="${AGENTS_PATH}">
        <input type="hidden" name="csrf" value="${v.csrf}">
        <label for="agent-name">Name</label><input type="text" id="agent-name" name="name" required maxlength="100" value="${v.draft?.name ?? ''}">
        <label for="agent-personality">Personality</label><textarea id="agent-personality" name="personality" rows="3" style="width:100%" placeholder="You are a concise assistant for my team.">${v.draft?.personality ?? ''}</textarea>
        <label for="agent-llm">Model</label><select id="agent-llm" name="llm">${v.models.map((m) => html`<option value="${m}">${m}</option>`)}</select>
        <fieldset class="checks"><legend>Tools</legend>${v.groups.map(
          (g) =>
            html`<label><input type="checkbox" name="tools" value="${g}"${g === 'provider-tools' ? ' checked' : ''}> ${g}</label>`,
        )}</fieldset>
        <div class="actions"><button type="submit" class="primary">Create agent</button></div>
      </form>
    </section>`;
  return layout('Agents', body, { user: v.user, csrf: v.csrf });
}

function messageView(m: Message): Html {
  if (m.error !== null) {
    // A failed turn (the model's or a tool's fault, or the server running it went away): said as the agent's
    // turn, so the question above it does not look unanswered.
    return html`<li class="msg assistant failed"><span class="who">Agent</span><div class="error-text" role="note">The agent could not answer: ${m.error}</div></li>`;
  }
  if (m.role === 'tool') {
    return html`<li class="msg tool"><details><summary>Tool result: ${m.toolName ?? 'tool'}</summary><pre class="small">${(m.content ?? '').slice(0, 2000)}</pre></details></li>`;
  }
  if (m.role === 'assistant' && m.toolCalls?.length) {
    // What the model wrote before calling its tools (shown as it streamed in) stays, in small print.
    return html`<li class="msg tool">${m.content?.trim() ? html`<div class="small">${m.content}</div>` : ''}${m.toolCalls.map(
      (c) =>
        html`<div class="small muted">Called <code>${c.function.name}</code> <code>${c.function.arguments.slice(0, 300)}</code></div>`,
    )}</li>`;
  }
  return html`<li class="msg ${m.role}"><span class="who">${m.role === 'user' ? 'You' : 'Agent'}</span><div>${renderMarkdown(m.content ?? '', () => '#')}</div></li>`;
}

export function chatPage(v: {
  user: PageUser;
  csrf: string;
  agent: Agent;
  conversations: Conversation[];
  current?: Conversation | undefined;
  messages: Message[];
  error?: string | undefined;
  draft?: string | undefined;
  /** The page's script (agent-chat-script.ts), which streams replies in. */
  script: string;
  /** The cards below the chat: settings and "Use it from code" (agent-settings-pages.ts), with their scripts. */
  settings: { body: Html; scripts: string[] };
}): string {
  const { agent } = v;
  const body = html`
    <p class="small"><a href="${AGENTS_PATH}">← Agents</a></p>
    <h1>${agent.name}</h1>
    <p class="small"><a href="${activityUrl({ agentId: agent.id })}">Activity of this agent</a></p>
    ${notice(v.error, true)}
    <section class="card" aria-labelledby="conversations-h">
      <h2 id="conversations-h">Conversations</h2>
      <p><a class="button" href="${agentPath(agent.id)}">New conversation</a></p>
      ${
        v.conversations.length === 0
          ? html`<p class="muted">None yet.</p>`
          : html`<ul class="items">${v.conversations.map(
              (c) =>
                html`<li><div class="grow">${c.id === v.current?.id ? html`<strong aria-current="page">${c.title || 'Untitled'}</strong>` : html`<a href="${agentPath(agent.id, c.id)}">${c.title || 'Untitled'}</a>`}<br><span class="muted small">${c.lastActivityAt}</span></div>
                <form method="post" action="${agentPath(agent.id)}/conversations/${c.id}/delete" class="inline"><input type="hidden" name="csrf" value="${v.csrf}"><button type="submit" class="danger">Delete<span class="sr-only"> ${c.title}</span></button></form></li>`,
            )}</ul>`
      }
    </section>
    <section class="card" aria-labelledby="chat-h">
      <h2 id="chat-h">${v.current ? v.current.title || 'Conversation' : 'New conversation'}</h2>
      <ol class="chat" aria-live="polite">${v.messages.map(messageView)}</ol>
      <form method="post" action="${agentPath(agent.id)}/chat" data-stream="${agentPath(agent.id)}/chat/stream">
        <input type="hidden" name="csrf" value="${v.csrf}">
        ${v.current ? html`<input type="hidden" name="conversationId" value="${v.current.id}">` : ''}
        <label for="chat-message">Message</label><textarea id="chat-message" name="message" rows="3" style="width:100%" required>${v.draft ?? ''}</textarea>
        <div class="actions"><button type="submit" class="primary">Send</button></div>
      </form>
    </section>
    ${v.settings.body}`;
  return layout(`${agent.name} · Agents`, body, {
    user: v.user,
    csrf: v.csrf,
    scripts: [v.script, ...v.settings.scripts],
  });
}
