import type { ServiceContext } from '../../context.ts';
import type { KnowledgePageRow, KnowledgePageVersionRow } from '../../db/schema/index.ts';
import { NotFoundError, ValidationError } from '../../lib/errors.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import { ownedBase } from './bases.service.ts';
import { enqueueKnowledgeJob } from './jobs.ts';
import { confidenceOf, INDEX_SLUG } from './links.ts';
import { lintBase } from './lint.ts';
import { logEvent, regenerateIndex, writePage } from './pages.write.ts';
import * as repo from './repo.ts';
import type {
  KnowledgeLog,
  KnowledgePage,
  KnowledgePageSummary,
  LintReport,
  PageListQuery,
  PageVersion,
  PutPage,
  SearchQuery,
  SearchResult,
} from './schema.ts';

/** Wiki pages of a base (SPEC §4): read, search, edit by hand, delete, and their history. */

/** How much a page's backlinks lift its rank: score × (1 + BOOST × ln(1 + backlinks)). See README for the figures. */
export const BACKLINK_BOOST = 0.15;
/** Fewer all-words hits than this, for a query of several words, and the search accepts any of the words. */
const RELAX_BELOW = 3;

function toSummary(row: KnowledgePageRow): KnowledgePageSummary {
  return {
    slug: row.slug,
    title: row.title,
    summary: row.summary,
    tags: row.tags,
    pageType: row.pageType,
    confidence: confidenceOf(row.sourceIds.length),
    lastCompiledBy: row.lastCompiledBy,
    backlinkCount: row.backlinkCount,
    version: row.version,
    updatedAt: row.updatedAt.toISOString(),
  };
}

function toKnowledgePage(row: KnowledgePageRow, backlinks: string[]): KnowledgePage {
  return {
    ...toSummary(row),
    content: row.content,
    aliases: row.aliases,
    relationships: row.relationships,
    backlinks,
    sourceIds: row.sourceIds,
    createdAt: row.createdAt.toISOString(),
  };
}

export async function listKnowledgePages(
  ctx: ServiceContext,
  kbId: string,
  q: PageListQuery,
): Promise<Page<KnowledgePageSummary>> {
  await ownedBase(ctx, kbId);
  const { rows, total } = await repo.listPages(ctx.db, kbId, q);
  return toPage(rows.map(toSummary), total, q);
}

export async function getKnowledgePage(ctx: ServiceContext, kbId: string, slug: string): Promise<KnowledgePage> {
  const kb = await ownedBase(ctx, kbId);
  let row = await repo.findPage(ctx.db, kbId, slug);
  if (!row && slug === INDEX_SLUG) {
    // A base nobody wrote to yet still has a (short) table of contents.
    row = await ctx.db.transaction(async (tx) => {
      await repo.lockBase(tx, kbId);
      await regenerateIndex(tx, kb);
      return repo.findPage(tx, kbId, INDEX_SLUG);
    });
  }
  if (!row) throw new NotFoundError(`Page ${slug} not found in knowledge base ${kbId}`);
  return toKnowledgePage(row, await repo.backlinksOf(ctx.db, kbId, slug));
}

/** The titles of those of `slugs` that are pages of the base (a page's links shown by title); at most 500 looked up. */
export async function pageTitles(
  ctx: ServiceContext,
  kbId: string,
  slugs: readonly string[],
): Promise<Map<string, string>> {
  await ownedBase(ctx, kbId);
  const wanted = [...new Set(slugs)].slice(0, 500);
  if (wanted.length === 0) return new Map();
  const rows = await repo.findPagesBySlugs(ctx.db, kbId, wanted);
  return new Map(rows.map((r) => [r.slug, r.title]));
}

/**
 * A hand edit (SPEC §4 PUT pages/:slug): the page's latest version becomes the user's, which the compiler
 * never overwrites. A slug that does not exist yet makes the page (title and content required then).
 */
