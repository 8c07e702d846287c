/**
 * A minimal HTML template: every interpolated value is escaped unless it is `Html` produced by this module.
 * Pages are server-rendered and work without JavaScript.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export function escapeHtml(value: unknown): string {
  return String(value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(v: Value): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Html) return v.value;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(v);
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0] ?? '';
  values.forEach((v, i) => {
    out += render(v) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

const STYLE = `
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#f6f8fa;--card:#fff;--line:#d0d7de;--accent:#0b5cad;--danger:#b42318;--ok:#1a7f37;--warn:#9a6700}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9da7b3;--bg:#0d1117;--card:#161b22;--line:#30363d;--accent:#4ea1ff;--danger:#ff7b72;--ok:#3fb950;--warn:#d29922}}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header.top{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;justify-content:space-between;align-items:center;padding:.75rem 1.25rem;border-bottom:1px solid var(--line);background:var(--card)}
header.top a{color:var(--fg);text-decoration:none;font-weight:600}
nav ul{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:center}nav a{color:var(--accent);white-space:nowrap}
@media (max-width:700px){header.top{padding:.5rem .75rem}header.top nav{width:100%}nav ul{flex-wrap:nowrap;overflow-x:auto;padding-bottom:.25rem;position:relative}}
#setup li{overflow-wrap:anywhere}ol.steps{padding-left:1.25rem}ol.steps li{margin:.5rem 0}ol.steps li.done a{color:var(--muted)}
main{max-width:40rem;margin:2rem auto;padding:0 1rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:1.5rem;margin-bottom:1.5rem}
h1{font-size:1.5rem;margin:0 0 1rem}h2{font-size:1.15rem;margin:1.25rem 0 .5rem}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input[type=text],input[type=email],input[type=password],input[type=number],input[type=search],input[type=date],select{width:100%;padding:.6rem .7rem;border:1px solid var(--line);border-radius:8px;font:inherit;background:var(--bg);color:var(--fg)}
input:focus-visible,button:focus-visible,a:focus-visible,select:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
button,a.button{font:inherit;padding:.6rem 1.1rem;border-radius:8px;border:1px solid var(--line);background:var(--card);color:var(--fg);cursor:pointer;text-decoration:none;display:inline-block;line-height:1.5}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff;font-weight:600}
button.danger,a.button.danger{color:var(--danger);border-color:var(--danger)}
button:disabled{opacity:.55;cursor:not-allowed}
.actions{display:flex;gap:.75rem;margin-top:1.25rem;flex-wrap:wrap}.actions.compact{margin-top:.5rem;gap:.5rem}
.actions.compact button,.actions.compact a.button{padding:.3rem .8rem;font-size:.9rem}form.inline{display:inline}
form.muted{margin-top:1rem}
.muted{color:var(--muted)}.error{color:var(--danger);font-weight:600}.error-text{color:var(--danger)}
.preview{border-left:4px solid var(--accent);padding:.25rem .75rem;margin:1rem 0}.preview h3{margin:.25rem 0;font-size:1rem}
.notice{border-left:4px solid var(--accent);padding:.5rem .75rem;background:var(--bg);margin:1rem 0;word-break:break-all}
ul.scopes{padding-left:1.25rem}ul.scopes li{margin:.35rem 0}
ul.kb-list{list-style:none;padding-left:1.5rem;margin:.25rem 0}ul.kb-list li{margin:.25rem 0}
.app-head{display:flex;gap:1rem;align-items:center;margin-bottom:1rem}
.app-head img{width:56px;height:56px;border-radius:12px;object-fit:contain;background:#fff;border:1px solid var(--line)}
.brand-bar{height:6px;border-radius:12px 12px 0 0;margin:-1.5rem -1.5rem 1.25rem}
table{width:100%;border-collapse:collapse}th,td{text-align:left;padding:.5rem;border-bottom:1px solid var(--line);vertical-align:top}
fieldset{border:1px solid var(--line);border-radius:8px;margin:.75rem 0}legend{font-weight:600}
.checks label{font-weight:400;display:flex;gap:.5rem;align-items:flex-start;margin:.25rem 0}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.92em}
.small{font-size:.875rem}.grow{flex:1;min-width:0}
.badge{display:inline-block;padding:0 .5rem;border-radius:999px;border:1px solid currentColor;font-size:.8rem;font-weight:600;vertical-align:middle}
.badge-active{color:var(--ok)}.badge-expired{color:var(--warn)}.badge-error,.badge-revoked{color:var(--danger)}
ol.chat{list-style:none;padding:0;margin:0 0 1rem}ol.chat li{padding:.5rem .75rem;border-radius:10px;margin:.4rem 0}ol.chat li.user{background:var(--bg);border:1px solid var(--line)}ol.chat li.assistant{border-left:4px solid var(--accent)}ol.chat li.failed{border-left-color:var(--danger)}ol.chat li.tool{padding:.2rem .75rem}ol.chat .who{font-weight:600;font-size:.85rem;display:block}pre{white-space:pre-wrap;word-break:break-word}
figure.graph{margin:0}figure.graph svg{max-width:100%;height:auto;color:var(--fg)}textarea{font:inherit;padding:.6rem .7rem;border:1px solid var(--line);border-radius:8px;background:var(--bg);color:var(--fg)}
ul.items{list-style:none;margin:0;padding:0}ul.items>li{display:flex;flex-wrap:wrap;gap:.85rem;align-items:flex-start;padding:.85rem 0;border-top:1px solid var(--line)}ul.items .grow{overflow-wrap:anywhere;flex-basis:14rem}
.scroll{overflow-x:auto;position:relative}
img.logo{width:32px;height:32px;border-radius:8px;flex:none;background:#fff}
form.connect-fields{margin-top:.25rem}form.connect-fields label{margin-top:.5rem}
form.filters{display:flex;gap:.75rem;align-items:flex-end;flex-wrap:wrap;margin-bottom:.5rem}form.filters label{margin-top:0}
pre.snippet{background:var(--bg);border:1px solid var(--line);border-radius:8px;padding:.6rem .75rem;margin:.25rem 0 .5rem;overflow-x:auto;white-space:pre}section.mcp-client{border-top:1px solid var(--line);padding-top:.25rem;margin-top:.75rem}
.legend{list-style:none;padding:0;margin:.5rem 0 0;display:flex;flex-wrap:wrap;gap:.25rem 1rem;font-size:.875rem}.legend li{display:flex;align-items:center;gap:.35rem}.swatch{display:inline-block;width:.8rem;height:.8rem;border-radius:3px;flex:none}
figure.usage svg{display:block;width:100%}
.sr-only{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);border:0}
`;

/** A page's status line: a notice after a redirect, or (`error`) the reason a form was refused. */
export function notice(text: string | undefined, error = false): Html {
  if (!text) return html``;
  return error ? html`<p class="error" role="alert">${text}</p>` : html`<p class="notice" role="status">${text}</p>`;
}

