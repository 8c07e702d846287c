import { and, asc, count, desc, eq, inArray, ne, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import {
  type KnowledgePageRow,
  type KnowledgePageVersionRow,
  knowledgePages,
  knowledgePageVersions,
  type PageType,
} from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';
import { INDEX_SLUG } from './links.ts';

/** SQL of a base's pages and their versions, scoped by a base the caller already owns. */

/** The weighted document a page is searched by: title first, then aliases and tags, then the text. */
function searchVector(page: Pick<KnowledgePageRow, 'title' | 'aliases' | 'tags' | 'content'>): SQL {
  const keywords = [...page.aliases, ...page.tags].join(' ');
  return sql`setweight(to_tsvector('english', ${page.title}), 'A') || setweight(to_tsvector('english', ${keywords}), 'B') || setweight(to_tsvector('english', ${page.content}), 'C')`;
}

export async function listPages(
  db: Executor,
  kbId: string,
  q: { page: number; limit: number; tag?: string | undefined; pageType?: PageType | undefined },
): Promise<{ rows: KnowledgePageRow[]; total: number }> {
  const where = and(
    eq(knowledgePages.kbId, kbId),
    q.pageType ? eq(knowledgePages.pageType, q.pageType) : ne(knowledgePages.slug, INDEX_SLUG),
    q.tag ? sql`${knowledgePages.tags} @> ARRAY[${q.tag}]::text[]` : undefined,
  );
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(knowledgePages)
      .where(where)
      .orderBy(asc(knowledgePages.title), asc(knowledgePages.slug))
      .limit(q.limit)
      .offset(offsetOf(q)),
    db.select({ n: count() }).from(knowledgePages).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

export async function findPage(db: Executor, kbId: string, slug: string): Promise<KnowledgePageRow | undefined> {
  const [row] = await db
    .select()
    .from(knowledgePages)
    .where(and(eq(knowledgePages.kbId, kbId), eq(knowledgePages.slug, slug)));
  return row;
}

export async function findPagesBySlugs(db: Executor, kbId: string, slugs: string[]): Promise<KnowledgePageRow[]> {
  if (slugs.length === 0) return [];
  return db
    .select()
    .from(knowledgePages)
    .where(and(eq(knowledgePages.kbId, kbId), inArray(knowledgePages.slug, slugs)));
}

/** Pages whose aliases hold one of `keys` (normalized names): how the compiler resolves a name to a page. */
export async function findPagesByAlias(db: Executor, kbId: string, keys: string[]): Promise<KnowledgePageRow[]> {
  if (keys.length === 0) return [];
  return db
    .select()
    .from(knowledgePages)
    .where(and(eq(knowledgePages.kbId, kbId), sql`${knowledgePages.aliases} && ${sql.param(keys)}::text[]`));
}

export type NewPage = Omit<typeof knowledgePages.$inferInsert, 'search' | 'createdAt' | 'updatedAt'> &
  Pick<KnowledgePageRow, 'title' | 'aliases' | 'tags' | 'content'>;

export async function insertPage(db: Executor, row: NewPage): Promise<KnowledgePageRow> {
  const [inserted] = await insertPages(db, [row]);
  if (!inserted) throw new Error('page insert returned nothing');
  return inserted;
}

/** Inserts pages in one statement (an import, the benchmark's corpus); links and versions are the caller's. */
export async function insertPages(db: Executor, rows: NewPage[]): Promise<KnowledgePageRow[]> {
  if (rows.length === 0) return [];
  return db
    .insert(knowledgePages)
    .values(rows.map((row) => ({ ...row, search: searchVector(row) })))
    .returning();
}

export async function updatePage(
  db: Executor,
  pageId: string,
  next: Pick<
    KnowledgePageRow,
    | 'title'
    | 'content'
    | 'summary'
    | 'tags'
    | 'aliases'
    | 'pageType'
    | 'relationships'
    | 'sourceIds'
    | 'lastCompiledBy'
    | 'version'
  >,
): Promise<KnowledgePageRow> {
  const [row] = await db
    .update(knowledgePages)
    .set({ ...next, search: searchVector(next), updatedAt: new Date() })
    .where(eq(knowledgePages.id, pageId))
    .returning();
  if (!row) throw new Error(`page ${pageId} vanished`);
  return row;
}

export async function deletePage(db: Executor, kbId: string, slug: string): Promise<KnowledgePageRow | undefined> {
  const [row] = await db
    .delete(knowledgePages)
    .where(and(eq(knowledgePages.kbId, kbId), eq(knowledgePages.slug, slug)))
    .returning();
  return row;
}

/** Pages of the base, the index aside. */
export async function countPages(db: Executor, kbId: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(knowledgePages)
    .where(and(eq(knowledgePages.kbId, kbId), ne(knowledgePages.slug, INDEX_SLUG)));
  return row?.n ?? 0;
}

/** What the index, lint and the graph read of every page: no content. */
export async function pageOutline(db: Executor, kbId: string) {
  return db
    .select({
      id: knowledgePages.id,
      slug: knowledgePages.slug,
      title: knowledgePages.title,
      summary: knowledgePages.summary,
      pageType: knowledgePages.pageType,
      backlinkCount: knowledgePages.backlinkCount,
      lastCompiledBy: knowledgePages.lastCompiledBy,
      contentLength: sql<number>`length(${knowledgePages.content})`.mapWith(Number),
      updatedAt: knowledgePages.updatedAt,
    })
    .from(knowledgePages)
    .where(and(eq(knowledgePages.kbId, kbId), ne(knowledgePages.slug, INDEX_SLUG)))
    .orderBy(asc(knowledgePages.title), asc(knowledgePages.slug));
}

// Versions

export async function insertVersion(db: Executor, row: typeof knowledgePageVersions.$inferInsert): Promise<void> {
  await db.insert(knowledgePageVersions).values(row);
}

export async function listVersions(
  db: Executor,
  pageId: string,
  p: { page: number; limit: number },
): Promise<{ rows: KnowledgePageVersionRow[]; total: number }> {
  const where = eq(knowledgePageVersions.pageId, pageId);
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(knowledgePageVersions)
      .where(where)
      .orderBy(desc(knowledgePageVersions.version))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(knowledgePageVersions).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

export async function findVersion(
  db: Executor,
  pageId: string,
  version: number,
): Promise<KnowledgePageVersionRow | undefined> {
  const [row] = await db
    .select()
    .from(knowledgePageVersions)
    .where(and(eq(knowledgePageVersions.pageId, pageId), eq(knowledgePageVersions.version, version)));
  return row;
}
