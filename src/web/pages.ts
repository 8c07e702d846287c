import { SCOPES } from '../access/scopes.ts';
import type { AuthorizedApp } from '../modules/auth-clients/index.ts';
import { type Html, html, layout, notice } from './html.ts';
import { mcpClientConfigs, TOKEN_PLACEHOLDER } from './mcp-client-pages.ts';

/** The pages' markup. Every value is escaped by `html`; forms post with a CSRF token and work without JS. */

export interface PageUser {
  name: string;
  email: string;
}

export function errorPage(title: string, message: string): string {
  return layout(
    title,
    html`<div class="card" role="alert"><h1>${title}</h1><p>${message}</p>
      <p><a href="/account/apps">Go to your account</a></p></div>`,
  );
}

/**
 * The page before anything that cannot be undone (revoking a token or an app, disconnecting a service): what
 * will happen, the one button that does it (a POST with the CSRF token) and a way back. Without JavaScript, so
 * every destructive action is two steps.
 */
export function confirmPage(v: {
  user: PageUser;
  csrf: string;
  title: string;
  /** Shown beside the title (a provider's logo). */
  head?: Html | undefined;
  body: Html;
  action: string;
  button: string;
  cancelHref: string;
}): string {
  return layout(
    v.title,
    html`<div class="card"><div class="app-head">${v.head ?? html``}<h1>${v.title}</h1></div>
      ${v.body}
      <div class="actions">
        <form method="post" action="${v.action}"><input type="hidden" name="csrf" value="${v.csrf}">
          <button class="danger" type="submit">${v.button}</button></form>
        <a class="button" href="${v.cancelHref}">Cancel</a>
      </div>
    </div>`,
    { user: v.user, csrf: v.csrf },
  );
}

function errorLine(error: string | undefined): Html {
  return error ? html`<p class="error" role="alert" id="form-error">${error}</p>` : html``;
}

function describedBy(error: string | undefined): Html {
  return error ? html` aria-describedby="form-error" aria-invalid="true"` : html``;
}

export function signInPage(opts: {
  action: string;
  signupHref?: string | undefined;
  csrf: string;
  email?: string | undefined;
  error?: string | undefined;
  returnTo?: string | undefined;
  clientName?: string | undefined;
}): string {
  const intro = opts.clientName
    ? html`<p>Sign in to continue to <strong>${opts.clientName}</strong>.</p>`
    : html`<p class="muted">Use your Switchboard account.</p>`;
  return layout(
    'Sign in',
    html`<div class="card"><h1>Sign in</h1>${intro}${errorLine(opts.error)}
      <form method="post" action="${opts.action}">
        <input type="hidden" name="csrf" value="${opts.csrf}">
        ${opts.returnTo ? html`<input type="hidden" name="return_to" value="${opts.returnTo}">` : html``}
        <label for="email">E-mail</label>
        <input id="email" name="email" type="email" autocomplete="username" required value="${opts.email ?? ''}"${describedBy(opts.error)}>
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required${describedBy(opts.error)}>
        <div class="actions"><button class="primary" type="submit">Sign in</button></div>
      </form>
      ${opts.signupHref ? html`<p>New to Switchboard? <a href="${opts.signupHref}">Create an account</a></p>` : html``}
    </div>`,
  );
}

export function signUpPage(opts: {
  action: string;
  signinHref: string;
  csrf: string;
  email?: string | undefined;
  name?: string | undefined;
  error?: string | undefined;
  returnTo?: string | undefined;
}): string {
  return layout(
    'Create an account',
    html`<div class="card"><h1>Create an account</h1>${errorLine(opts.error)}
      <form method="post" action="${opts.action}">
        <input type="hidden" name="csrf" value="${opts.csrf}">
        ${opts.returnTo ? html`<input type="hidden" name="return_to" value="${opts.returnTo}">` : html``}
        <label for="name">Name</label>
        <input id="name" name="name" type="text" autocomplete="name" required maxlength="100" value="${opts.name ?? ''}">
        <label for="email">E-mail</label>
        <input id="email" name="email" type="email" autocomplete="email" required value="${opts.email ?? ''}"${describedBy(opts.error)}>
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="new-password" required minlength="8" aria-describedby="pw-help">
        <p id="pw-help" class="muted">At least 8 characters.</p>
        <div class="actions"><button class="primary" type="submit">Create account</button></div>
      </form>
      <p>Already have an account? <a href="${opts.signinHref}">Sign in</a></p>
    </div>`,
  );
}

