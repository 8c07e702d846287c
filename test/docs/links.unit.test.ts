import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkLinks } from '../../scripts/docs/links.ts';

describe('links of README.md and docs/', () => {
  it('every relative link and anchor resolves', () => {
    expect(checkLinks()).toEqual([]);
  });

  it("the README's diagram of the parts is the site's overview diagram", () => {
    const diagram = (file: string) => /```mermaid\n[\s\S]*?\n```/.exec(readFileSync(file, 'utf8'))?.[0];
    expect(diagram('README.md')).toBeDefined();
    expect(diagram('docs/index.md')).toBe(diagram('README.md'));
  });

  const root = mkdtempSync(join(tmpdir(), 'doc-links-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (files: Record<string, string>) => {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
  };

  it('names each broken file, anchor and absolute link, and passes code and good links', () => {
    write({
      'README.md': [
        '# Title',
        'See [a](docs/a.md), [its part](docs/a.md#the-part), [missing](docs/gone.md), [bad](docs/a.md#nope).',
        '`[in code](docs/gone.md)` and [web](https://example.com/x) and [abs](/docs).',
        '```md',
        '[fenced](docs/gone.md)',
        '```',
      ].join('\n'),
      'docs/a.md':
        '# A\n\n## The part\n\n## What’s new\n\n[up](../README.md#title) [self](#the-part) [quote](#whats-new)\n',
    });
    expect(checkLinks(root)).toEqual([
      'README.md:2: docs/gone.md: no such file docs/gone.md',
      'README.md:2: docs/a.md#nope: no heading of docs/a.md has the anchor #nope',
      'README.md:3: absolute link /docs (write it as a relative link, or as a full URL in code)',
      // GitHub slugs "What’s new" as whats-new, the site as what-s-new: a link to it breaks on one of them.
      'docs/a.md:7: #whats-new: no heading of docs/a.md has the anchor #whats-new',
    ]);
  });
});