export async function putKnowledgePage(
  ctx: ServiceContext,
  kbId: string,
  slug: string,
  input: PutPage,
): Promise<KnowledgePage> {
  if (slug === INDEX_SLUG) {
    throw new ValidationError('The index is generated from the pages: edit the pages instead', [
      { field: 'params.slug', message: '_index cannot be edited' },
    ]);
  }
  await ownedBase(ctx, kbId);
  const page = await ctx.db.transaction(async (tx) => {
    const kb = await repo.lockBase(tx, kbId);
    if (!kb) throw new NotFoundError(`Knowledge base ${kbId} not found`);
    const existing = await repo.findPage(tx, kbId, slug);
    if (!existing) {
      const missing = (['title', 'content'] as const).filter((f) => input[f] === undefined);
      if (missing.length > 0) {
        throw new ValidationError(
          `Page ${slug} does not exist yet: ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} required to create it`,
          missing.map((field) => ({ field: `body.${field}`, message: 'required to create a page' })),
        );
      }
      if ((await repo.countPages(tx, kbId)) >= kb.maxPagesLimit) {
        throw new ValidationError(`Knowledge base ${kbId} holds its limit of ${kb.maxPagesLimit} pages`, [
          { field: 'params.slug', message: 'the base is full: raise maxPagesLimit or delete pages' },
        ]);
      }
    }
    const written = await writePage(tx, kb, {
      slug,
      title: input.title ?? existing?.title ?? slug,
      content: input.content ?? existing?.content ?? '',
      summary: existing?.summary ?? '',
      tags: input.tags ?? existing?.tags ?? [],
      aliases: existing?.aliases ?? [],
      pageType: input.pageType ?? existing?.pageType ?? 'custom',
      relationships: existing?.relationships ?? [],
      sourceIds: existing?.sourceIds ?? [],
      compiledBy: 'user',
      sourceId: null,
    });
    await regenerateIndex(tx, kb);
    await logEvent(tx, kbId, 'edit', 'info', `${existing ? 'Edited' : 'Created'} page ${slug} by hand`, {
      slug,
      version: written.version,
    });
    return written;
  });
  return toKnowledgePage(page, await repo.backlinksOf(ctx.db, kbId, slug));
}

/** Deletes a page and its history; links to it are repaired by a lint job that runs next. */
export async function deleteKnowledgePage(ctx: ServiceContext, kbId: string, slug: string): Promise<void> {
  if (slug === INDEX_SLUG) {
    throw new ValidationError('The index is generated from the pages and cannot be deleted', [
      { field: 'params.slug', message: '_index cannot be deleted' },
    ]);
  }
  await ownedBase(ctx, kbId);
  await ctx.db.transaction(async (tx) => {
    const kb = await repo.lockBase(tx, kbId);
    if (!kb) throw new NotFoundError(`Knowledge base ${kbId} not found`);
    const gone = await repo.deletePage(tx, kbId, slug);
    if (!gone) throw new NotFoundError(`Page ${slug} not found in knowledge base ${kbId}`);
    await regenerateIndex(tx, kb);
    await logEvent(tx, kbId, 'edit', 'info', `Deleted page ${slug}`, { slug });
    await enqueueKnowledgeJob(
      tx,
      'knowledge.lint',
      { kbId },
      { dedupeKey: `knowledge.lint:${kbId}`, accountId: ctx.accountId },
    );
  });
}

