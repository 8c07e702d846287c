import type { Connection, PendingFields } from '../modules/connections/index.ts';
import type { FinalizeField, Provider } from '../modules/providers/index.ts';
import { activityUrl } from './activity-pages.ts';
import { type Html, html, layout } from './html.ts';
import { confirmPage, type PageUser } from './pages.ts';

/**
 * The markup of the connections pages: the user's connections with their status, the catalog to connect
 * from, the disconnect confirmation and the fields a provider asks for after OAuth. Every action is a POST
 * form with the CSRF token; search and category are a GET form. No JavaScript.
 */

/** A catalog entry as the page shows it. */
export interface CatalogItem {
  provider: Provider;
  /** Where the service serves its logo (under BASE_URL). */
  logo: string;
  /** The variables an operator must set, when its OAuth is not configured. */
  missing?: { clientId: string; clientSecret: string } | undefined;
  /** OAuth can be started now (the operator set the provider's client). */
  oauth: boolean;
  /** Fields the user gives before authorization (a subdomain the provider's URLs are built from). */
  fields: FinalizeField[];
}

/** A connection as the page shows it. */
export interface ConnectionItem {
  connection: Connection;
  logo: string;
  /** Whether its provider can be connected again now, the way it was (OAuth configured, or it takes a token). */
  connectable: boolean;
  /** Fields Reconnect asks for before authorization, as for Connect. */
  fields: FinalizeField[];
}

const UPPER = new Set(['crm', 'api', 'ai', 'it', 'hr']);

/** `developer-tools` -> `Developer tools`, `crm` -> `CRM`. */
export function categoryLabel(category: string): string {
  const words = category.split(/[-_\s]+/).filter(Boolean);
  return words
    .map((w, i) =>
      UPPER.has(w.toLowerCase()) ? w.toUpperCase() : i === 0 ? w.charAt(0).toUpperCase() + w.slice(1) : w,
    )
    .join(' ');
}

const STATUS_TEXT: Record<Connection['status'], string> = {
  active: 'Working.',
  expired: 'The access token expired and could not be renewed yet.',
  error: 'Renewing access failed several times.',
  revoked: 'Access was revoked: connect again to restore it.',
};

function badge(status: Connection['status']): Html {
  return html`<span class="badge badge-${status}">${status}</span>`;
}

function hidden(csrf: string): Html {
  return html`<input type="hidden" name="csrf" value="${csrf}">`;
}

interface ConnectButton {
  providerId: string;
  label: string;
  /** Who or what it connects, for screen readers (`Acme`, `Acme Ada Lovelace`). */
  name: string;
  primary: boolean;
  /** Fields asked before authorization, and a prefix making their ids unique on the page. */
  fields: FinalizeField[];
  idPrefix: string;
}

/** Connect and Reconnect: a form posting the provider id (and the fields it needs before authorization). */
function connectForm(csrf: string, b: ConnectButton): Html {
  const button = html`<button type="submit"${b.primary ? html` class="primary"` : html``}>${b.label} <span class="sr-only">${b.name}</span></button>`;
  return html`<form method="post" action="/account/connections/connect" class="${b.fields.length ? 'connect-fields' : 'inline'}">${hidden(csrf)}
    <input type="hidden" name="providerId" value="${b.providerId}">
    ${b.fields.map((f) => {
      const id = `${b.idPrefix}-${f.name}`;
      return html`<label for="${id}">${f.label}</label>
        <input id="${id}" name="param.${f.name}" type="text"${
          f.optional || f.default !== undefined ? html`` : html` required`
        } autocomplete="off"${f.default !== undefined ? html` value="${f.default}"` : html``}${
          f.placeholder ? html` placeholder="${f.placeholder}"` : html``
        }${f.description ? html` aria-describedby="${id}-help"` : html``}>
        ${f.description ? html`<p class="muted small" id="${id}-help">${f.description}</p>` : html``}`;
    })}
    ${b.fields.length ? html`<div class="actions compact">${button}</div>` : button}</form>`;
}

/** The values given when connecting and where the API calls go, when the connection has its own. */
function hostLine(c: Connection): Html {
  const parts = [
    ...Object.entries(c.fields ?? {}).map(([k, v]) => html`${k} <code>${v}</code>`),
    ...(c.apiBaseUrl ? [html`API <code>${c.apiBaseUrl}</code>`] : []),
  ];
  if (!parts.length) return html``;
  return html`<div class="muted small" data-connection-host>${parts.map((p, i) => (i ? html` · ${p}` : p))}</div>`;
}

