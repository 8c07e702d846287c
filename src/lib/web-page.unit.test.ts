import { describe, expect, it } from 'vitest';
import { readableText } from './web-page.ts';

describe('readableText', () => {
  it('keeps the article as markdown and drops navigation, scripts and styles', async () => {
    const paragraph = 'Acme Corp makes anvils for discerning coyotes across the desert southwest. '.repeat(4);
    const html = `<!doctype html><html><head><title>Acme news</title><style>p{color:red}</style></head><body>
      <nav><a href="/">Home</a> <a href="/about">About</a></nav>
      <script>alert("x")</script>
      <article><h1>Anvils</h1><p>${paragraph}</p><h2>Founders</h2><ul><li>Jane Roe</li><li>John Doe</li></ul>
      <p>Read <a href="/more">more</a>.</p></article>
      <footer>© Acme</footer></body></html>`;
    const { title, text } = await readableText(html, 'https://acme.example/news/1');
    expect(title).toBe('Acme news');
    expect(text).toContain('Acme Corp makes anvils');
    expect(text).toContain('## Founders');
    expect(text).toMatch(/-\s+Jane Roe/);
    expect(text).toContain('[more](https://acme.example/more)');
    expect(text).not.toContain('alert');
    expect(text).not.toContain('color:red');
  });

  it('falls back to the text of a page with no article', async () => {
    expect((await readableText('<html><body><p>Short.</p></body></html>', 'https://x.example/')).text).toBe('Short.');
  });
});