export async function searchKnowledgePages(
  ctx: ServiceContext,
  kbId: string,
  q: SearchQuery,
): Promise<{ data: SearchResult[]; relaxed: boolean }> {
  await ownedBase(ctx, kbId);
  const tags = (q.tags ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  return searchBase(ctx.db, kbId, { text: q.q, tags, limit: q.limit, boost: BACKLINK_BOOST });
}

/**
 * Searches with every word first. A query of several words that finds fewer than RELAX_BELOW pages is
 * relaxed step by step (all words but one, then any two, then any one, stopping once enough is found), each
 * step's new hits placed after the earlier ones: pages holding more of the words keep their lead, and the
 * relaxed steps stay selective (a two-word step matches far fewer pages than any-word, which ranks them all).
 * Two statements at most: the strict search with the query's lexemes, then the steps together.
 */
export async function searchBase(
  db: ServiceContext['db'],
  kbId: string,
  q: { text: string; tags: string[]; limit: number; boost: number },
): Promise<{ data: SearchResult[]; relaxed: boolean }> {
  const ranking = { tags: q.tags, limit: q.limit, boost: q.boost };
  const found = await repo.searchPages(db, kbId, { ...ranking, text: q.text });
  let rows = found.rows;
  const strict = rows.length;
  const wanted = Math.min(RELAX_BELOW, q.limit);
  const { lexemes } = found;
  if (rows.length < wanted) {
    const steps = [...new Set([lexemes.length - 1, 2, 1])].filter((k) => k >= 1 && k < lexemes.length);
    const more = await repo.searchPagesRelaxed(db, kbId, {
      ...ranking,
      lexemes,
      steps,
      exclude: rows.map((r) => r.slug),
      wanted,
    });
    for (let i = 0; i < steps.length && rows.length < wanted; i++) {
      rows = [...rows, ...more.filter((r) => r.step === i)].slice(0, q.limit);
    }
  }
  const relaxed = rows.length > strict;
  return {
    relaxed,
    data: rows.map((r) => ({
      slug: r.slug,
      title: r.title,
      content: r.snippet,
      tags: r.tags,
      pageType: r.pageType,
      confidence: confidenceOf(r.sourceCount),
      score: Math.round(r.score * 1e6) / 1e6,
      updatedAt: r.updatedAt.toISOString(),
    })),
  };
}

function toVersion(row: KnowledgePageVersionRow): PageVersion {
  return {
    version: row.version,
    title: row.title,
    content: row.content,
    tags: row.tags,
    compiledBy: row.compiledBy,
    sourceId: row.sourceId,
    createdAt: row.createdAt.toISOString(),
  };
}

async function ownedPage(ctx: ServiceContext, kbId: string, slug: string): Promise<KnowledgePageRow> {
  await ownedBase(ctx, kbId);
  const page = await repo.findPage(ctx.db, kbId, slug);
  if (!page) throw new NotFoundError(`Page ${slug} not found in knowledge base ${kbId}`);
  return page;
}

export async function listPageVersions(
  ctx: ServiceContext,
  kbId: string,
  slug: string,
  p: { page: number; limit: number },
): Promise<Page<PageVersion>> {
  const page = await ownedPage(ctx, kbId, slug);
  const { rows, total } = await repo.listVersions(ctx.db, page.id, p);
  return toPage(rows.map(toVersion), total, p);
}

export async function getPageVersion(
  ctx: ServiceContext,
  kbId: string,
  slug: string,
  version: number,
): Promise<PageVersion> {
  const page = await ownedPage(ctx, kbId, slug);
  const row = await repo.findVersion(ctx.db, page.id, version);
  if (!row) throw new NotFoundError(`Page ${slug} has no version ${version}`);
  return toVersion(row);
}

/** Runs the health check now (SPEC §4 POST .../lint) and answers its findings. */
export async function lintKnowledgeBase(ctx: ServiceContext, kbId: string): Promise<LintReport> {
  await ownedBase(ctx, kbId);
  return ctx.db.transaction(async (tx) => {
    const kb = await repo.lockBase(tx, kbId);
    if (!kb) throw new NotFoundError(`Knowledge base ${kbId} not found`);
    return lintBase(tx, kb);
  });
}

export async function listKnowledgeLogs(
  ctx: ServiceContext,
  kbId: string,
  p: { page: number; limit: number },
): Promise<Page<KnowledgeLog>> {
  await ownedBase(ctx, kbId);
  const { rows, total } = await repo.listLogs(ctx.db, kbId, p);
  return toPage(
    rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      level: r.level,
      message: r.message,
      details: r.details,
      createdAt: r.createdAt.toISOString(),
    })),
    total,
    p,
  );
}

export interface KnowledgeGraph {
  nodes: { slug: string; title: string; pageType: string; backlinkCount: number }[];
  edges: { from: string; to: string }[];
  /** Pages left out to keep the picture readable (the least linked). */
  omitted: number;
}

/** The link graph of a base for the wiki page's picture: the `limit` most linked pages and the links among them. */
export async function knowledgeGraph(ctx: ServiceContext, kbId: string, limit = 80): Promise<KnowledgeGraph> {
  await ownedBase(ctx, kbId);
  const outline = await repo.pageOutline(ctx.db, kbId);
  const kept = [...outline]
    .sort((a, b) => b.backlinkCount - a.backlinkCount || a.slug.localeCompare(b.slug))
    .slice(0, limit)
    .sort((a, b) => a.slug.localeCompare(b.slug));
  const edges = await repo.linksAmong(
    ctx.db,
    kbId,
    kept.map((p) => p.slug),
  );
  return {
    nodes: kept.map((p) => ({ slug: p.slug, title: p.title, pageType: p.pageType, backlinkCount: p.backlinkCount })),
    edges,
    omitted: outline.length - kept.length,
  };
}
