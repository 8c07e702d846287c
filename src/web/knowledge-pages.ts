import type {
  KnowledgeBase,
  KnowledgeGraph,
  KnowledgePage,
  KnowledgePageSummary,
  KnowledgeSource,
  LintFinding,
  PageVersion,
  SearchResult,
} from '../modules/knowledge/index.ts';
import { INDEX_SLUG, slugify } from '../modules/knowledge/index.ts';
import { type Html, html, layout, notice } from './html.ts';
import { renderMarkdown } from './markdown.ts';
import { confirmPage, type PageUser } from './pages.ts';

/**
 * The wiki pages: a base's index by type, its tags, search, sources with their status and a form to add one,
 * lint with its findings, and a picture of the link graph; and one page with its backlinks and history.
 * Every action is a POST form with the CSRF token, answered by a redirect (reloading never repeats it).
 */

export const KNOWLEDGE_PATH = '/account/knowledge';

export const basePath = (kbId: string) => `${KNOWLEDGE_PATH}/${encodeURIComponent(kbId)}`;
export const sourcePath = (kbId: string, sourceId: string) =>
  `${basePath(kbId)}/sources/${encodeURIComponent(sourceId)}`;
export const pagePath = (kbId: string, slug: string) => `${basePath(kbId)}/pages/${encodeURIComponent(slug)}`;

const TYPE_TITLES: Record<string, string> = {
  entity: 'Entities',
  concept: 'Concepts',
  summary: 'Summaries',
  custom: 'Other pages',
};

function sourceBadge(status: KnowledgeSource['status']): Html {
  const cls = status === 'compiled' ? 'badge-active' : status === 'failed' ? 'badge-error' : 'badge-expired';
  return html`<span class="badge ${cls}">${status}</span>`;
}

/** The link graph as an inline SVG: pages on a circle (size by backlinks), links as lines, each a link. */
export function graphSvg(kbId: string, graph: KnowledgeGraph): Html {
  const n = graph.nodes.length;
  if (n === 0) return html`<p class="muted">No pages yet.</p>`;
  const size = 560;
  const r = size / 2 - 70;
  const at = new Map(
    graph.nodes.map((node, i) => {
      const a = (2 * Math.PI * i) / n - Math.PI / 2;
      return [node.slug, { x: size / 2 + r * Math.cos(a), y: size / 2 + r * Math.sin(a), a }];
    }),
  );
  const f = (v: number) => v.toFixed(1);
  const lines = graph.edges.flatMap((e) => {
    const a = at.get(e.from);
    const b = at.get(e.to);
    return a && b ? [html`<line x1="${f(a.x)}" y1="${f(a.y)}" x2="${f(b.x)}" y2="${f(b.y)}"></line>`] : [];
  });
  const nodes = graph.nodes.map((node) => {
    const p = at.get(node.slug) ?? { x: 0, y: 0, a: 0 };
    const radius = 4 + 2 * Math.sqrt(node.backlinkCount);
    const right = Math.cos(p.a) >= 0;
    const lx = p.x + (right ? 1 : -1) * (radius + 4);
    return html`<a href="${pagePath(kbId, node.slug)}"><circle cx="${f(p.x)}" cy="${f(p.y)}" r="${f(radius)}" class="t-${node.pageType}"><title>${node.title} (${node.backlinkCount} backlinks)</title></circle><text x="${f(lx)}" y="${f(p.y + 4)}" text-anchor="${right ? 'start' : 'end'}">${node.title.length > 22 ? `${node.title.slice(0, 21)}…` : node.title}</text></a>`;
  });
  return html`<figure class="graph">
    <svg viewBox="0 0 ${size} ${size}" role="img" aria-label="Link graph of ${n} pages and ${graph.edges.length} links" width="100%">
      <style>line{stroke:#8c959f;stroke-width:1;opacity:.6}circle{fill:#0b5cad}circle.t-concept{fill:#1a7f37}circle.t-summary{fill:#9a6700}circle.t-custom{fill:#6e7781}text{font:11px system-ui,sans-serif;fill:currentColor}a:hover circle{stroke:#000;stroke-width:2}</style>
      ${lines}${nodes}
    </svg>
    <figcaption class="muted small">${n} pages, ${graph.edges.length} links${graph.omitted ? `; ${graph.omitted} less-linked pages not drawn` : ''}. Blue: entities, green: concepts, amber: summaries.</figcaption>
  </figure>`;
}

