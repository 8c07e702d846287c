import type { Page } from '../lib/pagination.ts';
import type { CreditTransaction } from '../modules/credits/index.ts';
import {
  CREDIT_KIND_LABELS,
  CREDIT_TRANSACTION_TYPES,
  USAGE_KINDS,
  type UsageDay,
  type UsageKind,
} from '../modules/credits/index.ts';
import { type Html, html, layout, notice } from './html.ts';
import type { PageUser } from './pages.ts';

/** The credits pages: the 30-day usage chart (server-rendered SVG, no script) and the credit history. */

/** One colour per kind, readable on the light and the dark card (and told apart without colour by the table). */
const COLOURS: Record<UsageKind, string> = {
  llm: '#2f81f7',
  agent: '#1a9e5a',
  mcp: '#d4a017',
  task: '#bf4b8a',
  sandbox: '#e8742c',
  knowledge: '#8a63d2',
};

const fmt = (n: number) => n.toLocaleString('en-US');
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** "28 Nov" from YYYY-MM-DD. */
const shortDay = (day: string) => `${Number(day.slice(8, 10))} ${MONTHS[Number(day.slice(5, 7)) - 1] ?? ''}`;

/** A round upper bound for the axis: 1, 2 or 5 times a power of ten, at least `max`. */
function axisTop(max: number): number {
  if (max <= 0) return 10;
  const p = 10 ** Math.floor(Math.log10(max));
  return ([1, 2, 5, 10].map((m) => m * p).find((v) => v >= max) ?? 10 * p) as number;
}

/** What a row was, in words (a stored type this version does not know is shown as it is). */
export function kindLabel(type: string): string {
  return (CREDIT_KIND_LABELS as Record<string, string>)[type] ?? type;
}

/**
 * Credits spent per day as stacked bars, one colour per kind, with a legend and the same figures as a table (for
 * screen readers and for reading exact numbers). The SVG scales to its container (viewBox, width 100%).
 */
export function usageChart(days: readonly UsageDay[]): Html {
  const W = 360;
  const H = 190;
  const left = 40;
  const bottom = 20;
  const top = 8;
  const plotH = H - top - bottom;
  const slot = (W - left - 4) / Math.max(1, days.length);
  const bar = Math.max(1, slot * 0.72);
  const total = days.reduce((s, d) => s + d.total, 0);
  const max = axisTop(Math.max(0, ...days.map((d) => d.total)));
  const y = (v: number) => top + plotH - (v / max) * plotH;
  const first = days[0]?.day ?? '';
  const last = days.at(-1)?.day ?? '';
  const used = USAGE_KINDS.filter((k) => days.some((d) => d.credits[k] > 0));
  const desc =
    total === 0
      ? `No credits spent from ${first} to ${last}.`
      : `${fmt(total)} credits spent from ${first} to ${last}: ${used
          .map((k) => `${CREDIT_KIND_LABELS[k]} ${fmt(days.reduce((s, d) => s + d.credits[k], 0))}`)
          .join(', ')}.`;

  const grid = [0, max / 2, max].map(
    (v) =>
      html`<line x1="${left}" x2="${W}" y1="${y(v)}" y2="${y(v)}" stroke="currentColor" stroke-opacity="0.2"/><text x="${left - 4}" y="${y(v) + 3.5}" text-anchor="end" font-size="10" fill="currentColor">${fmt(v)}</text>`,
  );
  const bars = days.map((d, i) => {
    const x = left + i * slot + (slot - bar) / 2;
    let base = 0;
    const parts = USAGE_KINDS.filter((k) => d.credits[k] > 0).map((k) => {
      const from = y(base);
      base += d.credits[k];
      const to = y(base);
      return html`<rect x="${x.toFixed(1)}" y="${to.toFixed(1)}" width="${bar.toFixed(1)}" height="${Math.max(0.5, from - to).toFixed(1)}" fill="${COLOURS[k]}"><title>${d.day} · ${CREDIT_KIND_LABELS[k]}: ${fmt(d.credits[k])} credits</title></rect>`;
    });
    // A label under every 7th day, counted back from today so that today is always labelled.
    const label =
      (days.length - 1 - i) % 7 === 0
        ? html`<text x="${(i === days.length - 1 ? x + bar : x + bar / 2).toFixed(1)}" y="${H - 6}" text-anchor="${i === days.length - 1 ? 'end' : 'middle'}" font-size="10" fill="currentColor">${shortDay(d.day)}</text>`
        : '';
    return html`${parts}${label}`;
  });

  const rows = days.filter((d) => d.total > 0);
  return html`<figure class="graph usage">
      <svg viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-labelledby="usage-title usage-desc" id="usage-chart">
        <title id="usage-title">Credits spent per day, last ${days.length} days</title>
        <desc id="usage-desc">${desc}</desc>
        ${grid}${bars}
      </svg>
      <figcaption><ul class="legend">${USAGE_KINDS.map(
        (k) => html`<li><span class="swatch" style="background:${COLOURS[k]}"></span>${CREDIT_KIND_LABELS[k]}</li>`,
      )}</ul>
      <p class="small muted">${desc} Days are UTC.</p></figcaption>
    </figure>
    ${
      rows.length === 0
        ? ''
        : html`<details><summary>The figures as a table</summary><div class="scroll"><table class="small" id="usage-table"><thead><tr><th>Day</th>${USAGE_KINDS.map(
            (k) => html`<th>${CREDIT_KIND_LABELS[k]}</th>`,
          )}<th>Total</th></tr></thead><tbody>${rows.map(
            (d) =>
              html`<tr><td>${d.day}</td>${USAGE_KINDS.map((k) => html`<td>${fmt(d.credits[k])}</td>`)}<td>${fmt(d.total)}</td></tr>`,
          )}</tbody></table></div></details>`
    }`;
}

