import type { Relationship } from '../../db/schema/index.ts';

/** The slug of the generated table of contents; no other page may take it. */
export const INDEX_SLUG = '_index';
/** Static route segments under `pages/`: a page named so gets a suffix, so its URL never meets the route. */
const RESERVED = new Set(['index', 'search']);
const MAX_SLUG = 100;

/**
 * The normalized key of a page name: NFKD without marks, lower case, runs of anything but letters and digits
 * as one dash. Names that differ only in case, accents, spacing or punctuation share a key, which is how the
 * compiler resolves "ACME Corp." and "Acme Corp" to one page without guessing.
 */
export function slugify(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_SLUG)
    .replace(/-+$/, '');
  if (!base) return 'page';
  return RESERVED.has(base) ? `${base}-page` : base;
}

/** A slug as a client may send it in a URL: what `slugify` can produce, or the index. */
export function isSlug(value: string): boolean {
  return value === INDEX_SLUG || (value.length <= MAX_SLUG && slugify(value) === value);
}

const WIKILINK = /\[\[([^[\]|\n]{1,200})(?:\|[^[\]\n]{0,200})?\]\]/g;

/** The slugs a page's markdown links to with `[[Target]]` or `[[Target|label]]`, each once, in order. */
export function wikilinkTargets(markdown: string): string[] {
  const out = new Set<string>();
  for (const m of markdown.matchAll(WIKILINK)) {
    const target = (m[1] ?? '').trim();
    if (target) out.add(target === INDEX_SLUG ? INDEX_SLUG : slugify(target));
  }
  return [...out];
}

/** Outgoing links of a page as stored: wikilinks (`link`) and typed relationships, without self-links. */
export function outgoingLinks(
  slug: string,
  content: string,
  relationships: readonly Relationship[],
): { toSlug: string; kind: string }[] {
  const links = wikilinkTargets(content).map((toSlug) => ({ toSlug, kind: 'link' }));
  const typed = relationships.map((r) => ({ toSlug: r.targetSlug, kind: r.type }));
  const seen = new Set<string>();
  return [...links, ...typed].filter((l) => {
    const key = `${l.toSlug}\u0000${l.kind}`;
    if (l.toSlug === slug || l.toSlug === INDEX_SLUG || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Removes the links to `deadSlugs` from markdown, keeping their text (`[[Gone|label]]` becomes `label`). */
export function unlink(markdown: string, deadSlugs: ReadonlySet<string>): string {
  return markdown.replace(WIKILINK, (whole, target: string) => {
    if (!deadSlugs.has(slugify(target.trim()))) return whole;
    const label = /\|([^\]]*)\]\]$/.exec(whole)?.[1];
    return (label ?? target).trim();
  });
}

/** SPEC §2: confidence from the number of sources behind a page. */
export function confidenceOf(sourceCount: number): 'low' | 'medium' | 'high' {
  return sourceCount >= 3 ? 'high' : sourceCount === 2 ? 'medium' : 'low';
}