export interface KnowledgeView {
  user: PageUser;
  csrf: string;
  bases: KnowledgeBase[];
  base: KnowledgeBase;
  pages: KnowledgePageSummary[];
  pageTotal: number;
  tag: string;
  q: string;
  results?: { data: SearchResult[]; relaxed: boolean } | undefined;
  sources: KnowledgeSource[];
  lint?: { at: string; findings: LintFinding[] } | undefined;
  graph: KnowledgeGraph;
  notice?: string | undefined;
  error?: string | undefined;
  /** The source form as sent, kept when it was refused. */
  draft?: { name: string; text: string; url: string } | undefined;
  /** The upload form's name as sent, kept when the file was refused. */
  fileName?: string | undefined;
  /** The largest file the upload form takes, in bytes. */
  fileMaxBytes: number;
  /** The progress script's path. */
  script: string;
}

function sourceRow(kbId: string, csrf: string, s: KnowledgeSource): Html {
  const actions =
    s.status === 'failed'
      ? html`<div class="actions compact"><form method="post" action="${sourcePath(kbId, s.id)}/reprocess"><input type="hidden" name="csrf" value="${csrf}"><button type="submit">Retry</button></form><a class="button" href="${sourcePath(kbId, s.id)}/delete">Delete</a></div>`
      : '';
  return html`<tr data-source="${s.id}"><td>${s.name}<br><span class="error small source-error">${s.error ?? ''}</span></td><td>${s.type}</td><td>${sourceBadge(s.status)}${actions}</td></tr>`;
}