/** Credit movements as a table, each row saying in words what it was. */
export function historyTable(rows: readonly CreditTransaction[]): Html {
  if (rows.length === 0) return html`<p class="muted">No credit movements here.</p>`;
  return html`<div class="scroll"><table id="credit-history"><thead><tr><th>When (UTC)</th><th>What</th><th>Credits</th><th>Balance</th></tr></thead><tbody>${rows.map(
    (t) =>
      html`<tr><td class="small">${t.createdAt.slice(0, 16).replace('T', ' ')}</td><td>${kindLabel(t.type)}${t.description && t.description !== kindLabel(t.type) ? html`<br><span class="muted small">${t.description}</span>` : ''}</td><td>${t.amount > 0 ? `+${fmt(t.amount)}` : fmt(t.amount)}</td><td>${fmt(t.balanceAfter)}</td></tr>`,
  )}</tbody></table></div>`;
}

/** The history page's filters as the form holds them (dates YYYY-MM-DD, UTC, both inclusive). */
export interface HistoryFilter {
  kind: string;
  from: string;
  to: string;
}

/** The history URL for a page of these filters (empty filters left out). */
export function historyUrl(f: HistoryFilter, page: number): string {
  const q = new URLSearchParams();
  if (f.kind) q.set('kind', f.kind);
  if (f.from) q.set('from', f.from);
  if (f.to) q.set('to', f.to);
  if (page > 1) q.set('page', String(page));
  const s = q.toString();
  return s ? `/account/credits?${s}` : '/account/credits';
}

export function creditsPage(v: {
  user: PageUser;
  csrf: string;
  balance: number;
  usage: readonly UsageDay[];
  filter: HistoryFilter;
  history: Page<CreditTransaction>;
  error?: string | undefined;
}): string {
  const { page, limit, total } = v.history.pagination;
  const pages = Math.max(1, Math.ceil(total / limit));
  const f = v.filter;
  const filtered = !!(f.kind || f.from || f.to);
  return layout(
    'Credits',
    html`<h1>Credits</h1>
    <section class="card" aria-labelledby="usage-h">
      <h2 id="usage-h">Usage, last ${v.usage.length} days</h2>
      <p>Balance: <strong>${fmt(v.balance)}</strong> credits <span class="muted small">(1 credit = 0.0001 USD)</span></p>
      ${usageChart(v.usage)}
    </section>
    <section class="card" aria-labelledby="history-h">
      <h2 id="history-h">Credit history</h2>
      ${notice(v.error, true)}
      <form method="get" action="/account/credits" class="filters" role="search" aria-label="Filter the credit history">
        <div><label for="f-kind">Kind</label><select id="f-kind" name="kind"><option value="">All kinds</option>${CREDIT_TRANSACTION_TYPES.map(
          (t) => html`<option value="${t}"${f.kind === t ? html` selected` : ''}>${kindLabel(t)}</option>`,
        )}</select></div>
        <div><label for="f-from">From (UTC)</label><input type="date" id="f-from" name="from" value="${f.from}"></div>
        <div><label for="f-to">To (UTC, included)</label><input type="date" id="f-to" name="to" value="${f.to}"></div>
        <div><button type="submit">Filter</button>${filtered ? html` <a href="/account/credits">Clear</a>` : ''}</div>
      </form>
      <p class="small muted" id="history-count">${fmt(total)} ${total === 1 ? 'movement' : 'movements'}${filtered ? ' match' : ''}${total > 0 ? `; page ${page} of ${pages}` : ''}.</p>
      ${historyTable(v.history.data)}
      ${
        pages > 1
          ? html`<nav aria-label="Pages of the credit history" class="actions compact">${
              page > 1 ? html`<a class="button" rel="prev" href="${historyUrl(f, page - 1)}">Newer</a>` : ''
            }${v.history.pagination.hasMore ? html`<a class="button" rel="next" href="${historyUrl(f, page + 1)}">Older</a>` : ''}</nav>`
          : ''
      }
    </section>`,
    { user: v.user, csrf: v.csrf },
  );
}