function connectionRow(item: ConnectionItem, csrf: string): Html {
  const c = item.connection;
  const who = c.metadata.email && c.metadata.email !== c.metadata.displayName ? ` (${c.metadata.email})` : '';
  const reconnect = c.status === 'revoked' || c.status === 'error' || (c.status !== 'active' && !c.canRefresh);
  const refresh = c.status !== 'revoked' && c.canRefresh;
  return html`<li class="item" data-connection-id="${c.id}">
    <img class="logo" src="${item.logo}" alt="" width="32" height="32">
    <div class="grow">
      <strong>${c.metadata.providerName}</strong> ${badge(c.status)}
      <div>${c.metadata.displayName}${who}</div>
      ${hostLine(c)}
      <div class="muted">${STATUS_TEXT[c.status]}${c.lastError ? html` <span class="reason">${c.lastError}</span>` : html``}</div>
      <div class="muted small">Connected <time datetime="${c.createdAt}">${c.createdAt.slice(0, 10)}</time>${c.authType === 'api_key' ? ' with a token' : ''}${
        c.expiresAt && c.status === 'active'
          ? html` · token valid until <time datetime="${c.expiresAt}">${c.expiresAt.slice(0, 16).replace('T', ' ')} UTC</time>`
          : html``
      }</div>
      <div class="actions compact">
        ${
          refresh
            ? html`<form method="post" action="/account/connections/${c.id}/refresh" class="inline">${hidden(csrf)}
              <button type="submit">Refresh <span class="sr-only">${c.metadata.providerName} ${c.metadata.displayName}</span></button></form>`
            : html``
        }
        ${
          reconnect
            ? item.connectable && c.authType === 'api_key'
              ? html`<a class="button primary" href="${tokenPagePath(c.providerId)}">Reconnect <span class="sr-only">${c.metadata.providerName} ${c.metadata.displayName}</span></a>`
              : item.connectable
                ? connectForm(csrf, {
                    providerId: c.providerId,
                    label: 'Reconnect',
                    name: `${c.metadata.providerName} ${c.metadata.displayName}`,
                    primary: true,
                    fields: item.fields,
                    idPrefix: `reconnect-${c.id}`,
                  })
                : html`<button type="button" disabled>Reconnect</button>
                <span class="muted small">${c.metadata.providerName} is not available on this server now.</span>`
            : html``
        }
        <a class="button" href="${activityUrl({ connectionId: c.id })}">Activity <span class="sr-only">of ${c.metadata.providerName} ${c.metadata.displayName}</span></a>
        <a class="button danger" href="/account/connections/${c.id}/disconnect">Disconnect <span class="sr-only">${c.metadata.providerName} ${c.metadata.displayName}</span></a>
      </div>
    </div>
  </li>`;
}

/** The page where the user pastes a token for a provider. */
export function tokenPagePath(providerId: string): string {
  return `/account/connections/token/${providerId}`;
}

function catalogRow(item: CatalogItem, csrf: string, connectedCount: number): Html {
  const p = item.provider;
  const connectLabel = connectedCount && p.allowMultipleConnections ? 'Connect another' : 'Connect';
  const tokenLink = (primary: boolean, text: string) =>
    html`<a class="button${primary ? ' primary' : ''}" href="${tokenPagePath(p.id)}" data-token-link>${text} <span class="sr-only">${p.label}</span></a>`;
  const form = !item.oauth
    ? p.apiKey
      ? tokenLink(!connectedCount, connectLabel)
      : html`<button type="button" disabled aria-describedby="setup-${p.id}">Connect <span class="sr-only">${p.label}</span></button>`
    : connectForm(csrf, {
        providerId: p.id,
        label: connectLabel,
        name: p.label,
        primary: !connectedCount,
        fields: item.fields,
        idPrefix: `connect-${p.id}`,
      });
  // A form with fields goes under the description; a lone button to its right.
  const below = item.oauth && item.fields.length > 0;
  return html`<li class="item" data-provider-id="${p.id}">
    <img class="logo" src="${item.logo}" alt="" width="32" height="32">
    <div class="grow">
      <strong>${p.label}</strong> <span class="muted small">${categoryLabel(p.category)}</span>
      ${connectedCount ? html` <span class="badge badge-active">connected</span>` : html``}
      <div>${p.description}</div>
      ${
        p.apiKey
          ? item.oauth
            ? html`<p class="muted small">Or connect with your ${p.apiKey.label}: ${tokenLink(false, 'Use a token')}</p>`
            : html`<p class="muted small">Connects with your ${p.apiKey.label} from ${p.label}.</p>`
          : html``
      }
      ${
        item.missing && !p.apiKey
          ? html`<p class="muted small" id="setup-${p.id}">Not configured on this server: the operator sets
            <code>${item.missing.clientId}</code> and <code>${item.missing.clientSecret}</code>.</p>`
          : html``
      }
      ${below ? form : html``}
    </div>
    ${below ? html`` : html`<div>${form}</div>`}
  </li>`;
}

