import type { Agent } from '../modules/agents/index.ts';
import type { Task, TaskRun } from '../modules/scheduled-tasks/index.ts';
import { AGENTS_PATH, agentPath } from './agent-pages.ts';
import { type Html, html, layout, notice } from './html.ts';
import type { PageUser } from './pages.ts';

/**
 * The scheduled tasks page: every task of the account with its schedule in words, next run and last run, the
 * buttons to pause or enable it, run it now or delete it; a form to make one, whose "Preview" button shows the
 * schedule in words and its next five runs before anything is saved; and each task's run history. Forms are
 * POSTs with the CSRF token answered by a redirect (or the form again with the error); no JavaScript.
 */

export const TASKS_PATH = '/account/tasks';
export const taskPath = (taskId: string) => `${TASKS_PATH}/${encodeURIComponent(taskId)}`;

export interface TaskDraft {
  agentId: string;
  name: string;
  prompt: string;
  cronExpression: string;
  timezone: string;
}

export interface PreviewView {
  description: string;
  timezone: string;
  nextRuns: Date[];
}

/** An instant as the task's zone reads it ("Mon 30 Nov 2026, 09:00"), with the zone's name. */
export function zoned(at: Date | string, timeZone: string): string {
  const date = typeof at === 'string' ? new Date(at) : at;
  return new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'short',
  }).format(date);
}

const STATUS_BADGE: Record<TaskRun['status'], string> = {
  queued: 'badge-expired',
  running: 'badge-expired',
  retrying: 'badge-expired',
  succeeded: 'badge-active',
  failed: 'badge-error',
};

function runBadge(run: TaskRun): Html {
  return html`<span class="badge ${STATUS_BADGE[run.status]}">${run.status}</span>`;
}

function taskItem(t: Task, agentName: string | undefined, csrf: string): Html {
  const hidden = html`<input type="hidden" name="csrf" value="${csrf}">`;
  return html`<li data-task="${t.id}"><div class="grow">
      <a href="${taskPath(t.id)}"><strong>${t.name}</strong></a>
      ${t.enabled ? html`<span class="badge badge-active">enabled</span>` : html`<span class="badge badge-revoked">paused</span>`}
      <br><span class="small">${t.schedule} <span class="muted">(<code>${t.cronExpression}</code>, ${t.timezone})</span></span>
      <br><span class="muted small">Agent: ${agentName ?? html`<em>deleted</em>`} · Next run: ${t.nextRunAt ? zoned(t.nextRunAt, t.timezone) : 'none'}${t.lastRun ? html` · Last run: ${runBadge(t.lastRun)}` : ''}</span>
      ${t.disabledReason ? html`<br><span class="small error-text">${t.disabledReason}</span>` : ''}
    </div>
    <div class="actions">
      ${
        t.enabled
          ? html`<form method="post" action="${taskPath(t.id)}/run" class="inline">${hidden}<button type="submit">Run now<span class="sr-only"> ${t.name}</span></button></form>
      <form method="post" action="${taskPath(t.id)}/enabled" class="inline">${hidden}<input type="hidden" name="enabled" value="false"><button type="submit">Pause<span class="sr-only"> ${t.name}</span></button></form>`
          : t.disabledReason
            ? ''
            : html`<form method="post" action="${taskPath(t.id)}/enabled" class="inline">${hidden}<input type="hidden" name="enabled" value="true"><button type="submit">Enable<span class="sr-only"> ${t.name}</span></button></form>`
      }
      <form method="post" action="${taskPath(t.id)}/delete" class="inline">${hidden}<button type="submit" class="danger">Delete<span class="sr-only"> ${t.name}</span></button></form>
    </div></li>`;
}

/**
 * A task's name, prompt, schedule and zone, shared by the new-task and edit forms. A new task's zone starts as
 * UTC and the page's script (assets/timezone.js) puts the browser's own zone in its place while untouched.
 */
function taskFields(d: Partial<TaskDraft> | undefined, zones: readonly string[]): Html {
  return html`<label for="task-name">Name</label><input type="text" id="task-name" name="name" required maxlength="200" value="${d?.name ?? ''}" placeholder="Monday digest">
        <label for="task-prompt">Prompt</label><textarea id="task-prompt" name="prompt" rows="3" style="width:100%" required maxlength="20000" placeholder="Summarize my unread email from the last week.">${d?.prompt ?? ''}</textarea>
        <label for="task-cron">Schedule (cron: minute hour day-of-month month day-of-week)</label><input type="text" id="task-cron" name="cronExpression" required maxlength="200" value="${d?.cronExpression ?? '0 9 * * 1'}" aria-describedby="cron-help">
        <p id="cron-help" class="small muted"><code>0 9 * * 1</code> every Monday at 09:00 · <code>*/30 8-18 * * 1-5</code> every half hour on weekdays · <code>0 7 1 * *</code> the 1st of each month at 07:00</p>
        <label for="task-timezone">Time zone</label><input type="text" id="task-timezone" name="timezone" required maxlength="100" list="zones" value="${d?.timezone ?? 'UTC'}"${d?.timezone === undefined ? html` data-browser-zone` : ''}>
        <datalist id="zones">${zones.map((z) => html`<option value="${z}">`)}</datalist>`;
}

