import type { Agent } from '../modules/agents/index.ts';
import type { Channel, Delivery, LinkCode } from '../modules/channels/index.ts';
import { type Html, html, layout, notice } from './html.ts';
import type { PageUser } from './pages.ts';

/**
 * The messaging channels pages: the account's channels with forms to connect a Telegram bot (by its token),
 * a WhatsApp number (by its Cloud API fields) or a web chat; one channel's page shows how it is set up (the web
 * chat snippet to copy), its linked people with a link code to make, and its recent deliveries and failures.
 * Forms are POSTs with the CSRF token; no JavaScript.
 */

export const CHANNELS_PATH = '/account/channels';
export const channelPath = (id: string) => `${CHANNELS_PATH}/${encodeURIComponent(id)}`;

const TYPE_LABEL: Record<Channel['type'], string> = { telegram: 'Telegram', whatsapp: 'WhatsApp', webchat: 'Web chat' };

function describe(c: Channel): string {
  if (c.type === 'telegram') return `@${c.config.botUsername ?? ''}`;
  if (c.type === 'whatsapp') return `number id ${c.config.phoneNumberId ?? ''}`;
  const origins = c.config.allowedOrigins ?? [];
  return origins.length ? `on ${origins.join(', ')}` : 'on any site';
}

export interface ChannelDraft {
  type: string;
  agentId: string;
  phoneNumberId?: string;
  allowedOrigins?: string;
}

function agentSelect(id: string, agents: Agent[], selected: string | undefined): Html {
  return html`<label for="${id}">Agent</label><select id="${id}" name="agentId" required>${agents.map(
    (a) => html`<option value="${a.id}"${a.id === selected ? ' selected' : ''}>${a.name}</option>`,
  )}</select>`;
}

export function channelsPage(v: {
  user: PageUser;
  csrf: string;
  channels: Channel[];
  agents: Agent[];
  error?: string | undefined;
  notice?: string | undefined;
  draft?: ChannelDraft | undefined;
  /** The service's public address (BASE_URL): Telegram delivers only to an https webhook. */
  baseUrl: string;
}): string {
  const agentName = new Map(v.agents.map((a) => [a.id, a.name]));
  const draftFor = (type: string) => (v.draft?.type === type ? v.draft : undefined);
  const forms =
    v.agents.length === 0
      ? html`<p class="muted">Make an agent first (<a href="/account/agents">Agents</a>): a channel puts one in front of people.</p>`
      : html`
    <section class="card" aria-labelledby="tg-h">
      <h2 id="tg-h">Connect a Telegram bot</h2>
      <p class="muted small">Make a bot with @BotFather and paste its token: the service checks it and registers its webhook.</p>
      ${
        v.baseUrl.startsWith('https://')
          ? ''
          : html`<p class="error" role="note" id="tg-https">Telegram delivers messages only to an https address, and this service is at ${v.baseUrl}: Telegram will refuse its webhook. Serve it over https (behind a proxy or tunnel) and set BASE_URL to that address first.</p>`
      }
      <form method="post" action="${CHANNELS_PATH}">
        <input type="hidden" name="csrf" value="${v.csrf}"><input type="hidden" name="type" value="telegram">
        ${agentSelect('tg-agent', v.agents, draftFor('telegram')?.agentId)}
        <label for="tg-token">Bot token</label><input type="password" id="tg-token" name="botToken" required autocomplete="off">
        <div class="actions"><button type="submit" class="primary">Connect Telegram bot</button></div>
      </form>
    </section>
    <section class="card" aria-labelledby="wa-h">
      <h2 id="wa-h">Connect a WhatsApp number</h2>
      <p class="muted small">From your Meta app (WhatsApp, API setup). Then enter this service's webhook address and your verify token in the app's webhook settings.</p>
      <form method="post" action="${CHANNELS_PATH}">
        <input type="hidden" name="csrf" value="${v.csrf}"><input type="hidden" name="type" value="whatsapp">
        ${agentSelect('wa-agent', v.agents, draftFor('whatsapp')?.agentId)}
        <label for="wa-number">Phone number id</label><input type="text" id="wa-number" name="phoneNumberId" required inputmode="numeric" value="${draftFor('whatsapp')?.phoneNumberId ?? ''}">
        <label for="wa-access">Access token</label><input type="password" id="wa-access" name="accessToken" required autocomplete="off">
        <label for="wa-verify">Verify token</label><input type="password" id="wa-verify" name="verifyToken" required autocomplete="off">
        <label for="wa-secret">App secret (optional)</label><input type="password" id="wa-secret" name="appSecret" autocomplete="off">
        <div class="actions"><button type="submit" class="primary">Connect WhatsApp number</button></div>
      </form>
    </section>
    <section class="card" aria-labelledby="wc-h">
      <h2 id="wc-h">Add a web chat</h2>
      <form method="post" action="${CHANNELS_PATH}">
        <input type="hidden" name="csrf" value="${v.csrf}"><input type="hidden" name="type" value="webchat">
        ${agentSelect('wc-agent', v.agents, draftFor('webchat')?.agentId)}
        <label for="wc-origins">Allowed sites (optional, one origin a line, e.g. https://shop.example)</label><textarea id="wc-origins" name="allowedOrigins" rows="2" style="width:100%">${draftFor('webchat')?.allowedOrigins ?? ''}</textarea>
        <div class="actions"><button type="submit" class="primary">Add web chat</button></div>
      </form>
    </section>`;
  const body = html`
    <h1>Messaging channels</h1>
    ${notice(v.error, true)}${notice(v.notice)}
    <section class="card" aria-labelledby="list-h">
      <h2 id="list-h">Your channels</h2>
      ${
        v.channels.length === 0
          ? html`<p class="muted">No channels yet: connect one below.</p>`
          : html`<ul class="items">${v.channels.map(
              (c) =>
                html`<li><div class="grow"><a href="${channelPath(c.id)}"><strong>${TYPE_LABEL[c.type]}</strong> ${describe(c)}</a><br><span class="muted small">agent ${agentName.get(c.agentId) ?? c.agentId}</span></div></li>`,
            )}</ul>`
      }
    </section>
    ${forms}`;
  return layout('Messaging channels', body, { user: v.user, csrf: v.csrf });
}

