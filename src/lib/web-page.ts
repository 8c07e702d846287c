/**
 * The readable text of a fetched web page, as markdown: Readability picks the article out of the page
 * (navigation, ads and scripts dropped), Turndown keeps its headings, lists and links. A page Readability
 * cannot read falls back to the body's text. The three libraries load on first use, not at start-up.
 */
export async function readableText(html: string, url: string): Promise<{ title: string; text: string }> {
  const [{ Readability }, { parseHTML }, { default: TurndownService }] = await Promise.all([
    import('@mozilla/readability'),
    import('linkedom'),
    import('turndown'),
  ]);
  const { document } = parseHTML(html);
  for (const el of document.querySelectorAll('script, style, noscript, template, iframe')) el.remove();
  const title = (document.querySelector('title')?.textContent ?? '').trim();
  let article: { title?: string | null; content?: string | null } | null = null;
  try {
    // linkedom's document stands in for the DOM Readability expects.
    article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], {
      charThreshold: 200,
    }).parse();
  } catch {
    article = null;
  }
  const turndown = new TurndownService({ headingStyle: 'atx', bulletListMarker: '-', codeBlockStyle: 'fenced' });
  const markdown = article?.content
    ? turndown.turndown(article.content)
    : (document.body?.textContent ?? '').replace(/[ \t]+/g, ' ').replace(/\n{3,}/g, '\n\n');
  const text = markdown
    .replace(/\]\((\/[^)]*)\)/g, (_m: string, path: string) => `](${new URL(path, url).toString()})`)
    .trim();
  return { title: (article?.title ?? title).trim() || title, text };
}
