import { WEBHOOK_EVENTS, type Webhook, type WebhookDelivery } from '../modules/webhooks/index.ts';
import { type Html, html, layout, notice } from './html.ts';
import type { PageUser } from './pages.ts';

/**
 * The webhooks pages (docs/webhooks.md): the account's endpoints with their last delivery, a form to register
 * one (its signing secret shown once after), and one endpoint's page with its recent deliveries, enable/disable
 * and delete. Forms are POSTs with the CSRF token; no JavaScript.
 */

export const WEBHOOKS_PATH = '/account/webhooks';
export const webhookPath = (id: string) => `${WEBHOOKS_PATH}/${encodeURIComponent(id)}`;

const EVENT_TEXT: Record<(typeof WEBHOOK_EVENTS)[number], string> = {
  'connection.created': 'a connection was made',
  'connection.expired': 'a connection expired',
  'connection.error': 'a connection keeps failing to refresh',
  'connection.revoked': 'the provider revoked a connection',
  'task_run.finished': "a scheduled task's run finished",
  'knowledge_source.compiled': 'a knowledge source compiled',
  'knowledge_source.failed': 'a knowledge source failed',
};

const STATUS_TEXT: Record<WebhookDelivery['status'], string> = {
  pending: 'Pending',
  succeeded: 'Delivered',
  failed: 'Failed',
};

const when = (iso: string | null) => (iso ? iso.slice(0, 19).replace('T', ' ') : '');

/** What a refused form held, so the user corrects it rather than types it again. */
export interface WebhookDraft {
  url: string;
  events: string[];
  description: string;
}

function lastDelivery(d: WebhookDelivery | undefined): Html {
  if (!d) return html`<span class="muted">no deliveries yet</span>`;
  return html`last delivery <strong data-delivery-status="${d.status}">${STATUS_TEXT[d.status]}</strong> (${d.eventType}, ${when(d.createdAt)} UTC)`;
}

export function webhooksPage(v: {
  user: PageUser;
  csrf: string;
  webhooks: Webhook[];
  latest: Map<string, WebhookDelivery>;
  created?: { url: string; secret: string } | undefined;
  notice?: string | undefined;
  error?: string | undefined;
  draft?: WebhookDraft | undefined;
}): string {
  const picked = new Set(v.draft?.events ?? []);
  const body = html`
    <h1>Webhooks</h1>
    ${
      v.created
        ? html`<div class="notice" role="status" id="webhook-created"><p>Webhook for <code>${v.created.url}</code> created. Copy its signing secret now: it is not shown again.</p>
          <label for="webhook-secret">Signing secret</label><input id="webhook-secret" type="text" readonly value="${v.created.secret}">
          <p class="small">Each delivery is signed (Standard Webhooks): <code>webhook-signature</code> is <code>v1,</code> and the base64 HMAC-SHA256 of <code>webhook-id.webhook-timestamp.body</code>, keyed with the base64 part of the secret after <code>whsec_</code>.</p></div>`
        : ''
    }
    ${notice(v.notice)}
    <section class="card" aria-labelledby="list-h">
      <h2 id="list-h">Your endpoints</h2>
      <p class="small muted">Switchboard POSTs the events each endpoint picked to its URL, signed, and retries until it answers 2xx. Any Standard Webhooks library verifies them.</p>
      ${
        v.webhooks.length === 0
          ? html`<p class="muted">No webhooks yet: register one below.</p>`
          : html`<ul class="items" id="webhooks">${v.webhooks.map(
              (w) =>
                html`<li data-webhook-id="${w.id}"><div class="grow"><a href="${webhookPath(w.id)}"><code>${w.url}</code></a>
                  ${w.enabled ? html`<span class="badge badge-active">enabled</span>` : html`<span class="badge badge-expired">disabled</span>`}
                  ${w.description ? html`<br><span class="small">${w.description}</span>` : ''}
                  <br><span class="small muted">${w.events.join(', ')}</span>
                  <br><span class="small">${lastDelivery(v.latest.get(w.id))}</span></div></li>`,
            )}</ul>`
      }
    </section>
    <section class="card" aria-labelledby="create-h">
      <h2 id="create-h">Register an endpoint</h2>
      ${v.error ? html`<p class="error" role="alert" id="form-error">${v.error}</p>` : ''}
      <form method="post" action="${WEBHOOKS_PATH}" aria-labelledby="create-h">
        <input type="hidden" name="csrf" value="${v.csrf}">
        <label for="webhook-url">URL</label>
        <input id="webhook-url" name="url" type="text" inputmode="url" required maxlength="2000" placeholder="https://example.com/hooks/switchboard" value="${v.draft?.url ?? ''}"${v.error ? html` aria-describedby="form-error"` : ''}>
        <label for="webhook-description">Description (optional)</label>
        <input id="webhook-description" name="description" type="text" maxlength="500" value="${v.draft?.description ?? ''}">
        <fieldset class="checks"><legend>Events</legend>
          ${WEBHOOK_EVENTS.map(
            (e) =>
              html`<label><input type="checkbox" name="events" value="${e}"${picked.has(e) ? html` checked` : ''}> <span><code>${e}</code> — ${EVENT_TEXT[e]}</span></label>`,
          )}
        </fieldset>
        <div class="actions"><button class="primary" type="submit">Register webhook</button></div>
      </form>
    </section>`;
  return layout('Webhooks', body, { user: v.user, csrf: v.csrf });
}