export interface ConsentView {
  uid: string;
  csrf: string;
  user: PageUser;
  client: {
    name: string;
    logo?: string | undefined;
    description?: string | undefined;
    brandColor?: string | undefined;
    verified: boolean;
    /** The host of a client identified by its metadata document's URL: what it is, where its name is not checked. */
    host?: string | undefined;
  };
  scopes: string[];
  /** Scopes this app already holds from an earlier consent. */
  alreadyGranted: string[];
  redirectUri: string;
  /** When the scopes reach knowledge bases (or the app asked for some): which the app may use. */
  knowledge?: KnowledgeOffer | undefined;
  /** A refused choice, shown above the form. */
  error?: string | undefined;
}

/** The knowledge bases a consent offers: all of the account's, or (`fixed`) those the app asked for. */
export interface KnowledgeOffer {
  bases: Array<{ id: string; name: string; isDefault: boolean }>;
  /** The app asked for these bases (`knowledge_base_ids`): no "all" choice. */
  fixed: boolean;
  /** "All knowledge bases" is selected. */
  all: boolean;
  /** Ticked bases (when not all). */
  selected: string[];
}

/** The consent form's knowledge-base choice; its inputs belong to the Allow form by its id (no JS needed). */
function knowledgeChoice(k: KnowledgeOffer): Html {
  const f = 'consent-form';
  const boxes = html`<ul class="kb-list">${k.bases.map(
    (b) =>
      html`<li><label><input type="checkbox" form="${f}" name="knowledge_base_id" value="${b.id}"${k.all || !k.selected.includes(b.id) ? html`` : html` checked`}> ${b.name}${b.isDefault ? html` <span class="muted">(default)</span>` : html``}</label></li>`,
  )}</ul>`;
  return html`<fieldset class="kb-choice">
      <legend>Knowledge bases it may use</legend>
      ${
        k.fixed
          ? html`<input type="hidden" form="${f}" name="knowledge_bases" value="some">
            <p class="muted">The app asks for these knowledge bases only; untick any you do not want to share.</p>`
          : html`<label><input type="radio" form="${f}" name="knowledge_bases" value="all"${k.all ? html` checked` : html``}> All knowledge bases, including ones you create later</label>
            <label><input type="radio" form="${f}" name="knowledge_bases" value="some"${k.all ? html`` : html` checked`}> Only the knowledge bases ticked below</label>`
      }
      ${boxes}
    </fieldset>`;
}

export function scopeText(scope: string): string {
  return (SCOPES as Record<string, string>)[scope] ?? scope;
}

/** Whether a redirect URI goes back to this computer (a native app's loopback listener). */
function isLoopback(uri: string): boolean {
  try {
    const host = new URL(uri).hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
  } catch {
    return false;
  }
}

