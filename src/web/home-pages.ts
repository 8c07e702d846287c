import type { Account } from '../modules/accounts/schema.ts';
import type { CreditTransaction } from '../modules/credits/schema.ts';
import type { SetupNotice } from '../modules/system/setup.ts';
import { html, layout } from './html.ts';
import type { PageUser } from './pages.ts';

/** The home page for a visitor, and the account page (balance and recent credit history) for a signed-in user. */

/** What the operator has not set up yet (see modules/system/setup.ts), or nothing. */
function setupCard(notices: readonly SetupNotice[]) {
  if (notices.length === 0) return '';
  return html`<section class="card" aria-labelledby="setup-h" id="setup">
      <h2 id="setup-h">Not set up yet</h2>
      <ul>${notices.map((n) => html`<li><strong>${n.title}</strong><br><span class="small">${n.how}</span></li>`)}</ul>
    </section>`;
}

export function homePage(notices: readonly SetupNotice[] = []): string {
  return layout(
    'Switchboard',
    html`<div class="card">
      <h1>Switchboard</h1>
      <p>One MCP endpoint through which your AI applications reach your services (mail, code, chat, documents and
      more), with the OAuth connections, an OpenAI-compatible LLM gateway billed in credits, agents with memory and
      knowledge bases compiled into wikis.</p>
      <div class="actions"><a class="button primary" href="/signin">Sign in</a><a class="button" href="/signup">Create an account</a><a class="button" href="/docs">API reference</a></div>
    </div>
    ${setupCard(notices)}`,
  );
}

export function accountPage(v: {
  user: PageUser;
  csrf: string;
  account: Account;
  history: CreditTransaction[];
  notices?: readonly SetupNotice[];
}): string {
  const fmt = (n: number) => n.toLocaleString('en-US');
  return layout(
    'Your account',
    html`<h1>Your account</h1>
    ${setupCard(v.notices ?? [])}
    <section class="card" aria-labelledby="acct-h">
      <h2 id="acct-h">${v.account.name}</h2>
      <p class="muted">${v.account.email}</p>
      <p>Credit balance: <strong id="balance">${fmt(v.account.creditBalance)}</strong> credits
        <span class="muted small">(1 credit = 0.0001 USD)</span></p>
      <p class="small"><a href="/account/connections">Connections</a> · <a href="/account/agents">Agents</a> · <a href="/account/tasks">Tasks</a> · <a href="/account/knowledge">Knowledge</a> · <a href="/account/tokens">Access tokens</a> · <a href="/account/apps">Authorized apps</a></p>
    </section>
    <section class="card" aria-labelledby="history-h">
      <h2 id="history-h">Recent credit history</h2>
      ${
        v.history.length === 0
          ? html`<p class="muted">No credit movements yet.</p>`
          : html`<table><thead><tr><th>When</th><th>What</th><th>Credits</th><th>Balance</th></tr></thead><tbody>${v.history.map(
              (t) =>
                html`<tr><td class="small">${t.createdAt.slice(0, 16).replace('T', ' ')}</td><td>${t.type}${t.description ? html`<br><span class="muted small">${t.description}</span>` : ''}</td><td>${t.amount > 0 ? `+${fmt(t.amount)}` : fmt(t.amount)}</td><td>${fmt(t.balanceAfter)}</td></tr>`,
            )}</tbody></table>`
      }
    </section>`,
    { user: v.user, csrf: v.csrf },
  );
}
