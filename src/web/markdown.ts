import { escapeHtml, Html } from './html.ts';

/**
 * The small markdown of wiki pages, as HTML that cannot carry markup of its own: every character of the
 * source is escaped first, then headings (#, ##, ###), list items (-, *), paragraphs, **bold**, `code`
 * and [[wikilinks]] become elements. `linkTo(target)` answers the href of a wikilink's page; `titleOf(target)`
 * its page's title, shown unless the link names its own label (`[[target|label]]`), else the target as written.
 */
export function renderMarkdown(
  source: string,
  linkTo: (target: string) => string,
  titleOf: (target: string) => string | undefined = () => undefined,
): Html {
  const inline = (text: string) =>
    escapeHtml(text)
      .replace(/\[\[([^[\]|\n]{1,200})(?:\|([^[\]\n]{0,200}))?\]\]/g, (_m, target: string, label?: string) => {
        // The captures are escaped already; the href is built from the unescaped target and escaped once.
        const raw = target
          .replace(/&amp;/g, '&')
          .replace(/&lt;/g, '<')
          .replace(/&gt;/g, '>')
          .replace(/&quot;/g, '"')
          .replace(/&#39;/g, "'");
        const title = label === undefined ? titleOf(raw.trim()) : undefined;
        const text = title === undefined ? (label ?? target).trim() : escapeHtml(title);
        return `<a href="${escapeHtml(linkTo(raw.trim()))}">${text}</a>`;
      })
      .replace(/\*\*([^*\n]{1,400})\*\*/g, '<strong>$1</strong>')
      .replace(/`([^`\n]{1,400})`/g, '<code>$1</code>');
  const out: string[] = [];
  let list: string[] = [];
  let para: string[] = [];
  const flush = () => {
    if (list.length) out.push(`<ul>${list.map((li) => `<li>${li}</li>`).join('')}</ul>`);
    if (para.length) out.push(`<p>${para.join(' ')}</p>`);
    list = [];
    para = [];
  };
  for (const line of source.split('\n')) {
    const heading = /^(#{1,3})\s+(.*)$/.exec(line);
    const item = /^\s*[-*]\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      // Page headings start at h2: the page title is the h1.
      const level = Math.min(4, (heading[1]?.length ?? 1) + 1);
      out.push(`<h${level}>${inline(heading[2] ?? '')}</h${level}>`);
    } else if (item) {
      if (para.length) flush();
      list.push(inline(item[1] ?? ''));
    } else if (!line.trim()) {
      flush();
    } else {
      if (list.length) flush();
      para.push(inline(line.trim()));
    }
  }
  flush();
  return new Html(out.join('\n'));
}