export interface ConnectionsView {
  user: PageUser;
  csrf: string;
  connections: ConnectionItem[];
  catalog: CatalogItem[];
  /** How many providers the catalog holds before filtering. */
  catalogTotal: number;
  categories: string[];
  q: string;
  category: string;
  notice?: string | undefined;
  error?: string | undefined;
}

export function connectionsPage(v: ConnectionsView): string {
  const connectedBy = new Map<string, number>();
  for (const c of v.connections) {
    // A revoked connection does not count: its provider offers Connect as if it had none.
    if (c.connection.status === 'revoked') continue;
    connectedBy.set(c.connection.providerId, (connectedBy.get(c.connection.providerId) ?? 0) + 1);
  }
  const filtered = v.q !== '' || v.category !== '';
  return layout(
    'Connections',
    html`<div class="card"><h1>Connections</h1>
      ${v.notice ? html`<p class="notice" role="status">${v.notice}</p>` : html``}
      ${v.error ? html`<p class="error" role="alert" id="page-error">${v.error}</p>` : html``}
      <h2 id="mine-title">Your connections</h2>
      ${
        v.connections.length
          ? html`<ul class="items" aria-labelledby="mine-title">${v.connections.map((c) => connectionRow(c, v.csrf))}</ul>`
          : html`<p>No connections yet. Connect a service below, and your agents and apps can use it.</p>`
      }
    </div>
    <div class="card"><h2 id="catalog-title">Connect a service</h2>
      <form method="get" action="/account/connections" role="search" class="filters" aria-label="Search the catalog">
        <div class="grow"><label for="q">Search</label>
          <input id="q" name="q" type="search" value="${v.q}" maxlength="100" placeholder="Name or description"></div>
        <div><label for="category">Category</label>
          <select id="category" name="category">
            <option value="">All categories</option>
            ${v.categories.map((c) => html`<option value="${c}"${c === v.category ? html` selected` : html``}>${categoryLabel(c)}</option>`)}
          </select></div>
        <div><button type="submit">Search</button></div>
      </form>
      <p class="muted" role="status">${
        filtered
          ? html`${v.catalog.length} of ${v.catalogTotal} services match. <a href="/account/connections">Show all</a>`
          : html`${v.catalogTotal} services.`
      }</p>
      ${
        v.catalog.length
          ? html`<ul class="items" aria-labelledby="catalog-title">${v.catalog.map((p) =>
              catalogRow(p, v.csrf, connectedBy.get(p.provider.id) ?? 0),
            )}</ul>`
          : html`<p>No service matches. Try another word or category.</p>`
      }
    </div>`,
    { user: v.user, csrf: v.csrf },
  );
}

export function disconnectPage(v: { user: PageUser; csrf: string; item: ConnectionItem }): string {
  const c = v.item.connection;
  return confirmPage({
    user: v.user,
    csrf: v.csrf,
    title: `Disconnect ${c.metadata.providerName}?`,
    head: html`<img class="logo" src="${v.item.logo}" alt="" width="32" height="32">`,
    body: html`<p>Account: <strong>${c.metadata.displayName}</strong>${c.metadata.email ? ` (${c.metadata.email})` : ''}.</p>
      ${
        c.authType === 'api_key'
          ? html`<p>Switchboard deletes this connection and the token you gave it. Your agents and apps can no longer
            use this account. The token itself keeps working until you delete it at ${c.metadata.providerName}.</p>`
          : html`<p>Switchboard deletes this connection and asks ${c.metadata.providerName} to revoke its token. Your
            agents and apps can no longer use this account. You can connect it again later.</p>`
      }`,
    action: `/account/connections/${c.id}/disconnect`,
    button: 'Disconnect',
    cancelHref: '/account/connections',
  });
}

