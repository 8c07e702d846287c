import type { Agent } from '../modules/agents/index.ts';
import { type AgentToolLink, TOOL_LANGUAGES, type Tool, type ToolRun } from '../modules/custom-tools/index.ts';
import type { Skill } from '../modules/skills/index.ts';
import { type Html, html, layout, notice } from './html.ts';
import type { PageUser } from './pages.ts';

/**
 * The custom tools and skills pages: each list with a form to make one, and one tool's page (its code, schema
 * and secrets to edit, and a form that runs it once and shows the run) or one skill's. Every action is a POST
 * with the CSRF token answered by a redirect; no JavaScript.
 */

export const TOOLS_PATH = '/account/tools';
export const SKILLS_PATH = '/account/skills';
export const toolPath = (toolId: string) => `${TOOLS_PATH}/${encodeURIComponent(toolId)}`;
export const skillPath = (skillId: string) => `${SKILLS_PATH}/${encodeURIComponent(skillId)}`;
const agentHref = (agentId: string) => `/account/agents/${encodeURIComponent(agentId)}`;

/** The agents a tool is linked to, each with its secrets' state, a form to set them and one to unlink; and a form to link. */
function toolAgents(v: {
  csrf: string;
  tool: Tool;
  agents: Pick<Agent, 'id' | 'name'>[];
  links: AgentToolLink[];
}): Html {
  const t = v.tool;
  const names = new Map(v.agents.map((a) => [a.id, a.name]));
  const linked = new Set(v.links.map((l) => l.agentId));
  const free = v.agents.filter((a) => !linked.has(a.id));
  const secretInputs = (idPrefix: string, labelOf: (s: string) => string) =>
    t.requiredSecrets.map(
      (s) =>
        html`<label for="${idPrefix}-${s}">${labelOf(s)}</label><input type="password" id="${idPrefix}-${s}" name="secret_${s}" autocomplete="off">`,
    );
  return html`<section class="card" aria-labelledby="agents-h" id="agents">
    <h2 id="agents-h">Agents</h2>
    ${
      v.links.length === 0
        ? html`<p class="muted">No agent uses this tool yet.</p>`
        : html`<ul class="items">${v.links.map((l) => {
            const name = names.get(l.agentId) ?? l.agentId;
            return html`<li><div class="grow"><a href="${agentHref(l.agentId)}"><strong>${name}</strong></a> ${
              l.ready
                ? html`<span class="badge badge-active">ready</span>`
                : html`<span class="badge badge-expired">missing ${l.missingSecrets.join(', ')}</span>`
            }${
              t.requiredSecrets.length
                ? html`<form method="post" action="${toolPath(t.id)}/links/${encodeURIComponent(l.agentId)}">
                    <input type="hidden" name="csrf" value="${v.csrf}">
                    ${secretInputs(`link-${l.agentId}`, (s) => `${s} for ${name}${l.secrets.find((x) => x.name === s)?.set ? ' (set; blank keeps it)' : ''}`)}
                    <div class="actions compact"><button type="submit">Save secrets for ${name}</button></div>
                  </form>`
                : ''
            }<form method="post" action="${toolPath(t.id)}/links/${encodeURIComponent(l.agentId)}/unlink" class="inline">
                <input type="hidden" name="csrf" value="${v.csrf}">
                <div class="actions compact"><button type="submit" class="danger">Unlink ${name}</button></div>
              </form></div></li>`;
          })}</ul>`
    }
    ${
      free.length
        ? html`<h3>Link to an agent</h3>
          <form method="post" action="${toolPath(t.id)}/links">
            <input type="hidden" name="csrf" value="${v.csrf}">
            <label for="link-agent">Agent</label>
            <select id="link-agent" name="agentId">${free.map((a) => html`<option value="${a.id}">${a.name}</option>`)}</select>
            ${secretInputs('new-link', (s) => `Value of ${s}`)}
            <div class="actions"><button type="submit">Link</button></div>
          </form>`
        : ''
    }
  </section>`;
}

/** A tool's fields as the form holds them (text, so a refused form comes back as typed). */
export interface ToolDraft {
  name: string;
  description: string;
  language: string;
  parameters: string;
  requiredSecrets: string;
  timeoutMs: string;
  code: string;
}

