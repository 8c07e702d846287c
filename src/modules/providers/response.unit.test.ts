import { describe, expect, it } from 'vitest';
import { loadProviderCatalog } from './catalog.ts';
import { ToolResponse } from './definition.ts';
import { getPath, parsePath, pickPaths } from './json-path.ts';
import { mergePages, shapeToolResponse } from './response.ts';

const shaping = (response: unknown) => ({ response: ToolResponse.parse(response) });
const catalog = loadProviderCatalog({ dirs: [], env: {} });
const tool = (providerId: string, name: string) => {
  const t = catalog.get(providerId)?.definition.tools.find((x) => x.name === name);
  if (!t) throw new Error(`no tool ${providerId}.${name}`);
  return t;
};

describe('json paths', () => {
  it('read keys, indexes, wildcards and quoted keys', () => {
    const v = { a: { b: [{ c: 1 }, { c: 2 }, {}] }, '@odata.nextLink': 'n', list: [[1, 2]] };
    expect(getPath(v, 'a.b[1].c')).toBe(2);
    expect(getPath(v, '$.a.b[].c')).toEqual([1, 2]);
    expect(getPath(v, "['@odata.nextLink']")).toBe('n');
    expect(getPath(v, 'list[0][1]')).toBe(2);
    expect(getPath(v, 'a.missing.c')).toBeUndefined();
    expect(getPath([{ id: 'x' }], '[0].id')).toBe('x');
    expect(getPath(v, ['a.nope', 'a.b[0].c'])).toBe(1);
    expect(getPath({ constructor: 1 }, 'toString')).toBeUndefined();
  });

  it('refuse malformed paths', () => {
    for (const bad of ['', '.a', 'a.', 'a..b', 'a[', 'a[x]', 'a b']) expect(() => parsePath(bad), bad).toThrow();
  });

  it('pick fields keeping their nesting and list alignment', () => {
    const v = { id: 1, user: { login: 'ana', id: 9 }, labels: [{ name: 'bug', color: 'r' }, { color: 'g' }], x: 2 };
    expect(pickPaths(v, ['id', 'user.login', 'labels[].name', 'nope'])).toEqual({
      id: 1,
      user: { login: 'ana' },
      labels: [{ name: 'bug' }, null],
    });
    expect(pickPaths(v, ['labels[].name', 'labels[].color'])).toEqual({
      labels: [{ name: 'bug', color: 'r' }, { color: 'g' }],
    });
  });
});

