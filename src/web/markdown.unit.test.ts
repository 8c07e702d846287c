import { describe, expect, it } from 'vitest';
import { renderMarkdown } from './markdown.ts';

const link = (t: string) => `/wiki/${encodeURIComponent(t.toLowerCase())}`;

describe('renderMarkdown', () => {
  it('renders headings, lists, paragraphs, bold, code and wikilinks', () => {
    expect(
      renderMarkdown(
        '# Acme\n\nMakes **anvils** with `steel`.\nSee [[Jane Roe|its founder]].\n\n- one\n- [[Two]]',
        link,
      ).value,
    ).toBe(
      '<h2>Acme</h2>\n<p>Makes <strong>anvils</strong> with <code>steel</code>. See <a href="/wiki/jane%20roe">its founder</a>.</p>\n<ul><li>one</li><li><a href="/wiki/two">Two</a></li></ul>',
    );
  });

  it("shows a wikilink's page title (escaped), its own label first, the target as written for a missing page", () => {
    const titles = new Map([['jane roe', 'Jane <Roe>']]);
    expect(
      renderMarkdown('[[Jane Roe]], [[Jane Roe|her]] and [[Nobody]]', link, (t) => titles.get(t.toLowerCase())).value,
    ).toBe(
      '<p><a href="/wiki/jane%20roe">Jane &lt;Roe&gt;</a>, <a href="/wiki/jane%20roe">her</a> and <a href="/wiki/nobody">Nobody</a></p>',
    );
  });

  it('never lets markup through: text, link labels and targets are escaped', () => {
    const out = renderMarkdown(
      '<script>alert(1)</script> [[x" onmouseover="y|<b>label</b>]] **<i>**',
      () => '/p?a="b"&c',
    ).value;
    expect(out).not.toMatch(/<script|<b>|<i>|onmouseover="/);
    expect(out).toBe(
      '<p>&lt;script&gt;alert(1)&lt;/script&gt; <a href="/p?a=&quot;b&quot;&amp;c">&lt;b&gt;label&lt;/b&gt;</a> <strong>&lt;i&gt;</strong></p>',
    );
  });
});