export function toolDraftOf(t: Tool): ToolDraft {
  return {
    name: t.name,
    description: t.description,
    language: t.language,
    parameters: JSON.stringify(t.parameters, null, 2),
    requiredSecrets: t.requiredSecrets.join(', '),
    timeoutMs: t.timeoutMs === null ? '' : String(t.timeoutMs),
    code: t.code,
  };
}

const EMPTY_DRAFT: ToolDraft = {
  name: '',
  description: '',
  language: 'javascript',
  parameters:
    '{\n  "type": "object",\n  "properties": {\n    "name": { "type": "string" }\n  },\n  "required": ["name"]\n}',
  requiredSecrets: '',
  timeoutMs: '',
  code: "return 'Hello, ' + args.name + '!';",
};

const area = 'width:100%;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9rem';

function toolFields(d: ToolDraft): Html {
  return html`
    <label for="tool-name">Name</label>
    <input type="text" id="tool-name" name="name" required maxlength="64" value="${d.name}" aria-describedby="tool-name-help">
    <p id="tool-name-help" class="muted small">What the model calls it: letters, digits, _ and -, starting with a letter.</p>
    <label for="tool-description">Description</label>
    <input type="text" id="tool-description" name="description" maxlength="2000" value="${d.description}">
    <label for="tool-language">Language</label>
    <select id="tool-language" name="language">${TOOL_LANGUAGES.map(
      (l) => html`<option value="${l}"${l === d.language ? html` selected` : ''}>${l}</option>`,
    )}</select>
    <label for="tool-parameters">Parameters (JSON Schema)</label>
    <textarea id="tool-parameters" name="parameters" rows="8" style="${area}" spellcheck="false">${d.parameters}</textarea>
    <label for="tool-secrets">Required secrets</label>
    <input type="text" id="tool-secrets" name="requiredSecrets" value="${d.requiredSecrets}" placeholder="API_KEY, OTHER_TOKEN" aria-describedby="tool-secrets-help">
    <p id="tool-secrets-help" class="muted small">Names only, separated by commas; each agent link sets the values.</p>
    <label for="tool-timeout">Time limit (ms, optional)</label>
    <input type="number" id="tool-timeout" name="timeoutMs" min="100" value="${d.timeoutMs}">
    <label for="tool-code">Code</label>
    <textarea id="tool-code" name="code" rows="14" style="${area}" spellcheck="false" aria-describedby="tool-code-help">${d.code}</textarea>
    <p id="tool-code-help" class="muted small">JavaScript/TypeScript: the body of an async function with <code>args</code> and <code>secrets</code> in scope; <code>return</code> the result. Python: <code>args</code> and <code>secrets</code> are dicts; set <code>result</code>. What the code prints is stdout.</p>`;
}

export function toolsPage(v: {
  user: PageUser;
  csrf: string;
  tools: Tool[];
  notice?: string | undefined;
  error?: string | undefined;
  draft?: ToolDraft | undefined;
}): string {
  const body = html`
    <h1>Tools</h1>
    ${notice(v.notice)}${notice(v.error, true)}
    <section class="card" aria-labelledby="list-h">
      <h2 id="list-h">Your tools</h2>
      ${
        v.tools.length === 0
          ? html`<p class="muted">No tools yet: write one below, then link it to an agent.</p>`
          : html`<ul class="items">${v.tools.map(
              (t) =>
                html`<li><div class="grow"><a href="${toolPath(t.id)}"><strong>${t.name}</strong></a> <span class="badge badge-active">${t.language}</span>${t.description ? html`<br><span class="small">${t.description}</span>` : ''}${t.requiredSecrets.length ? html`<br><span class="muted small">secrets: ${t.requiredSecrets.join(', ')}</span>` : ''}</div></li>`,
            )}</ul>`
      }
    </section>
    <section class="card" aria-labelledby="new-h">
      <h2 id="new-h">New tool</h2>
      <form method="post" action="${TOOLS_PATH}">
        <input type="hidden" name="csrf" value="${v.csrf}">
        ${toolFields(v.draft ?? EMPTY_DRAFT)}
        <div class="actions"><button type="submit" class="primary">Create tool</button></div>
      </form>
    </section>`;
  return layout('Tools', body, { user: v.user, csrf: v.csrf });
}