export function knowledgePage(v: KnowledgeView): string {
  const kb = v.base;
  const busy = v.sources.some((s) => s.status === 'pending' || s.status === 'processing');
  const tags = [...new Set(v.pages.flatMap((p) => p.tags))].sort();
  const shown = v.tag ? v.pages.filter((p) => p.tags.includes(v.tag)) : v.pages;
  const byType = Object.entries(TYPE_TITLES)
    .map(([type, title]) => ({ title, pages: shown.filter((p) => p.pageType === type) }))
    .filter((g) => g.pages.length > 0);
  const body = html`
    <h1>Knowledge</h1>
    ${notice(v.notice)}${notice(v.error, true)}
    <nav aria-label="Knowledge bases" class="actions compact">${v.bases.map((b) =>
      b.id === kb.id
        ? html`<strong aria-current="page">${b.name}${b.isDefault ? ' (default)' : ''}</strong>`
        : html`<a href="${basePath(b.id)}">${b.name}${b.isDefault ? ' (default)' : ''}</a>`,
    )}</nav>
    <section class="card" aria-labelledby="search-h">
      <h2 id="search-h">Search ${kb.name}</h2>
      <form method="get" action="${basePath(kb.id)}" class="filters" role="search">
        <div class="grow"><label for="q">Words</label><input type="search" id="q" name="q" value="${v.q}"></div>
        <button type="submit">Search</button>
      </form>
      ${
        v.results
          ? v.results.data.length === 0
            ? html`<p class="muted">Nothing found for “${v.q}”.</p>`
            : html`${v.results.relaxed ? html`<p class="muted small">Few pages held every word; pages with some of them follow.</p>` : ''}
              <ol class="results">${v.results.data.map(
                (r) =>
                  html`<li><a href="${pagePath(kb.id, r.slug)}">${r.title}</a> <span class="muted small">${r.pageType}, ${r.confidence} confidence</span><br><span class="small">${renderMarkdown(r.content, () => '#')}</span></li>`,
              )}</ol>`
          : ''
      }
    </section>
    <section class="card" aria-labelledby="index-h">
      <h2 id="index-h">Pages <span class="muted small">(${v.pageTotal})</span></h2>
      ${
        tags.length
          ? html`<p class="small">Tags: ${tags.map((t) =>
              t === v.tag
                ? html`<strong>${t}</strong> `
                : html`<a href="${basePath(kb.id)}?tag=${encodeURIComponent(t)}">${t}</a> `,
            )}${v.tag ? html` · <a href="${basePath(kb.id)}">all</a>` : ''}</p>`
          : ''
      }
      ${
        byType.length === 0
          ? html`<p class="muted">No pages yet: add a source below and the compiler writes them.</p>`
          : byType.map(
              (g) =>
                html`<h3>${g.title}</h3><ul>${g.pages.map(
                  (p) =>
                    html`<li><a href="${pagePath(kb.id, p.slug)}">${p.title}</a>${p.summary ? html` <span class="muted small">— ${p.summary}</span>` : ''}</li>`,
                )}</ul>`,
            )
      }
    </section>
    <section class="card" aria-labelledby="graph-h">
      <h2 id="graph-h">Link graph</h2>
      ${graphSvg(kb.id, v.graph)}
    </section>
    <section class="card" aria-labelledby="sources-h">
      <h2 id="sources-h">Sources</h2>
      ${busy ? html`<p class="muted small" id="busy" aria-live="polite">Compiling… <a href="${basePath(kb.id)}">reload</a> to see the status move.</p>` : ''}
      ${
        v.sources.length === 0
          ? html`<p class="muted">No sources yet.</p>`
          : html`<table data-status-url="${basePath(kb.id)}/status"><thead><tr><th>Source</th><th>Type</th><th>Status</th></tr></thead><tbody>${v.sources.map(
              (s) => sourceRow(kb.id, v.csrf, s),
            )}</tbody></table>`
      }
      <h3>Upload a file</h3>
      <form method="post" action="${basePath(kb.id)}/sources/file" enctype="multipart/form-data">
        <input type="hidden" name="csrf" value="${v.csrf}">
        <label for="file-name">Title <span class="muted small">(optional)</span></label><input type="text" id="file-name" name="name" maxlength="300" value="${v.fileName ?? ''}">
        <label for="file">File <span class="muted small">(PDF, DOCX, CSV, TXT or MD, up to ${formatBytes(v.fileMaxBytes)})</span></label><input type="file" id="file" name="file" required accept=".pdf,.docx,.csv,.txt,.md,text/plain,text/markdown,text/csv,application/pdf,application/vnd.openxmlformats-officedocument.wordprocessingml.document">
        <div class="actions"><button type="submit" class="primary">Upload</button></div>
      </form>
      <h3>Add a source</h3>
      <form method="post" action="${basePath(kb.id)}/sources">
        <input type="hidden" name="csrf" value="${v.csrf}">
        <label for="source-name">Name</label><input type="text" id="source-name" name="name" required maxlength="300" value="${v.draft?.name ?? ''}">
        <label for="source-text">Text</label><textarea id="source-text" name="text" rows="6" style="width:100%">${v.draft?.text ?? ''}</textarea>
        <label for="source-url">…or a web address</label><input type="text" id="source-url" name="url" value="${v.draft?.url ?? ''}" placeholder="https://example.com/article">
        <div class="actions"><button type="submit" class="primary">Add source</button></div>
      </form>
    </section>
    <section class="card" aria-labelledby="lint-h">
      <h2 id="lint-h">Health check</h2>
      <form method="post" action="${basePath(kb.id)}/lint">
        <input type="hidden" name="csrf" value="${v.csrf}">
        <button type="submit">Run lint</button>
      </form>
      ${
        v.lint
          ? html`<p class="muted small">Last run ${v.lint.at}: ${v.lint.findings.length} finding${v.lint.findings.length === 1 ? '' : 's'}.</p>
            <ul class="findings">${v.lint.findings.map(
              (f) =>
                html`<li><span class="badge ${f.severity === 'info' ? 'badge-active' : f.severity === 'warning' ? 'badge-expired' : 'badge-error'}">${f.rule}</span> ${f.message}${f.repaired ? html` <em class="small">(repaired)</em>` : ''}</li>`,
            )}</ul>`
          : ''
      }
    </section>`;
  return layout(`Knowledge · ${kb.name}`, body, { user: v.user, csrf: v.csrf, scripts: [v.script] });
}

