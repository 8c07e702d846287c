import { and, asc, eq, inArray, ne, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { rowsOf } from '../../db/rows.ts';
import { knowledgeLinks, knowledgePages } from '../../db/schema/index.ts';
import { INDEX_SLUG } from './links.ts';

/** SQL of the links between pages (wikilinks and relationships) and what lint reads of them. */

/** Inserts the links of many pages at once. */
export async function insertLinks(
  db: Executor,
  rows: { kbId: string; fromPageId: string; toSlug: string; kind: string }[],
): Promise<void> {
  if (rows.length > 0) await db.insert(knowledgeLinks).values(rows).onConflictDoNothing();
}

export async function linkTargetsOf(db: Executor, pageId: string): Promise<string[]> {
  const rows = await db
    .selectDistinct({ toSlug: knowledgeLinks.toSlug })
    .from(knowledgeLinks)
    .where(eq(knowledgeLinks.fromPageId, pageId));
  return rows.map((r) => r.toSlug);
}

export async function replaceLinks(
  db: Executor,
  kbId: string,
  pageId: string,
  links: { toSlug: string; kind: string }[],
): Promise<void> {
  await db.delete(knowledgeLinks).where(eq(knowledgeLinks.fromPageId, pageId));
  await insertLinks(
    db,
    links.map((l) => ({ kbId, fromPageId: pageId, ...l })),
  );
}

/** Slugs of the pages linking to `slug` (wikilinks or relationships), each once, sorted. */
export async function backlinksOf(db: Executor, kbId: string, slug: string): Promise<string[]> {
  const rows = await db
    .selectDistinct({ slug: knowledgePages.slug })
    .from(knowledgeLinks)
    .innerJoin(knowledgePages, eq(knowledgePages.id, knowledgeLinks.fromPageId))
    .where(and(eq(knowledgeLinks.kbId, kbId), eq(knowledgeLinks.toSlug, slug)))
    .orderBy(asc(knowledgePages.slug));
  return rows.map((r) => r.slug);
}

/** Sets `backlink_count` of the pages at `slugs` from the links table. */
export async function recountBacklinks(db: Executor, kbId: string, slugs: string[]): Promise<void> {
  if (slugs.length === 0) return;
  await db.execute(sql`
    UPDATE knowledge_pages p SET backlink_count = (
      SELECT count(DISTINCT l.from_page_id)::int FROM knowledge_links l WHERE l.kb_id = p.kb_id AND l.to_slug = p.slug
    )
    WHERE p.kb_id = ${kbId} AND p.slug IN (${sql.join(
      slugs.map((s) => sql`${s}`),
      sql`, `,
    )})`);
}

/** The links between the given pages (both ends among them), each pair once: the edges of the graph picture. */
export async function linksAmong(db: Executor, kbId: string, slugs: string[]): Promise<{ from: string; to: string }[]> {
  if (slugs.length === 0) return [];
  const rows = await db
    .selectDistinct({ from: knowledgePages.slug, to: knowledgeLinks.toSlug })
    .from(knowledgeLinks)
    .innerJoin(knowledgePages, eq(knowledgePages.id, knowledgeLinks.fromPageId))
    .where(
      and(eq(knowledgeLinks.kbId, kbId), inArray(knowledgePages.slug, slugs), inArray(knowledgeLinks.toSlug, slugs)),
    )
    .orderBy(asc(knowledgePages.slug), asc(knowledgeLinks.toSlug));
  return rows;
}

/** Links whose target page does not exist: `[{fromSlug, fromPageId, toSlug, fromCompiledBy}]`. */
export async function brokenLinks(db: Executor, kbId: string) {
  const rows = await db.execute(sql`
    SELECT DISTINCT f.slug AS from_slug, f.id AS from_page_id, l.to_slug, f.last_compiled_by
    FROM knowledge_links l
    JOIN knowledge_pages f ON f.id = l.from_page_id
    WHERE l.kb_id = ${kbId}
      AND NOT EXISTS (SELECT 1 FROM knowledge_pages t WHERE t.kb_id = l.kb_id AND t.slug = l.to_slug)
    ORDER BY f.slug, l.to_slug`);
  return rowsOf(rows).map((r) => ({
    fromSlug: String(r.from_slug),
    fromPageId: String(r.from_page_id),
    toSlug: String(r.to_slug),
    fromCompiledBy: String(r.last_compiled_by),
  }));
}

/** Pairs of pages whose titles are alike (trigram similarity at least `threshold`). */
export async function similarTitlePairs(db: Executor, kbId: string, threshold: number, limit = 50) {
  const rows = await db.execute(sql`
    SELECT a.slug AS a, b.slug AS b, similarity(a.title, b.title) AS s
    FROM knowledge_pages a
    JOIN knowledge_pages b ON a.kb_id = b.kb_id AND a.slug < b.slug AND a.title % b.title
    WHERE a.kb_id = ${kbId} AND a.slug <> ${INDEX_SLUG} AND b.slug <> ${INDEX_SLUG}
      AND similarity(a.title, b.title) >= ${threshold}
    ORDER BY s DESC, a.slug, b.slug
    LIMIT ${limit}`);
  return rowsOf(rows).map((r) => ({
    a: String(r.a),
    b: String(r.b),
    similarity: Number(r.s),
  }));
}

/** Pages whose titles are like `name` (trigram), best first: candidates the compiler may show the model. */
export async function similarPages(db: Executor, kbId: string, name: string, limit: number) {
  return db
    .select({
      slug: knowledgePages.slug,
      title: knowledgePages.title,
      summary: knowledgePages.summary,
      aliases: knowledgePages.aliases,
    })
    .from(knowledgePages)
    .where(
      and(eq(knowledgePages.kbId, kbId), ne(knowledgePages.slug, INDEX_SLUG), sql`${knowledgePages.title} % ${name}`),
    )
    .orderBy(sql`similarity(${knowledgePages.title}, ${name}) DESC`, asc(knowledgePages.slug))
    .limit(limit);
}