export function channelPage(v: {
  user: PageUser;
  csrf: string;
  channel: Channel;
  agentName: string;
  deliveries: Delivery[];
  code?: LinkCode | undefined;
  message?: string | undefined;
  error?: string | undefined;
}): string {
  const c = v.channel;
  const setup =
    c.type === 'webchat'
      ? html`<label for="snippet">Web chat snippet (paste it into your page)</label><textarea id="snippet" readonly rows="3" style="width:100%">${c.widgetSnippet ?? ''}</textarea>
         <p class="muted small">Allowed sites: ${(c.config.allowedOrigins ?? []).join(', ') || 'any'}</p>`
      : html`<dl>
          ${c.type === 'telegram' ? html`<dt>Bot</dt><dd>@${c.config.botUsername ?? ''} (token set)</dd>` : html`<dt>Phone number id</dt><dd>${c.config.phoneNumberId ?? ''}</dd><dt>App secret</dt><dd>${c.config.appSecretSet ? 'set' : 'not set (WHATSAPP_APP_SECRET is used)'}</dd>`}
          <dt>Webhook</dt><dd><code>${c.webhookUrl ?? ''}</code></dd>
        </dl>`;
  const linking =
    c.type === 'webchat'
      ? html``
      : html`<section class="card" aria-labelledby="people-h">
      <h2 id="people-h">Linked people</h2>
      <p class="muted small">The channel answers only people linked to your account: they act with your connections.</p>
      ${
        c.linkedUsers.length === 0
          ? html`<p class="muted">Nobody is linked yet.</p>`
          : html`<ul class="items">${c.linkedUsers.map(
              (u) =>
                html`<li><div class="grow">${u.displayName || u.externalUserId} <span class="muted small">(${u.externalUserId})</span></div>
                <form method="post" action="${channelPath(c.id)}/unlink"><input type="hidden" name="csrf" value="${v.csrf}"><input type="hidden" name="externalUserId" value="${u.externalUserId}"><button type="submit">Unlink</button></form></li>`,
            )}</ul>`
      }
      ${
        v.code
          ? html`<div class="notice" role="status"><p>Link code <strong><code>${v.code.code}</code></strong> (single use, until ${v.code.expiresAt.slice(11, 16)} UTC).</p>
              <p>${v.code.instructions}</p>${v.code.link ? html`<p><a href="${v.code.link}">${v.code.link}</a></p>` : ''}</div>`
          : ''
      }
      <form method="post" action="${channelPath(c.id)}/link"><input type="hidden" name="csrf" value="${v.csrf}"><button type="submit" class="primary">Link an account</button></form>
    </section>`;
  const body = html`
    <p><a href="${CHANNELS_PATH}">← Messaging channels</a></p>
    <h1>${TYPE_LABEL[c.type]} ${describe(c)}</h1>
    ${notice(v.error, true)}${notice(v.message)}
    <section class="card" aria-labelledby="setup-h">
      <h2 id="setup-h">Set-up</h2>
      <p>Agent: <strong>${v.agentName}</strong></p>
      ${setup}
    </section>
    ${linking}
    <section class="card" aria-labelledby="deliveries-h">
      <h2 id="deliveries-h">Recent deliveries</h2>
      ${
        v.deliveries.length === 0
          ? html`<p class="muted">Nothing delivered yet.</p>`
          : html`<table><thead><tr><th>When</th><th>Direction</th><th>Chat</th><th>Status</th><th>Problem</th></tr></thead><tbody>${v.deliveries.map(
              (d) =>
                html`<tr><td class="small">${d.createdAt.slice(0, 19).replace('T', ' ')}</td><td>${d.direction === 'in' ? 'received' : 'sent'}</td><td class="small">${d.chatId ?? ''}</td><td>${d.error && (d.status === 'received' || d.status === 'answered') ? 'retrying' : d.status}</td><td class="small">${d.error ?? ''}</td></tr>`,
            )}</tbody></table>`
      }
    </section>
    <section class="card" aria-labelledby="danger-h">
      <h2 id="danger-h">Delete</h2>
      <form method="post" action="${channelPath(c.id)}/delete"><input type="hidden" name="csrf" value="${v.csrf}"><button type="submit" class="danger">Delete channel</button></form>
    </section>`;
  return layout(`${TYPE_LABEL[c.type]} channel`, body, { user: v.user, csrf: v.csrf });
}