export function wikiPage(v: {
  user: PageUser;
  csrf: string;
  base: KnowledgeBase;
  page: KnowledgePage;
  versions: PageVersion[];
  /** The titles of the pages this one links to and is linked from, by slug (a missing page shows its slug). */
  titles: ReadonlyMap<string, string>;
}): string {
  const { page, base } = v;
  const link = (slug: string) => pagePath(base.id, slug);
  const title = (slug: string) => v.titles.get(slug) ?? slug;
  // `[[Acme Corp]]` points at the slug the service derives from the name.
  const slugOf = (target: string) => (target === INDEX_SLUG ? target : slugify(target));
  const wikilink = (target: string) => link(slugOf(target));
  const body = html`
    <p class="small"><a href="${basePath(base.id)}">← ${base.name}</a></p>
    <article class="card">
      <h1>${page.title}</h1>
      <p class="muted small">${page.pageType} · ${page.confidence} confidence (${page.sourceIds.length} source${page.sourceIds.length === 1 ? '' : 's'}) · version ${page.version} by ${page.lastCompiledBy === 'user' ? 'a person' : 'the compiler'}${page.tags.length ? html` · tags: ${page.tags.join(', ')}` : ''}</p>
      <div class="wiki">${renderMarkdown(page.content, wikilink, (target) => v.titles.get(slugOf(target)))}</div>
      ${
        page.relationships.length
          ? html`<h2>Relationships</h2><ul>${page.relationships.map(
              (r) =>
                html`<li>${r.type.replace(/_/g, ' ')} <a href="${link(r.targetSlug)}">${title(r.targetSlug)}</a></li>`,
            )}</ul>`
          : ''
      }
    </article>
    <section class="card" aria-labelledby="backlinks-h">
      <h2 id="backlinks-h">Linked from</h2>
      ${
        page.backlinks.length
          ? html`<ul>${page.backlinks.map((s) => html`<li><a href="${link(s)}">${title(s)}</a></li>`)}</ul>`
          : html`<p class="muted">No page links here.</p>`
      }
    </section>
    <section class="card" aria-labelledby="history-h">
      <h2 id="history-h">History</h2>
      <table><thead><tr><th>Version</th><th>By</th><th>When</th></tr></thead><tbody>${v.versions.map(
        (ver) =>
          html`<tr><td>${ver.version}</td><td>${ver.compiledBy === 'user' ? 'a person' : 'the compiler'}</td><td>${ver.createdAt}</td></tr>`,
      )}</tbody></table>
    </section>`;
  return layout(`${page.title} · ${base.name}`, body, { user: v.user, csrf: v.csrf });
}

/** "1.4 MB", "900 KB". */
function formatBytes(n: number): string {
  return n >= 1_000_000 ? `${(n / 1_000_000).toFixed(1)} MB` : `${Math.floor(n / 1000)} KB`;
}

export function deleteSourcePage(v: { user: PageUser; csrf: string; kbId: string; source: KnowledgeSource }): string {
  return confirmPage({
    user: v.user,
    csrf: v.csrf,
    title: `Delete the source ${v.source.name}?`,
    body: html`<p>The source is removed from the base. Pages already compiled from it keep what they say.</p>`,
    action: `${sourcePath(v.kbId, v.source.id)}/delete`,
    button: 'Delete source',
    cancelHref: basePath(v.kbId),
  });
}
