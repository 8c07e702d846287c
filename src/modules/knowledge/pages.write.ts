import type { Executor } from '../../db/client.ts';
import type { CompiledBy, KnowledgeBaseRow, KnowledgePageRow, PageType, Relationship } from '../../db/schema/index.ts';
import { newId } from '../../lib/ids.ts';
import { INDEX_SLUG, outgoingLinks, slugify } from './links.ts';
import * as repo from './repo.ts';

/**
 * The one way a page changes, for hand edits, the compiler and lint alike: a new version row, the page's
 * links parsed again from its `[[wikilinks]]` and relationships, and the backlink counts of every page whose
 * incoming links moved. Run inside the caller's transaction, with the base locked.
 */

export interface PageWrite {
  slug: string;
  title: string;
  content: string;
  summary: string;
  tags: string[];
  aliases: string[];
  pageType: PageType;
  relationships: Relationship[];
  sourceIds: string[];
  compiledBy: CompiledBy;
  /** The source this version came from (compiler), or null (a person, lint). */
  sourceId: string | null;
}

export async function writePage(tx: Executor, kb: KnowledgeBaseRow, w: PageWrite): Promise<KnowledgePageRow> {
  const existing = await repo.findPage(tx, kb.id, w.slug);
  const oldTargets = existing ? await repo.linkTargetsOf(tx, existing.id) : [];
  // Aliases are stored as normalized keys; a page is always found again by its own title's key.
  const aliases = [...new Set([slugify(w.title), ...w.aliases.map(slugify)])];
  const fields = {
    title: w.title,
    content: w.content,
    summary: w.summary,
    tags: [...new Set(w.tags)],
    aliases,
    pageType: w.pageType,
    relationships: w.relationships,
    sourceIds: [...new Set(w.sourceIds)],
    lastCompiledBy: w.compiledBy,
  };
  const page = existing
    ? await repo.updatePage(tx, existing.id, { ...fields, version: existing.version + 1 })
    : await repo.insertPage(tx, {
        id: newId('knowledgePage'),
        kbId: kb.id,
        accountId: kb.accountId,
        slug: w.slug,
        version: 1,
        ...fields,
      });
  await repo.insertVersion(tx, {
    id: newId('knowledgePageVersion'),
    pageId: page.id,
    kbId: kb.id,
    version: page.version,
    title: page.title,
    content: page.content,
    tags: page.tags,
    compiledBy: w.compiledBy,
    sourceId: w.sourceId,
  });
  if (w.slug !== INDEX_SLUG) {
    const links = outgoingLinks(w.slug, w.content, w.relationships);
    await repo.replaceLinks(tx, kb.id, page.id, links);
    await repo.recountBacklinks(tx, kb.id, [...new Set([...oldTargets, ...links.map((l) => l.toSlug), w.slug])]);
    // Its own count may have moved too (links to it from before it existed).
    return (await repo.findPage(tx, kb.id, w.slug)) ?? page;
  }
  return page;
}

const SECTION_TITLES: Record<Exclude<PageType, 'index'>, string> = {
  entity: 'Entities',
  concept: 'Concepts',
  summary: 'Summaries',
  custom: 'Other pages',
};

/** The `_index` markdown: every page by type, then title, with its summary. Deterministic for one set of pages. */
export function indexMarkdown(
  kbName: string,
  pages: readonly { slug: string; title: string; summary: string; pageType: PageType }[],
): string {
  const lines = [`# ${kbName}`, '', `${pages.length} page${pages.length === 1 ? '' : 's'}.`];
  for (const type of Object.keys(SECTION_TITLES) as (keyof typeof SECTION_TITLES)[]) {
    const of = pages.filter((p) => p.pageType === type);
    if (of.length === 0) continue;
    lines.push('', `## ${SECTION_TITLES[type]}`, '');
    for (const p of of)
      lines.push(`- [[${p.slug}|${p.title}]]${p.summary ? ` — ${p.summary.replace(/\s+/g, ' ').trim()}` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Writes `_index` again when what it lists changed (a new version only then). Answers whether it wrote. */
export async function regenerateIndex(tx: Executor, kb: KnowledgeBaseRow): Promise<boolean> {
  const pages = await repo.pageOutline(tx, kb.id);
  const content = indexMarkdown(kb.name, pages);
  const current = await repo.findPage(tx, kb.id, INDEX_SLUG);
  if (current?.content === content) return false;
  await writePage(tx, kb, {
    slug: INDEX_SLUG,
    title: 'Index',
    content,
    summary: 'Table of contents',
    tags: [],
    aliases: [],
    pageType: 'index',
    relationships: [],
    sourceIds: [],
    compiledBy: 'compiler',
    sourceId: null,
  });
  return true;
}

export async function logEvent(
  tx: Executor,
  kbId: string,
  kind: 'compile' | 'lint' | 'edit',
  level: 'info' | 'warn' | 'error',
  message: string,
  details: Record<string, unknown> = {},
): Promise<void> {
  await repo.insertLog(tx, { id: newId('knowledgeLog'), kbId, kind, level, message, details });
}
