import type { Account } from '../modules/accounts/index.ts';
import type { CreditTransaction, UsageDay } from '../modules/credits/index.ts';
import type { SetupNotice } from '../modules/system/index.ts';
import { historyTable, usageChart } from './credits-pages.ts';
import { html, layout } from './html.ts';
import type { PageUser } from './pages.ts';

/** The home page for a visitor, and the account page (balance, credit usage and recent history) for a signed-in user. */

/** What the operator has not set up yet (see modules/system/setup.ts), or nothing. */
function setupCard(notices: readonly SetupNotice[]) {
  if (notices.length === 0) return '';
  return html`<section class="card" aria-labelledby="setup-h" id="setup">
      <h2 id="setup-h">Not set up yet</h2>
      <ul>${notices.map((n) => html`<li><strong>${n.title}</strong><br><span class="small">${n.how}</span></li>`)}</ul>
    </section>`;
}

/** The first steps of a new account, each ticked once done; gone once all are. */
function nextSteps(steps: { connected: boolean; tokenMade: boolean; agentMade: boolean }) {
  const items = [
    {
      done: steps.connected,
      href: '/account/connections',
      title: 'Connect a service',
      text: 'Link GitHub, Gmail, Slack and more, so your agents and MCP clients can act there.',
    },
    {
      done: steps.tokenMade,
      href: '/account/tokens#mcp',
      title: 'Make a token and connect an MCP client',
      text: 'One click gives a token and ready-to-paste settings for Claude, Cursor, VS Code and Windsurf.',
    },
    {
      done: steps.agentMade,
      href: '/account/agents',
      title: 'Try the chat',
      text: 'Make an agent and talk to it: it can use your connections, knowledge and tools.',
    },
  ];
  if (items.every((i) => i.done)) return '';
  return html`<section class="card" aria-labelledby="next-h">
      <h2 id="next-h">Next steps</h2>
      <ol class="steps">${items.map(
        (i) =>
          html`<li class="${i.done ? 'done' : ''}"><a href="${i.href}">${i.title}</a>${i.done ? html` <span class="badge badge-active">done</span>` : ''}<br><span class="small muted">${i.text}</span></li>`,
      )}</ol>
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
  /** Credits spent per day and kind, oldest first. */
  usage: readonly UsageDay[];
  notices?: readonly SetupNotice[];
  /** What the account has done of the first steps. */
  steps: { connected: boolean; tokenMade: boolean; agentMade: boolean };
}): string {
  const fmt = (n: number) => n.toLocaleString('en-US');
  return layout(
    'Your account',
    html`<h1>Your account</h1>
    ${setupCard(v.notices ?? [])}
    ${nextSteps(v.steps)}
    <section class="card" aria-labelledby="acct-h">
      <h2 id="acct-h">${v.account.name}</h2>
      <p class="muted">${v.account.email}</p>
      <p>Credit balance: <strong id="balance">${fmt(v.account.creditBalance)}</strong> credits
        <span class="muted small">(1 credit = 0.0001 USD)</span></p>
      <p class="small"><a href="/account/connections">Connections</a> · <a href="/account/agents">Agents</a> · <a href="/account/tasks">Tasks</a> · <a href="/account/knowledge">Knowledge</a> · <a href="/account/tokens">Access tokens</a> · <a href="/account/apps">Authorized apps</a> · <a href="/account/credits">Credits</a></p>
    </section>
    <section class="card" aria-labelledby="usage-h">
      <h2 id="usage-h">Credit usage, last ${v.usage.length} days</h2>
      ${usageChart(v.usage)}
    </section>
    <section class="card" aria-labelledby="history-h">
      <h2 id="history-h">Recent credit history</h2>
      ${historyTable(v.history)}
      <p><a href="/account/credits">All credit history, with filters</a></p>
    </section>`,
    { user: v.user, csrf: v.csrf },
  );
}
