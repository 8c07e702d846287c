import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Reading the documentation's Markdown: which files, their prose without code, their links and headings. */

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** README.md and every Markdown file under docs/ (not the site's build or cache, nor `_incoming/` drafts), as paths from `root`. */
export function docFiles(root = REPO_ROOT): string[] {
  const found: string[] = ['README.md'];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!['node_modules', 'dist', 'cache', '.temp', '_incoming'].includes(entry.name)) walk(path);
      } else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk('docs');
  return found.map((f) => relative(root, join(root, f)));
}

export const readDoc = (file: string, root = REPO_ROOT) => readFileSync(join(root, file), 'utf8');

/** The text with fenced code blocks blanked (lines kept, so line numbers still hold). */
export function withoutFences(text: string): string {
  let fence: string | undefined;
  return text
    .split('\n')
    .map((line) => {
      const m = /^\s*(```+|~~~+)/.exec(line);
      if (m?.[1]) {
        if (!fence) fence = m[1];
        else if (m[1].startsWith(fence)) fence = undefined;
        return '';
      }
      return fence ? '' : line;
    })
    .join('\n');
}

/** The prose with inline code blanked too: what links and headings are read from. */
export const prose = (text: string) => withoutFences(text).replace(/`[^`\n]*`/g, (m) => ' '.repeat(m.length));

export interface DocLink {
  target: string;
  line: number;
}

/** Markdown links and images `[x](target)` and HTML `href`/`src` attributes, outside code. */
export function linksOf(text: string): DocLink[] {
  const links: DocLink[] = [];
  prose(text)
    .split('\n')
    .forEach((line, i) => {
      for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        if (m[1]) links.push({ target: m[1], line: i + 1 });
      }
      for (const m of line.matchAll(/\b(?:href|src)="([^"]+)"/g)) {
        if (m[1]) links.push({ target: m[1], line: i + 1 });
      }
    });
  return links;
}

/** VitePress's heading slug (its `slugify`). */
export function vitepressSlug(heading: string): string {
  return (
    heading
      .normalize('NFKD')
      .replace(/[\u0300-\u036F]/g, '')
      // biome-ignore lint/suspicious/noControlCharactersInRegex: VitePress drops control characters from slugs
      .replace(/[\u0000-\u001f]/g, '')
      .replace(/[\s~`!@#$%^&*()\-_+=[\]{}|\\;:"'“”‘’<>,.?/]+/g, '-')
      .replace(/-{2,}/g, '-')
      .replace(/^-+|-+$/g, '')
      .replace(/^(\d)/, '_$1')
      .toLowerCase()
  );
}

/** GitHub's heading slug: lower case, punctuation dropped, spaces as `-`. */
export function githubSlug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The heading texts of a Markdown file (outside code), as rendered: inline code keeps its text. */
export function headingsOf(text: string): string[] {
  return withoutFences(text)
    .split('\n')
    .map((line) => /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1])
    .filter((h): h is string => h !== undefined)
    .map((h) =>
      h
        .replace(/`([^`]*)`/g, '$1')
        .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
        .replace(/<[^>]+>/g, '')
        .trim(),
    );
}

/**
 * The anchors a file offers on both renderers (GitHub and the docs site): a heading whose two slugs differ
 * offers neither, so a link to it cannot work in one of them. Repeated headings get `-1`, `-2` on both.
 */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const heading of headingsOf(text)) {
    const vp = vitepressSlug(heading);
    const gh = githubSlug(heading);
    const n = seen.get(gh) ?? 0;
    seen.set(gh, n + 1);
    if (vp === gh) anchors.add(n ? `${vp}-${n}` : vp);
  }
  return anchors;
}