export interface LayoutOptions {
  /** The signed-in user's name, for the navigation; absent on sign-in pages. */
  user?: { name: string; email: string } | undefined;
  csrf?: string | undefined;
  /** Same-origin scripts the page loads (deferred), as paths; the page must be sent with `scripts: true`. */
  scripts?: readonly string[];
}

export function layout(title: string, body: Html, opts: LayoutOptions = {}): string {
  const nav = opts.user
    ? html`<nav aria-label="Account"><ul>
        <li><a href="/account">Dashboard</a></li>
        <li><a href="/account/connections">Connections</a></li>
        <li><a href="/account/agents">Agents</a></li>
        <li><a href="/account/tasks">Tasks</a></li>
        <li><a href="/account/knowledge">Knowledge</a></li>
        <li><a href="/account/channels">Channels</a></li>
        <li><a href="/account/tools">Tools</a></li>
        <li><a href="/account/skills">Skills</a></li>
        <li><a href="/account/apps">Authorized apps</a></li>
        <li><a href="/account/tokens">Access tokens</a></li>
        <li><a href="/account/credits">Credits</a></li>
        <li><a href="/account/activity">Activity</a></li>
        <li><a href="/account/webhooks">Webhooks</a></li>
        <li><form method="post" action="/signout"><input type="hidden" name="csrf" value="${opts.csrf ?? ''}">
          <button type="submit">Sign out <span class="sr-only">${opts.user.email}</span></button></form></li>
      </ul></nav>`
    : html``;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(title)} · Switchboard</title>
<style>${STYLE}</style>${(opts.scripts ?? []).map((src) => `\n<script src="${escapeHtml(src)}" defer></script>`).join('')}
</head>
<body>
<header class="top"><a href="${opts.user ? '/account' : '/'}">Switchboard</a>${nav.value}</header>
<main id="main">
${body.value}
</main>
</body>
</html>`;
}
