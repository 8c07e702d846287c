import type { Page } from '../lib/pagination.ts';
import type { Activity } from '../modules/activity/index.ts';
import { type Html, html, layout, notice } from './html.ts';
import type { PageUser } from './pages.ts';

/** The activity page: what was done on the account's behalf, filtered, a page at a time, failures explained. */

/** The page's filters as the form holds them (dates YYYY-MM-DD, UTC, both inclusive). */
export interface ActivityFilter {
  connectionId: string;
  agentId: string;
  tool: string;
  status: string;
  from: string;
  to: string;
}

export const EMPTY_ACTIVITY_FILTER: ActivityFilter = {
  connectionId: '',
  agentId: '',
  tool: '',
  status: '',
  from: '',
  to: '',
};

const STATUS_LABELS: Record<string, string> = {
  ok: 'OK',
  error: 'Failed',
  refused: 'Refused (permission)',
  blocked: 'Blocked (prompt injection)',
};

/** The activity URL for these filters (empty ones left out), e.g. from a connection's or an agent's page. */
export function activityUrl(f: Partial<ActivityFilter>, page = 1): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
  if (page > 1) q.set('page', String(page));
  const s = q.toString();
  return s ? `/account/activity?${s}` : '/account/activity';
}

function what(a: Activity): Html {
  if (a.kind === 'agent-run') return html`Agent run`;
  if (a.kind === 'connection') return html`Connection ${a.tool ?? ''}`;
  return html`<code>${a.tool ?? ''}</code>${a.mode ? html` <span class="muted small">(${a.mode})</span>` : ''}`;
}

function details(a: Activity): Html {
  return html`${a.arguments ? html`<div class="small"><span class="muted">Arguments:</span> <code>${a.arguments}</code></div>` : ''}${
    a.result ? html`<div class="small"><span class="muted">Result:</span> <code>${a.result}</code></div>` : ''
  }${a.error ? html`<div class="small error" role="note"><strong>Error:</strong> ${a.error}</div>` : ''}`;
}

export function activityTable(rows: readonly Activity[]): Html {
  if (rows.length === 0) return html`<p class="muted">No activity here.</p>`;
  return html`<div class="scroll"><table id="activity"><thead><tr><th>When (UTC)</th><th>Who</th><th>What</th><th>Connection</th><th>Status</th><th>Time</th><th>Credits</th></tr></thead><tbody>${rows.map(
    (a) =>
      html`<tr data-status="${a.status}"><td class="small">${a.createdAt.slice(0, 19).replace('T', ' ')}</td><td>${a.actor.name}<br><span class="muted small">${a.via}</span></td><td>${what(a)}${details(a)}</td><td class="small">${
        a.connectionId
          ? html`<a href="${activityUrl({ connectionId: a.connectionId })}">${a.providerId ?? a.connectionId}</a>`
          : ''
      }</td><td>${STATUS_LABELS[a.status] ?? a.status}</td><td class="small">${a.durationMs === null ? '' : `${a.durationMs} ms`}</td><td>${a.credits}</td></tr>`,
  )}</tbody></table></div>`;
}

export function activityPage(v: {
  user: PageUser;
  csrf: string;
  filter: ActivityFilter;
  activity: Page<Activity>;
  retentionDays: number;
  error?: string | undefined;
}): string {
  const { page, limit, total } = v.activity.pagination;
  const pages = Math.max(1, Math.ceil(total / limit));
  const f = v.filter;
  const filtered = Object.values(f).some(Boolean);
  return layout(
    'Activity',
    html`<h1>Activity</h1>
    <section class="card" aria-labelledby="activity-h">
      <h2 id="activity-h">What was done on your behalf</h2>
      <p class="small muted">Tool calls, agent runs and connection events of the last ${v.retentionDays} days. Arguments and results are shortened, with secrets removed.</p>
      ${notice(v.error, true)}
      <form method="get" action="/account/activity" class="filters" role="search" aria-label="Filter the activity">
        <div><label for="f-status">Status</label><select id="f-status" name="status"><option value="">Any status</option>${Object.entries(
          STATUS_LABELS,
        ).map(
          ([s, label]) => html`<option value="${s}"${f.status === s ? html` selected` : ''}>${label}</option>`,
        )}</select></div>
        <div><label for="f-tool">Tool</label><input id="f-tool" name="tool" value="${f.tool}"></div>
        <div><label for="f-from">From (UTC)</label><input type="date" id="f-from" name="from" value="${f.from}"></div>
        <div><label for="f-to">To (UTC, included)</label><input type="date" id="f-to" name="to" value="${f.to}"></div>
        ${f.connectionId ? html`<input type="hidden" name="connectionId" value="${f.connectionId}">` : ''}
        ${f.agentId ? html`<input type="hidden" name="agentId" value="${f.agentId}">` : ''}
        <div><button type="submit">Filter</button>${filtered ? html` <a href="/account/activity">Clear</a>` : ''}</div>
      </form>
      ${f.connectionId ? html`<p class="small">Connection <code>${f.connectionId}</code> only.</p>` : ''}
      ${f.agentId ? html`<p class="small">Agent <code>${f.agentId}</code> only.</p>` : ''}
      <p class="small muted" id="activity-count">${total} ${total === 1 ? 'entry' : 'entries'}${filtered ? ' match' : ''}${total > 0 ? `; page ${page} of ${pages}` : ''}.</p>
      ${activityTable(v.activity.data)}
      ${
        pages > 1
          ? html`<nav aria-label="Pages of the activity" class="actions compact">${
              page > 1 ? html`<a class="button" rel="prev" href="${activityUrl(f, page - 1)}">Newer</a>` : ''
            }${v.activity.pagination.hasMore ? html`<a class="button" rel="next" href="${activityUrl(f, page + 1)}">Older</a>` : ''}</nav>`
          : ''
      }
    </section>`,
    { user: v.user, csrf: v.csrf },
  );
}