export function consentPage(v: ConsentView): string {
  const color =
    v.client.brandColor && /^#[0-9a-fA-F]{3}([0-9a-fA-F]{3})?$/.test(v.client.brandColor)
      ? v.client.brandColor
      : undefined;
  let destination = v.redirectUri;
  try {
    const u = new URL(v.redirectUri);
    destination = u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : `${u.protocol}//${u.host}`;
  } catch {}
  return layout(
    `Allow ${v.client.name}?`,
    html`<div class="card">
      ${color ? html`<div class="brand-bar" style="background:${color}" aria-hidden="true"></div>` : html``}
      <div class="app-head">
        ${v.client.logo ? html`<img src="${v.client.logo}" alt="${v.client.name} logo">` : html``}
        <div><h1 id="consent-title">${v.client.name} wants to access your Switchboard account</h1>
        ${
          v.client.host
            ? html`<p class="client-host">From <strong><code>${v.client.host}</code></strong></p>
        <p class="muted">The name is given by the app itself; only the address <strong>${v.client.host}</strong> is checked. Allow it only if you trust that address.</p>`
            : v.client.verified
              ? html``
              : html`<p class="muted">This app registered itself; Switchboard has not reviewed it.</p>`
        }</div>
      </div>
      ${v.client.description ? html`<p>${v.client.description}</p>` : html``}
      ${errorLine(v.error)}
      <p>Signed in as <strong>${v.user.name}</strong> (${v.user.email}).</p>
      <h2 id="scopes-title">It asks to:</h2>
      ${
        v.scopes.length
          ? html`<ul class="scopes" aria-labelledby="scopes-title">${v.scopes.map((s) => html`<li><strong>${scopeText(s)}</strong> <code class="muted">${s}</code></li>`)}</ul>`
          : v.alreadyGranted.length
            ? v.knowledge
              ? html`<p>The access you allowed before, with the knowledge bases chosen below.</p>`
              : html`<p>Nothing beyond what you allowed before.</p>`
            : html`<p>No access to your data: only to know it is you.</p>`
      }
      ${
        v.alreadyGranted.length
          ? html`<p class="muted">Already allowed: ${v.alreadyGranted.map(scopeText).join('; ')}.</p>`
          : html``
      }
      ${v.knowledge ? knowledgeChoice(v.knowledge) : html``}
      <p class="muted">Apps never manage your sign-in credentials: creating or changing OAuth apps, access tokens and deleting your account stay with you, signed in to Switchboard.</p>
      <p>Allowing sends you back to <strong>${destination}</strong>.</p>
      ${
        v.client.host && isLoopback(v.redirectUri)
          ? html`<p class="error">That address is on this computer: any program running here could be the one asking, whatever name it gives. Allow only if you have just started ${v.client.name} yourself.</p>`
          : html``
      }
      <div class="actions">
        <form method="post" action="/interaction/${v.uid}/confirm" id="consent-form">
          <input type="hidden" name="csrf" value="${v.csrf}">
          <button class="primary" type="submit">Allow</button>
        </form>
        <form method="post" action="/interaction/${v.uid}/abort">
          <input type="hidden" name="csrf" value="${v.csrf}">
          <button type="submit">Deny</button>
        </form>
      </div>
      <form method="post" action="/signout" class="muted">
        <input type="hidden" name="csrf" value="${v.csrf}">
        <input type="hidden" name="return_to" value="/interaction/${v.uid}">
        Not you? <button type="submit">Use another account</button>
      </form>
      <p class="muted">You can revoke this access at any time under <a href="/account/apps">Authorized apps</a>.</p>
    </div>`,
  );
}

export function appsPage(opts: {
  user: PageUser;
  csrf: string;
  apps: AuthorizedApp[];
  notice?: string | undefined;
  error?: string | undefined;
}): string {
  const rows = opts.apps.map(
    (a) => html`<tr>
      <td><strong>${a.name}</strong></td>
      <td><ul class="scopes">${a.scopes.map((s) => html`<li>${scopeText(s)}</li>`)}</ul>
        ${a.knowledgeBases ? html`<p class="muted">Knowledge bases: only ${a.knowledgeBases.length ? a.knowledgeBases.join(', ') : 'none left (those chosen were deleted)'}</p>` : html``}</td>
      <td><time datetime="${a.grantedAt}">${a.grantedAt.slice(0, 10)}</time></td>
      <td><a class="button danger" href="/account/apps/${a.grantId}/revoke">Revoke <span class="sr-only">${a.name}</span></a></td>
    </tr>`,
  );
  return layout(
    'Authorized apps',
    html`<div class="card"><h1>Authorized apps</h1>
      ${notice(opts.notice)}${notice(opts.error, true)}
      ${
        opts.apps.length
          ? html`<table><caption class="sr-only">Apps that can act on your account</caption>
            <thead><tr><th scope="col">App</th><th scope="col">Access</th><th scope="col">Since</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>${rows}</tbody></table>`
          : html`<p>No app has access to your account.</p>`
      }
    </div>`,
    { user: opts.user, csrf: opts.csrf },
  );
}

export interface TokenRow {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  expiresAt: string;
  lastUsedAt: string | null;
}