function runView(run: ToolRun): Html {
  const json = (value: unknown) => JSON.stringify(value, null, 2) ?? 'null';
  return html`<section class="card" aria-labelledby="result-h" id="result">
    <h2 id="result-h">Result</h2>
    <p>${
      run.error
        ? html`<span class="badge badge-error">${run.error.name}</span> <span id="run-error">${run.error.message}</span>`
        : html`<span class="badge badge-active">ok</span>`
    } <span class="muted small">${Math.round(run.durationMs)} ms · ${run.creditsCharged} credits</span></p>
    <h3>Returned value</h3><pre id="run-result">${json(run.result)}</pre>
    <h3>stdout</h3><pre id="run-stdout">${run.stdout || '(nothing)'}</pre>
    ${run.stderr ? html`<h3>stderr</h3><pre id="run-stderr">${run.stderr}</pre>` : ''}
  </section>`;
}

export function toolPage(v: {
  user: PageUser;
  csrf: string;
  tool: Tool;
  draft?: ToolDraft | undefined;
  notice?: string | undefined;
  error?: string | undefined;
  testError?: string | undefined;
  /** The arguments of the test form, as typed. */
  args: string;
  run?: ToolRun | undefined;
  /** A run was asked for by the URL but is no longer kept. */
  runGone?: boolean | undefined;
  agents: Pick<Agent, 'id' | 'name'>[];
  links: AgentToolLink[];
  /** The script that says a submitted form is at work (assets/busy.js). */
  busyScript: string;
}): string {
  const t = v.tool;
  const body = html`
    <p><a href="${TOOLS_PATH}">← Tools</a></p>
    <h1>${t.name}</h1>
    ${notice(v.notice)}${notice(v.error, true)}
    <section class="card" aria-labelledby="test-h">
      <h2 id="test-h">Run a test</h2>
      ${notice(v.testError, true)}
      <form method="post" action="${toolPath(t.id)}/test" data-busy="${
        t.language === 'python'
          ? 'Running the test… The first Python run after the service starts takes about 10 s while Python loads.'
          : 'Running the test…'
      }">
        <input type="hidden" name="csrf" value="${v.csrf}">
        <label for="test-args">Arguments (JSON)</label>
        <textarea id="test-args" name="arguments" rows="4" style="${area}" spellcheck="false">${v.args}</textarea>
        ${t.requiredSecrets.map(
          (s) =>
            html`<label for="secret-${s}">Secret ${s}</label><input type="password" id="secret-${s}" name="secret_${s}" autocomplete="off">`,
        )}
        ${t.requiredSecrets.length ? html`<p class="muted small">Secret values are used for this run only and never stored.</p>` : ''}
        <div class="actions"><button type="submit" class="primary">Run test</button></div>
        <p class="small muted" role="status" data-busy-status hidden></p>
      </form>
    </section>
    ${v.run ? runView(v.run) : v.runGone ? html`<p class="muted" id="result">That run's result is no longer kept (results are kept for 10 minutes): run the test again.</p>` : ''}
    ${toolAgents(v)}
    <section class="card" aria-labelledby="edit-h">
      <h2 id="edit-h">Edit</h2>
      <form method="post" action="${toolPath(t.id)}">
        <input type="hidden" name="csrf" value="${v.csrf}">
        ${toolFields(v.draft ?? toolDraftOf(t))}
        <div class="actions"><button type="submit" class="primary">Save</button></div>
      </form>
      <form method="post" action="${toolPath(t.id)}/delete" class="muted">
        <input type="hidden" name="csrf" value="${v.csrf}">
        <button type="submit" class="danger">Delete tool</button>
      </form>
    </section>`;
  return layout(`Tool · ${t.name}`, body, { user: v.user, csrf: v.csrf, scripts: [v.busyScript] });
}

export interface SkillDraft {
  name: string;
  description: string;
  prompt: string;
}

function skillFields(d: SkillDraft): Html {
  return html`
    <label for="skill-name">Name</label>
    <input type="text" id="skill-name" name="name" required maxlength="100" value="${d.name}">
    <label for="skill-description">Description</label>
    <input type="text" id="skill-description" name="description" maxlength="1000" value="${d.description}" aria-describedby="skill-description-help">
    <p id="skill-description-help" class="muted small">One line: the agent reads it in its skill index to decide when to load the skill.</p>
    <label for="skill-prompt">Prompt</label>
    <textarea id="skill-prompt" name="prompt" rows="10" style="width:100%">${d.prompt}</textarea>`;
}

function skillAgents(v: {
  csrf: string;
  skill: Skill;
  agents: Pick<Agent, 'id' | 'name' | 'enabledBuiltInTools'>[];
  linkedAgentIds: string[];
}): Html {
  const linked = new Set(v.linkedAgentIds);
  const used = v.agents.filter((a) => linked.has(a.id));
  const free = v.agents.filter((a) => !linked.has(a.id));
  return html`<section class="card" aria-labelledby="agents-h" id="agents">
    <h2 id="agents-h">Agents</h2>
    ${
      used.length === 0
        ? html`<p class="muted">No agent has this skill yet.</p>`
        : html`<ul class="items">${used.map(
            (a) =>
              html`<li><div class="grow"><a href="${agentHref(a.id)}"><strong>${a.name}</strong></a>${
                a.enabledBuiltInTools.includes('skills')
                  ? ''
                  : html` <span class="badge badge-expired">skills tools off</span><br><span class="muted small">Enable the agent's <code>skills</code> tools for it to see this skill.</span>`
              }</div><form method="post" action="${skillPath(v.skill.id)}/links/${encodeURIComponent(a.id)}/unlink" class="inline">
                <input type="hidden" name="csrf" value="${v.csrf}">
                <button type="submit" class="danger">Unlink ${a.name}</button>
              </form></li>`,
          )}</ul>`
    }
    ${
      free.length
        ? html`<h3>Link to an agent</h3>
          <form method="post" action="${skillPath(v.skill.id)}/links">
            <input type="hidden" name="csrf" value="${v.csrf}">
            <label for="link-agent">Agent</label>
            <select id="link-agent" name="agentId">${free.map((a) => html`<option value="${a.id}">${a.name}</option>`)}</select>
            <div class="actions"><button type="submit">Link</button></div>
          </form>`
        : ''
    }
  </section>`;
}

export function skillsPage(v: {
  user: PageUser;
  csrf: string;
  skills: Skill[];
  notice?: string | undefined;
  error?: string | undefined;
  draft?: SkillDraft | undefined;
}): string {
  const body = html`
    <h1>Skills</h1>
    ${notice(v.notice)}${notice(v.error, true)}
    <section class="card" aria-labelledby="list-h">
      <h2 id="list-h">Your skills</h2>
      ${
        v.skills.length === 0
          ? html`<p class="muted">No skills yet: write one below, then link it to an agent with the skills tools enabled.</p>`
          : html`<ul class="items">${v.skills.map(
              (s) =>
                html`<li><div class="grow"><a href="${skillPath(s.id)}"><strong>${s.name}</strong></a>${s.description ? html`<br><span class="small">${s.description}</span>` : ''}</div></li>`,
            )}</ul>`
      }
    </section>
    <section class="card" aria-labelledby="new-h">
      <h2 id="new-h">New skill</h2>
      <form method="post" action="${SKILLS_PATH}">
        <input type="hidden" name="csrf" value="${v.csrf}">
        ${skillFields(v.draft ?? { name: '', description: '', prompt: '' })}
        <div class="actions"><button type="submit" class="primary">Create skill</button></div>
      </form>
    </section>`;
  return layout('Skills', body, { user: v.user, csrf: v.csrf });
}

export function skillPage(v: {
  user: PageUser;
  csrf: string;
  skill: Skill;
  agents: Pick<Agent, 'id' | 'name' | 'enabledBuiltInTools'>[];
  linkedAgentIds: string[];
  draft?: SkillDraft | undefined;
  notice?: string | undefined;
  error?: string | undefined;
}): string {
  const s = v.skill;
  const body = html`
    <p><a href="${SKILLS_PATH}">← Skills</a></p>
    <h1>${s.name}</h1>
    ${notice(v.notice)}${notice(v.error, true)}
    ${skillAgents(v)}
    <section class="card" aria-labelledby="edit-h">
      <h2 id="edit-h">Edit</h2>
      <form method="post" action="${skillPath(s.id)}">
        <input type="hidden" name="csrf" value="${v.csrf}">
        ${skillFields(v.draft ?? s)}
        <div class="actions"><button type="submit" class="primary">Save</button></div>
      </form>
      <form method="post" action="${skillPath(s.id)}/delete" class="muted">
        <input type="hidden" name="csrf" value="${v.csrf}">
        <button type="submit" class="danger">Delete skill</button>
      </form>
    </section>`;
  return layout(`Skill · ${s.name}`, body, { user: v.user, csrf: v.csrf });
}