export function pendingPage(v: {
  user: PageUser;
  csrf: string;
  pending: PendingFields;
  logo: string;
  values?: Record<string, string> | undefined;
  /** Problems by field name; `''` for the form as a whole. */
  problems?: Record<string, string> | undefined;
}): string {
  const p = v.pending;
  const problems = v.problems ?? {};
  const formError = problems[''];
  return layout(
    `Finish connecting ${p.providerMetadata.name}`,
    html`<div class="card"><div class="app-head"><img class="logo" src="${v.logo}" alt="" width="32" height="32">
      <h1>Finish connecting ${p.providerMetadata.name}</h1></div>
      <p>${p.providerMetadata.name} authorized Switchboard. It needs a little more to reach your account.</p>
      ${formError ? html`<p class="error" role="alert" id="form-error">${formError}</p>` : html``}
      <form method="post" action="/account/connections/pending/${p.pendingId}">${hidden(v.csrf)}
        ${p.fields.map((f) => {
          const problem = problems[f.name];
          const describedBy = [f.description ? `help-${f.name}` : '', problem ? `error-${f.name}` : '']
            .filter(Boolean)
            .join(' ');
          return html`<label for="field-${f.name}">${f.label}</label>
            <input id="field-${f.name}" name="field.${f.name}" type="text" required autocomplete="off"
              value="${v.values?.[f.name] ?? ''}"${f.placeholder ? html` placeholder="${f.placeholder}"` : html``}${
                describedBy ? html` aria-describedby="${describedBy}"` : html``
              }${problem ? html` aria-invalid="true"` : html``}>
            ${f.description ? html`<p class="muted small" id="help-${f.name}">${f.description}</p>` : html``}
            ${problem ? html`<p class="error" id="error-${f.name}">${problem}</p>` : html``}`;
        })}
        <div class="actions"><button class="primary" type="submit">Finish connecting</button>
          <a class="button" href="/account/connections">Cancel</a></div>
      </form>
      <p class="muted small">This step expires at <time datetime="${p.expiresAt}">${p.expiresAt.slice(11, 16)} UTC</time>.</p>
    </div>`,
    { user: v.user, csrf: v.csrf },
  );
}

/** The form for a token the user holds: the provider's fields, the token as a password, where to get one. */
export function tokenPage(v: {
  user: PageUser;
  csrf: string;
  provider: Provider;
  logo: string;
  values?: Record<string, string> | undefined;
  /** Problems by field name (`token` for the token); `''` for the form as a whole. */
  problems?: Record<string, string> | undefined;
}): string {
  const p = v.provider;
  const k = p.apiKey;
  if (!k) throw new Error(`${p.id} takes no token`);
  const problems = v.problems ?? {};
  const formError = problems[''];
  const host = new URL(k.docsUrl).host;
  const input = (
    f: { name: string; label: string; description?: string | undefined; placeholder?: string | undefined },
    attrs: { type: string; value: string; autocomplete: string },
  ) => {
    const id = `field-${f.name}`;
    const problem = problems[f.name];
    const describedBy = [f.description ? `help-${f.name}` : '', problem ? `error-${f.name}` : '']
      .filter(Boolean)
      .join(' ');
    return html`<label for="${id}">${f.label}</label>
      <input id="${id}" name="${f.name === 'token' ? 'token' : `field.${f.name}`}" type="${attrs.type}" required
        autocomplete="${attrs.autocomplete}" spellcheck="false" value="${attrs.value}"${
          f.placeholder ? html` placeholder="${f.placeholder}"` : html``
        }${describedBy ? html` aria-describedby="${describedBy}"` : html``}${problem ? html` aria-invalid="true"` : html``}>
      ${f.description ? html`<p class="muted small" id="help-${f.name}">${f.description}</p>` : html``}
      ${problem ? html`<p class="error" id="error-${f.name}">${problem}</p>` : html``}`;
  };
  return layout(
    `Connect ${p.label}`,
    html`<div class="card"><div class="app-head"><img class="logo" src="${v.logo}" alt="" width="32" height="32">
      <h1>Connect ${p.label}</h1></div>
      <p>${p.label} connects with your ${k.label}. ${k.help}</p>
      <p><a href="${k.docsUrl}" target="_blank" rel="noopener noreferrer" data-docs-link>Get your ${k.label} on ${host}</a>
        <span class="muted small">(opens in a new tab)</span></p>
      ${formError ? html`<p class="error" role="alert" id="form-error">${formError}</p>` : html``}
      <form method="post" action="${tokenPagePath(p.id)}">${hidden(v.csrf)}
        ${k.fields.map((f) =>
          input(f, {
            type: f.name === 'email' ? 'email' : 'text',
            value: v.values?.[f.name] ?? '',
            autocomplete: f.name === 'email' ? 'email' : 'off',
          }),
        )}
        ${input({ name: 'token', label: k.label }, { type: 'password', value: '', autocomplete: 'off' })}
        <div class="actions"><button class="primary" type="submit">Connect ${p.label}</button>
          <a class="button" href="/account/connections">Cancel</a></div>
      </form>
      <p class="muted small">Switchboard asks ${p.label} who the token belongs to before keeping it, then stores it
        encrypted. Disconnecting deletes it here; delete it at ${p.label} too to end its access there.</p>
    </div>`,
    { user: v.user, csrf: v.csrf },
  );
}