function previewView(p: PreviewView | undefined): Html {
  if (!p) return html``;
  return html`<div class="preview" role="status" aria-labelledby="preview-h">
      <h3 id="preview-h">${p.description}</h3>
      <p class="small muted">The next five runs (${p.timezone}):</p>
      <ol class="small">${p.nextRuns.map((d) => html`<li><time datetime="${d.toISOString()}">${zoned(d, p.timezone)}</time></li>`)}</ol>
    </div>`;
}

export function tasksPage(v: {
  user: PageUser;
  csrf: string;
  tasks: Task[];
  agents: Agent[];
  zones: string[];
  /** The zone script's path (assets.ts). */
  script: string;
  draft?: TaskDraft | undefined;
  preview?: PreviewView | undefined;
  notice?: string | undefined;
  error?: string | undefined;
}): string {
  const names = new Map(v.agents.map((a) => [a.id, a.name]));
  const d = v.draft;
  const body = html`
    <h1>Scheduled tasks</h1>
    ${notice(v.notice)}
    ${notice(v.error, true)}
    <section class="card" aria-labelledby="list-h">
      <h2 id="list-h">Your tasks</h2>
      ${
        v.tasks.length === 0
          ? html`<p class="muted">No tasks yet: an agent can act on a clock, such as a digest every Monday at 09:00.</p>`
          : html`<ul class="items">${v.tasks.map((t) => taskItem(t, names.get(t.agentId), v.csrf))}</ul>`
      }
    </section>
    <section class="card" aria-labelledby="new-h">
      <h2 id="new-h">New task</h2>
      ${
        v.agents.length === 0
          ? html`<p class="muted">A task sends its prompt to an agent: <a href="${AGENTS_PATH}">make an agent</a> first.</p>`
          : html`<form method="post" action="${TASKS_PATH}">
        <input type="hidden" name="csrf" value="${v.csrf}">
        <label for="task-agent">Agent</label><select id="task-agent" name="agentId">${v.agents.map(
          (a) => html`<option value="${a.id}"${a.id === d?.agentId ? ' selected' : ''}>${a.name}</option>`,
        )}</select>
        ${taskFields(d, v.zones)}
        ${previewView(v.preview)}
        <div class="actions"><button type="submit" formaction="${TASKS_PATH}/preview">Preview schedule</button><button type="submit" class="primary">Create task</button></div>
      </form>`
      }
    </section>`;
  return layout('Scheduled tasks', body, { user: v.user, csrf: v.csrf, scripts: [v.script] });
}

export function taskRunsPage(v: {
  user: PageUser;
  csrf: string;
  task: Task;
  agent: Agent | undefined;
  runs: TaskRun[];
  total: number;
  zones: string[];
  notice?: string | undefined;
  /** A refused edit: the message and what the form held. */
  error?: string | undefined;
  draft?: Omit<TaskDraft, 'agentId'> | undefined;
}): string {
  const { task } = v;
  const d = v.draft ?? task;
  const body = html`
    <p class="small"><a href="${TASKS_PATH}">← Scheduled tasks</a></p>
    <h1>${task.name}</h1>
    ${notice(v.notice)}
    <section class="card" aria-labelledby="task-h">
      <h2 id="task-h">Task</h2>
      <ul class="items">${taskItem(task, v.agent?.name, v.csrf)}</ul>
      <p class="small"><strong>Prompt</strong></p><pre class="small">${task.prompt}</pre>
    </section>
    <section class="card" aria-labelledby="edit-h">
      <h2 id="edit-h">Edit task</h2>
      ${notice(v.error, true)}
      <form method="post" action="${taskPath(task.id)}">
        <input type="hidden" name="csrf" value="${v.csrf}">
        ${taskFields(d, v.zones)}
        <div class="actions"><button type="submit" class="primary">Save task</button></div>
      </form>
    </section>
    <section class="card" aria-labelledby="runs-h">
      <h2 id="runs-h">Run history</h2>
      ${
        v.runs.length === 0
          ? html`<p class="muted">No runs yet.</p>`
          : html`<div class="scroll"><table><thead><tr><th scope="col">Status</th><th scope="col">For</th><th scope="col">Finished</th><th scope="col">Credits</th><th scope="col">Result</th></tr></thead><tbody>${v.runs.map(
              (r) => html`<tr data-run="${r.id}">
                <td>${runBadge(r)}<br><span class="small muted">${r.trigger}${r.attempts > 1 ? html`, ${r.attempts} attempts` : ''}</span></td>
                <td class="small">${zoned(r.scheduledFor, task.timezone)}</td>
                <td class="small">${r.finishedAt ? zoned(r.finishedAt, task.timezone) : '—'}</td>
                <td>${r.creditsConsumed}</td>
                <td class="small">${r.error ? html`<span class="error-text">${r.error}</span>` : r.output ? html`${r.output.slice(0, 300)}${r.output.length > 300 ? '…' : ''}` : ''}${r.conversationId && v.agent ? html`<br><a href="${agentPath(v.agent.id, r.conversationId)}">Conversation</a>` : ''}</td>
              </tr>`,
            )}</tbody></table></div>${v.total > v.runs.length ? html`<p class="small muted">The latest ${v.runs.length} of ${v.total} runs.</p>` : ''}`
      }
    </section>`;
  return layout(`${task.name} · Scheduled tasks`, body, { user: v.user, csrf: v.csrf });
}