export function webhookPage(v: {
  user: PageUser;
  csrf: string;
  webhook: Webhook;
  deliveries: WebhookDelivery[];
  total: number;
  notice?: string | undefined;
}): string {
  const w = v.webhook;
  const csrfField = html`<input type="hidden" name="csrf" value="${v.csrf}">`;
  const body = html`
    <p><a href="${WEBHOOKS_PATH}">← Webhooks</a></p>
    <h1 style="overflow-wrap:anywhere">Webhook <code>${w.url}</code></h1>
    ${notice(v.notice)}
    <section class="card" aria-labelledby="setup-h">
      <h2 id="setup-h">Set-up</h2>
      ${w.description ? html`<p>${w.description}</p>` : ''}
      <p>Events: ${w.events.map((e, i) => html`${i ? ', ' : ''}<code>${e}</code>`)}</p>
      <p>${w.enabled ? 'Enabled: events are sent to it.' : 'Disabled: nothing is sent to it, and its pending deliveries fail.'}</p>
      <form method="post" action="${webhookPath(w.id)}/enabled">${csrfField}<input type="hidden" name="enabled" value="${w.enabled ? 'false' : 'true'}">
        <button type="submit">${w.enabled ? 'Disable' : 'Enable'}</button></form>
    </section>
    <section class="card" aria-labelledby="deliveries-h">
      <h2 id="deliveries-h">Recent deliveries</h2>
      ${
        v.deliveries.length === 0
          ? html`<p class="muted">Nothing delivered yet.</p>`
          : html`<p class="small muted">The newest ${v.deliveries.length} of ${v.total}; times in UTC.</p>
            <div class="scroll"><table id="deliveries"><thead><tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Response</th><th scope="col">Next attempt</th><th scope="col">Last error</th></tr></thead><tbody>${v.deliveries.map(
              (d) =>
                html`<tr data-status="${d.status}"><td class="small">${when(d.createdAt)}</td><td><code>${d.eventType}</code></td><td>${STATUS_TEXT[d.status]}</td><td>${d.attempts}</td><td>${d.responseStatus ?? ''}</td><td class="small">${when(d.nextAttemptAt)}</td><td class="small" style="overflow-wrap:anywhere">${d.lastError ?? ''}</td></tr>`,
            )}</tbody></table></div>`
      }
    </section>
    <section class="card" aria-labelledby="danger-h">
      <h2 id="danger-h">Delete</h2>
      <p class="small">Deleting the endpoint deletes its deliveries; nothing more is sent to it.</p>
      <a class="button danger" href="${webhookPath(w.id)}/delete">Delete webhook</a>
    </section>`;
  return layout('Webhook', body, { user: v.user, csrf: v.csrf });
}

/** The delete confirmation's text. */
export function webhookDeleteText(url: string): Html {
  return html`<p style="overflow-wrap:anywhere">Nothing more is sent to <code>${url}</code>, and its deliveries are deleted with it. A new endpoint gets a new signing secret.</p>`;
}