describe('shapeToolResponse', () => {
  it('answers the list with the kept fields and totals', () => {
    const answer = {
      total_count: 2,
      incomplete_results: false,
      items: [
        { full_name: 'a/b', description: 'x', stargazers_count: 3, owner: { login: 'a' } },
        { full_name: 'c/d', description: null, stargazers_count: 5, owner: { login: 'c' } },
      ],
    };
    expect(shapeToolResponse(tool('github', 'search_repositories'), answer)).toEqual({
      total_count: 2,
      items: [
        { full_name: 'a/b', description: 'x', stargazers_count: 3 },
        { full_name: 'c/d', description: null, stargazers_count: 5 },
      ],
    });
  });

  it('treats a top-level array as the list (GitHub)', () => {
    const answer = [{ number: 1, title: 't', user: { login: 'u', id: 1 }, body: 'long' }];
    expect(shapeToolResponse(tool('github', 'list_repository_issues'), answer)).toEqual({
      items: [{ number: 1, title: 't', user: { login: 'u' } }],
    });
  });

  it('keeps only the fields of an object answer', () => {
    expect(shapeToolResponse(shaping({ fields: ['id', 'a.b'] }), { id: 1, a: { b: 2, c: 3 }, z: 4 })).toEqual({
      id: 1,
      a: { b: 2 },
    });
    expect(shapeToolResponse(shaping({}), { any: 'thing' })).toEqual({ any: 'thing' });
  });

  it('decodes base64url text fields and refuses to pass binary on (Gmail, GitHub contents)', () => {
    const text = Buffer.from('Hello, wörld').toString('base64url');
    const binary = Buffer.from([0xff, 0xfe, 0x00, 0x81]).toString('base64url');
    const answer = { id: 'm1', payload: { parts: [{ body: { data: text } }, { body: { data: binary } }] }, extra: 1 };
    expect(shapeToolResponse(tool('gmail', 'get_message'), answer)).toEqual({
      id: 'm1',
      payload: { parts: [{ body: { data: 'Hello, wörld' } }, { body: { data: '[binary content omitted]' } }] },
    });
    expect(answer.payload.parts[0]?.body.data).toBe(text);
    const file = { type: 'file', name: 'a.md', content: 'IyBUaXRsZQo=\n', encoding: 'base64' };
    expect(shapeToolResponse(tool('github', 'get_file_contents'), file)).toEqual({
      type: 'file',
      name: 'a.md',
      content: '# Title\n',
    });
  });

  it('cuts long strings with a marker', () => {
    const out = shapeToolResponse(shaping({ maxStringLength: 100 }), { text: 'x'.repeat(250) }) as { text: string };
    expect(out.text).toBe(`${'x'.repeat(100)}…[truncated 150 characters]`);
  });

  it('drops trailing items beyond maxItems and beyond the size cap, saying so', () => {
    const items = Array.from({ length: 50 }, (_, i) => ({ id: i, text: 'y'.repeat(90) }));
    const byCount = shapeToolResponse(shaping({ listPath: 'list', maxItems: 5 }), { list: items });
    expect(byCount).toEqual({ items: items.slice(0, 5), truncated: true, omittedItems: 45 });

    const bySize = shapeToolResponse(shaping({ listPath: 'list', maxBytes: 1000 }), { list: items }) as {
      items: unknown[];
      truncated: boolean;
      omittedItems: number;
    };
    expect(bySize.truncated).toBe(true);
    expect(bySize.items.length).toBeGreaterThan(0);
    expect(bySize.items.length + bySize.omittedItems).toBe(50);
    expect(Buffer.byteLength(JSON.stringify(bySize))).toBeLessThanOrEqual(1000);
    // One more item would not have fitted.
    const oneMore = { ...bySize, items: items.slice(0, bySize.items.length + 1) };
    expect(Buffer.byteLength(JSON.stringify(oneMore))).toBeGreaterThan(1000);
  });

  it('answers a cut preview when even one item or the object is too big', () => {
    const big = { blob: 'z'.repeat(3000), more: 'w'.repeat(3000) };
    const out = shapeToolResponse(shaping({ maxBytes: 1000, maxStringLength: 10_000 }), big) as {
      truncated: boolean;
      preview: string;
    };
    expect(out.truncated).toBe(true);
    expect(out.preview.startsWith('{"blob":"zzz')).toBe(true);
    expect(out.preview).toMatch(/…\[truncated \d+ bytes\]$/);
    expect(Buffer.byteLength(JSON.stringify(out))).toBeLessThanOrEqual(1000);
  });

  it('cuts text answers (Drive export) and keeps them as text', () => {
    const exportTool = tool('google-drive', 'export_google_file');
    expect(shapeToolResponse(exportTool, 'Plain document text')).toBe('Plain document text');
    const cut = shapeToolResponse(shaping({ format: 'text', maxBytes: 1000 }), 'a'.repeat(1500)) as string;
    expect(cut).toBe(`${'a'.repeat(1000)}…[truncated 500 characters]`);
  });
});

describe('mergePages', () => {
  it('concatenates lists at listPath and keeps the last page’s other fields', () => {
    const t = shaping({ listPath: 'data.items' });
    const merged = mergePages(t, [
      { data: { items: [1, 2] }, next: 'a' },
      { data: { items: [3] }, next: null },
    ]);
    expect(merged).toEqual({ data: { items: [1, 2, 3] }, next: null });
    expect(mergePages(t, [{ data: { items: [1] } }])).toEqual({ data: { items: [1] } });
  });

  it('concatenates top-level arrays (GitHub pages)', () => {
    expect(mergePages(shaping({}), [[1], [2, 3]])).toEqual([1, 2, 3]);
  });
});