export function tokensPage(opts: {
  user: PageUser;
  csrf: string;
  tokens: TokenRow[];
  scopes: string[];
  created?: { name: string; token: string; forMcp?: boolean | undefined } | undefined;
  notice?: string | undefined;
  error?: string | undefined;
  /** What a refused form held, so the user corrects it rather than types it again. */
  form?: { name: string; scopes: string[]; expiresDays: string } | undefined;
  /** This server's MCP endpoint, for the client configurations. */
  mcpUrl: string;
  /** The copy buttons' script (assets.ts). */
  copyScript: string;
}): string {
  const expires = opts.form?.expiresDays ?? '90';
  const rows = opts.tokens.map(
    (t) => html`<tr>
      <td><strong>${t.name}</strong><br><code class="muted">${t.prefix}…</code></td>
      <td>${t.scopes.join(', ')}</td>
      <td><time datetime="${t.expiresAt}">${t.expiresAt.slice(0, 10)}</time></td>
      <td>${t.lastUsedAt ? html`<time datetime="${t.lastUsedAt}">${t.lastUsedAt.slice(0, 10)}</time>` : 'never'}</td>
      <td><a class="button danger" href="/account/tokens/${t.id}/revoke">Revoke <span class="sr-only">${t.name}</span></a></td>
    </tr>`,
  );
  return layout(
    'Personal access tokens',
    html`<div class="card"><h1>Personal access tokens</h1>
      ${
        opts.created
          ? html`<div class="notice" role="status"><p>Token <strong>${opts.created.name}</strong> created. Copy it now: it is not shown again.</p>
            <label for="new-token">Your new token</label><input id="new-token" type="text" readonly value="${opts.created.token}"></div>`
          : html``
      }
      ${notice(opts.notice)}
      ${
        opts.tokens.length
          ? html`<div class="scroll"><table><caption class="sr-only">Your personal access tokens</caption>
            <thead><tr><th scope="col">Name</th><th scope="col">Scopes</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>${rows}</tbody></table></div>`
          : html`<p>You have no active tokens.</p>`
      }
    </div>
    <div class="card"><h2 id="create-title">Create a token</h2>${errorLine(opts.error)}
      <form method="post" action="/account/tokens" aria-labelledby="create-title">
        <input type="hidden" name="csrf" value="${opts.csrf}">
        <label for="token-name">Name</label>
        <input id="token-name" name="name" type="text" required maxlength="100" value="${opts.form?.name ?? ''}">
        <fieldset class="checks"><legend>Scopes</legend>
          ${opts.scopes.map(
            (s) =>
              html`<label><input type="checkbox" name="scopes" value="${s}"${opts.form?.scopes.includes(s) ? html` checked` : html``}> <span><strong>${s}</strong> — ${scopeText(s)}</span></label>`,
          )}
        </fieldset>
        <label for="expires">Expires in</label>
        <select id="expires" name="expires_days">
          ${[
            ['7', '7 days'],
            ['30', '30 days'],
            ['90', '90 days'],
            ['365', '1 year'],
          ].map(
            ([v, label]) =>
              html`<option value="${v ?? ''}"${v === expires ? html` selected` : html``}>${label ?? ''}</option>`,
          )}
        </select>
        <div class="actions"><button class="primary" type="submit">Create token</button></div>
      </form>
    </div>
    ${mcpClientsCard(opts)}`,
    { user: opts.user, csrf: opts.csrf, scripts: [opts.copyScript] },
  );
}

/**
 * Connect an MCP client: one click makes a token with the MCP scopes, and each client's configuration is shown
 * filled with this server's URL (and that token, the once it is shown).
 */
function mcpClientsCard(opts: {
  csrf: string;
  mcpUrl: string;
  created?: { name: string; token: string; forMcp?: boolean | undefined } | undefined;
}) {
  const token = opts.created?.forMcp ? opts.created.token : undefined;
  return html`<div class="card" id="mcp"><h2 id="mcp-title">Connect an MCP client</h2>
      <p>Your MCP endpoint: <code id="mcp-url">${opts.mcpUrl}</code> <button type="button" class="button" data-copy="mcp-url" hidden>Copy</button></p>
      ${
        token
          ? html`<p class="notice" role="status">The configurations below hold your new token <strong>${opts.created?.name ?? ''}</strong>: copy them now, it is not shown again.</p>`
          : html`<form method="post" action="/account/tokens/mcp" aria-labelledby="mcp-title">
              <input type="hidden" name="csrf" value="${opts.csrf}">
              <p>Make a token that may list and call the MCP tools (<code>universal-mcp-read</code>, <code>universal-mcp-read-write</code>; 90 days), and the configurations below are filled with it. Or use a token of your own in place of <code>${TOKEN_PLACEHOLDER}</code>.</p>
              <div class="actions"><button class="primary" type="submit">Create an MCP token</button></div>
            </form>`
      }
      ${mcpClientConfigs(opts.mcpUrl, token).map(
        (c) => html`<section class="mcp-client" aria-labelledby="mcp-${c.id}-h">
          <h3 id="mcp-${c.id}-h">${c.name}</h3>
          <p class="small">In ${c.where}. <a href="${c.docsUrl}" rel="noopener noreferrer">${c.name}'s documentation</a></p>
          <pre class="snippet"><code id="mcp-${c.id}" data-format="${c.format}">${c.text}</code></pre>
          <button type="button" class="button" data-copy="mcp-${c.id}" hidden>Copy <span class="sr-only">the ${c.name} configuration</span></button>
        </section>`,
      )}
    </div>`;
}
