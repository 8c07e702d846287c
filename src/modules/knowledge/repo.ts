import { and, asc, count, desc, eq, inArray, ne, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import {
  type KnowledgeBaseRow,
  type KnowledgeConfigRow,
  type KnowledgeLogRow,
  type KnowledgePageRow,
  type KnowledgePageVersionRow,
  type KnowledgeSourceRow,
  knowledgeBases,
  knowledgeConfig,
  knowledgeConversationTrackers,
  knowledgeLinks,
  knowledgeLogs,
  knowledgePages,
  knowledgePageVersions,
  knowledgeSources,
  type PageType,
  type SourceStatus,
  type SourceType,
} from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';
import { INDEX_SLUG } from './links.ts';

/** The rows of a raw `execute`, which both drivers answer as `{rows}`. */
function rowsOf(result: unknown): Record<string, unknown>[] {
  return (result as { rows: Record<string, unknown>[] }).rows;
}

/** All SQL of the knowledge area. Every function is scoped by account or by a base the caller already owns. */

// ---- Bases and config -------------------------------------------------------------------------------------

export async function listBases(
  db: Executor,
  accountId: string,
  p: { page: number; limit: number },
): Promise<{ rows: KnowledgeBaseRow[]; total: number }> {
  const where = eq(knowledgeBases.accountId, accountId);
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(knowledgeBases)
      .where(where)
      .orderBy(desc(knowledgeBases.isDefault), asc(knowledgeBases.createdAt), asc(knowledgeBases.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(knowledgeBases).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

export async function findBase(db: Executor, accountId: string, kbId: string): Promise<KnowledgeBaseRow | undefined> {
  const [row] = await db
    .select()
    .from(knowledgeBases)
    .where(and(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.id, kbId)));
  return row;
}

export async function findBasesByIds(
  db: Executor,
  accountId: string,
  ids: readonly string[],
): Promise<KnowledgeBaseRow[]> {
  if (ids.length === 0) return [];
  return db
    .select()
    .from(knowledgeBases)
    .where(and(eq(knowledgeBases.accountId, accountId), inArray(knowledgeBases.id, [...ids])));
}

/** Locks the base row: the compiler and lint of one base run one at a time. */
export async function lockBase(db: Executor, kbId: string): Promise<KnowledgeBaseRow | undefined> {
  const [row] = await db.select().from(knowledgeBases).where(eq(knowledgeBases.id, kbId)).for('update');
  return row;
}

export async function findDefaultBase(db: Executor, accountId: string): Promise<KnowledgeBaseRow | undefined> {
  const [row] = await db
    .select()
    .from(knowledgeBases)
    .where(and(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.isDefault, true)));
  return row;
}

/** Inserts a base; `undefined` when a unique index refused it (same name, or a second default). */
export async function insertBase(
  db: Executor,
  row: typeof knowledgeBases.$inferInsert,
): Promise<KnowledgeBaseRow | undefined> {
  const [inserted] = await db.insert(knowledgeBases).values(row).onConflictDoNothing().returning();
  return inserted;
}

export async function updateBase(
  db: Executor,
  accountId: string,
  kbId: string,
  patch: Partial<Pick<KnowledgeBaseRow, 'name' | 'description' | 'customInstructions' | 'maxPagesLimit'>>,
): Promise<KnowledgeBaseRow | undefined> {
  const [row] = await db
    .update(knowledgeBases)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.id, kbId)))
    .returning();
  return row;
}

/** Makes `kbId` the account's only default; call inside a transaction (two statements, one outcome). */
export async function setDefaultBase(db: Executor, accountId: string, kbId: string): Promise<void> {
  await db
    .update(knowledgeBases)
    .set({ isDefault: false, updatedAt: new Date() })
    .where(
      and(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.isDefault, true), ne(knowledgeBases.id, kbId)),
    );
  await db
    .update(knowledgeBases)
    .set({ isDefault: true, updatedAt: new Date() })
    .where(and(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.id, kbId)));
}

export async function deleteBase(db: Executor, accountId: string, kbId: string): Promise<boolean> {
  const rows = await db
    .delete(knowledgeBases)
    .where(
      and(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.id, kbId), eq(knowledgeBases.isDefault, false)),
    )
    .returning({ id: knowledgeBases.id });
  return rows.length > 0;
}

export async function getOrCreateConfig(db: Executor, accountId: string): Promise<KnowledgeConfigRow> {
  await db.insert(knowledgeConfig).values({ accountId }).onConflictDoNothing();
  const [row] = await db.select().from(knowledgeConfig).where(eq(knowledgeConfig.accountId, accountId));
  if (!row) throw new Error(`knowledge_config of ${accountId} vanished`);
  return row;
}

export async function updateConfig(
  db: Executor,
  accountId: string,
  patch: Partial<Pick<KnowledgeConfigRow, 'enabled' | 'autoIngestConversations'>>,
): Promise<KnowledgeConfigRow> {
  await getOrCreateConfig(db, accountId);
  const [row] = await db
    .update(knowledgeConfig)
    .set({ ...patch, updatedAt: new Date() })
    .where(eq(knowledgeConfig.accountId, accountId))
    .returning();
  if (!row) throw new Error(`knowledge_config of ${accountId} vanished`);
  return row;
}

// ---- Pages ------------------------------------------------------------------------------------------------

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

/** Inserts the links of many pages at once. */
export async function insertLinks(
  db: Executor,
  rows: { kbId: string; fromPageId: string; toSlug: string; kind: string }[],
): Promise<void> {
  if (rows.length > 0) await db.insert(knowledgeLinks).values(rows).onConflictDoNothing();
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

// ---- Links ------------------------------------------------------------------------------------------------

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

// ---- Search -----------------------------------------------------------------------------------------------

export interface SearchRow {
  slug: string;
  title: string;
  snippet: string;
  tags: string[];
  pageType: PageType;
  sourceCount: number;
  score: number;
  updatedAt: Date;
}

/** How many of a query's lexemes a search keeps, in the order they appear. */
const QUERY_LEXEMES = 8;

/** Only plain lexemes go into a tsquery built from text; anything else is dropped, never escaped. */
const plainLexemes = (lexemes: unknown[]): string[] => lexemes.map(String).filter((l) => /^[\p{L}\p{N}_]+$/u.test(l));

/** The expression for queryLexemes's answer, a text[], to select beside other columns. */
const lexemesOf = (text: string, max: number) => sql`(
  SELECT coalesce(array_agg(lexeme ORDER BY pos), '{}') FROM (
    SELECT lexeme, positions[1] AS pos FROM unnest(to_tsvector('english', ${text})) ORDER BY positions[1] LIMIT ${max}
  ) l)`;

/** Up to `max` lexemes of a text, in the order they appear (English stemming, stop words dropped). */
export async function queryLexemes(db: Executor, text: string, max = QUERY_LEXEMES): Promise<string[]> {
  const [row] = rowsOf(await db.execute(sql`SELECT ${lexemesOf(text, max)} AS lexemes`));
  return plainLexemes((row?.lexemes as unknown[] | undefined) ?? []);
}

function combinations(items: string[], k: number): string[][] {
  if (k === 0) return [[]];
  if (items.length < k) return [];
  const [first, ...rest] = items;
  return [...combinations(rest, k - 1).map((c) => [first ?? '', ...c]), ...combinations(rest, k)];
}

/** `('a' & 'b') | ('a' & 'c') | ...`: pages holding at least `atLeast` of the lexemes. */
export function atLeastQuery(lexemes: string[], atLeast: number): string {
  const k = Math.max(1, Math.min(atLeast, lexemes.length));
  return combinations(lexemes, k)
    .map((c) => `(${c.map((l) => `'${l}'`).join(' & ')})`)
    .join(' | ');
}

interface Ranking {
  tags: string[];
  limit: number;
  boost: number;
}

/**
 * The `limit` best pages of a base matching a tsquery, with what a result shows and the query for its snippet.
 * The rank is ts_rank_cd over the weighted vector, times `1 + boost * ln(1 + backlinks)`.
 */
function bestMatches(kbId: string, query: SQL, r: Ranking): SQL {
  const tagFilter = r.tags.length > 0 ? sql`AND p.tags @> ${sql.param(r.tags)}::text[]` : sql``;
  return sql`
    SELECT p.slug, p.title, p.tags, p.page_type, cardinality(p.source_ids) AS source_count, p.updated_at, p.content,
      q.query, ts_rank_cd(p.search, q.query, 1) * (1 + ${r.boost}::float8 * ln(1 + p.backlink_count)) AS score
    FROM knowledge_pages p, (SELECT ${query} AS query) q
    WHERE p.kb_id = ${kbId} AND p.slug <> ${INDEX_SLUG} AND p.search @@ q.query ${tagFilter}
    ORDER BY score DESC, p.slug
    LIMIT ${r.limit}`;
}

/** A result's snippet, made for the rows returned only (`r`: rows of bestMatches). */
const SNIPPET = sql`ts_headline('english', r.content, r.query,
  'MaxFragments=2, MinWords=6, MaxWords=24, StartSel=**, StopSel=**, FragmentDelimiter=" … "') AS snippet`;

function toSearchRow(r: Record<string, unknown>): SearchRow {
  return {
    slug: String(r.slug),
    title: String(r.title),
    snippet: String(r.snippet ?? ''),
    tags: (r.tags as string[] | null) ?? [],
    pageType: r.page_type as PageType,
    sourceCount: Number(r.source_count),
    score: Number(r.score),
    updatedAt: new Date(String(r.updated_at)),
  };
}

/**
 * Full-text search over one base with the user's words in web-search syntax (every word, "phrases",
 * -excluded), answered with the text's lexemes (up to QUERY_LEXEMES, plain ones only) in the same statement, so that a
 * search relaxing its query (searchPagesRelaxed) needs one statement more, not two.
 */
export async function searchPages(
  db: Executor,
  kbId: string,
  q: Ranking & { text: string },
): Promise<{ rows: SearchRow[]; lexemes: string[] }> {
  const rows = rowsOf(
    await db.execute(sql`
      SELECT ${lexemesOf(q.text, QUERY_LEXEMES)} AS lexemes, r.*
      FROM (SELECT 1) one LEFT JOIN LATERAL (
        SELECT r.slug, r.title, r.tags, r.page_type, r.source_count, r.updated_at, r.score, ${SNIPPET}
        FROM (${bestMatches(kbId, sql`websearch_to_tsquery('english', ${q.text})`, q)}) r
      ) r ON true
      ORDER BY r.score DESC, r.slug`),
  );
  return {
    rows: rows.filter((r) => r.slug !== null).map(toSearchRow),
    lexemes: plainLexemes((rows[0]?.lexemes as unknown[] | undefined) ?? []),
  };
}

/**
 * Pages holding at least `steps[i]` of the lexemes, for each step in turn, in one statement: each step's best
 * `limit` pages, answered with their step, a page only at its first step and none of `exclude`. A step is
 * taken only while `exclude` and the earlier steps' pages together number fewer than `wanted`; the others are
 * never run (PostgreSQL's one-time filter), so a broad step costs nothing when a narrow one found enough.
 */
export async function searchPagesRelaxed(
  db: Executor,
  kbId: string,
  q: Ranking & { lexemes: string[]; steps: number[]; exclude: string[]; wanted: number },
): Promise<Array<SearchRow & { step: number }>> {
  if (q.lexemes.length === 0 || q.steps.length === 0) return [];
  const exclude = sql`${sql.param(q.exclude)}::text[]`;
  const tier = (i: number) => sql.raw(`t${i}`);
  const tiers = q.steps.map((atLeast, i) => {
    const earlier = q.steps.slice(0, i).map((_, j) => sql` UNION SELECT slug FROM ${tier(j)}`);
    const gate =
      i === 0
        ? sql``
        : sql`WHERE (SELECT count(*) FROM (SELECT unnest(${exclude})${sql.join(earlier)}) seen) < ${q.wanted}::int`;
    const matches = bestMatches(kbId, sql`${atLeastQuery(q.lexemes, atLeast)}::tsquery`, q);
    return sql`${tier(i)} AS (SELECT ${i}::int AS step, m.* FROM (${matches}) m ${gate})`;
  });
  const all = sql.join(
    q.steps.map((_, i) => sql`SELECT * FROM ${tier(i)}`),
    sql` UNION ALL `,
  );
  const rows = rowsOf(
    await db.execute(sql`
      WITH ${sql.join(tiers, sql`, `)}
      SELECT r.step, r.slug, r.title, r.tags, r.page_type, r.source_count, r.updated_at, r.score, ${SNIPPET}
      FROM (
        SELECT DISTINCT ON (u.slug) u.* FROM (${all}) u WHERE u.slug <> ALL(${exclude}) ORDER BY u.slug, u.step
      ) r
      ORDER BY r.step, r.score DESC, r.slug`),
  );
  return rows.map((r) => ({ ...toSearchRow(r), step: Number(r.step) }));
}

// ---- Versions -----------------------------------------------------------------------------------------------

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

// ---- Sources ----------------------------------------------------------------------------------------------

export async function insertSource(
  db: Executor,
  row: typeof knowledgeSources.$inferInsert,
): Promise<KnowledgeSourceRow> {
  const [inserted] = await db.insert(knowledgeSources).values(row).returning();
  if (!inserted) throw new Error('source insert returned nothing');
  return inserted;
}

export async function listSources(
  db: Executor,
  kbId: string,
  q: { page: number; limit: number; type?: SourceType | undefined; status?: SourceStatus | undefined },
): Promise<{ rows: KnowledgeSourceRow[]; total: number }> {
  const where = and(
    eq(knowledgeSources.kbId, kbId),
    q.type ? eq(knowledgeSources.type, q.type) : undefined,
    q.status ? eq(knowledgeSources.status, q.status) : undefined,
  );
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(knowledgeSources)
      .where(where)
      .orderBy(desc(knowledgeSources.createdAt), desc(knowledgeSources.id))
      .limit(q.limit)
      .offset(offsetOf(q)),
    db.select({ n: count() }).from(knowledgeSources).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

export async function findSource(
  db: Executor,
  kbId: string,
  sourceId: string,
): Promise<KnowledgeSourceRow | undefined> {
  const [row] = await db
    .select()
    .from(knowledgeSources)
    .where(and(eq(knowledgeSources.kbId, kbId), eq(knowledgeSources.id, sourceId)));
  return row;
}

/** A source by id alone, for the compile job (which acts for whichever account owns it). */
export async function findSourceById(db: Executor, sourceId: string): Promise<KnowledgeSourceRow | undefined> {
  const [row] = await db.select().from(knowledgeSources).where(eq(knowledgeSources.id, sourceId));
  return row;
}

export async function updateSource(
  db: Executor,
  sourceId: string,
  patch: Partial<
    Pick<KnowledgeSourceRow, 'status' | 'error' | 'compiledHash' | 'compiledAt' | 'rawContent' | 'metadata'>
  >,
): Promise<KnowledgeSourceRow | undefined> {
  const [row] = await db
    .update(knowledgeSources)
    .set({ ...patch, updatedAt: new Date() })
    .where(eq(knowledgeSources.id, sourceId))
    .returning();
  return row;
}

export async function deleteSource(db: Executor, kbId: string, sourceId: string): Promise<boolean> {
  const rows = await db
    .delete(knowledgeSources)
    .where(and(eq(knowledgeSources.kbId, kbId), eq(knowledgeSources.id, sourceId)))
    .returning({ id: knowledgeSources.id });
  return rows.length > 0;
}

// ---- Conversation capture ---------------------------------------------------------------------------

/**
 * Agent conversations to capture: of accounts whose knowledge is on with `autoIngestConversations`, idle since
 * `idleSince`, never captured or active again since their capture. Oldest activity first.
 */
export async function conversationsToCapture(db: Executor, idleSince: Date, limit: number) {
  const rows = await db.execute(sql`
    SELECT c.id, c.account_id, c.agent_id, c.title, c.last_activity_at, t.source_id, a.name AS agent_name
    FROM conversations c
    JOIN knowledge_config k ON k.account_id = c.account_id AND k.enabled AND k.auto_ingest_conversations
    JOIN agents a ON a.id = c.agent_id
    LEFT JOIN knowledge_conversation_trackers t ON t.conversation_id = c.id
    WHERE c.last_activity_at < ${idleSince.toISOString()}::timestamptz
      AND (t.conversation_id IS NULL OR t.captured_activity_at < c.last_activity_at)
    ORDER BY c.last_activity_at
    LIMIT ${limit}`);
  return rowsOf(rows).map((r) => ({
    conversationId: String(r.id),
    accountId: String(r.account_id),
    agentName: String(r.agent_name),
    title: String(r.title ?? ''),
    lastActivityAt: new Date(String(r.last_activity_at)),
    sourceId: r.source_id ? String(r.source_id) : undefined,
  }));
}

export async function saveTracker(
  db: Executor,
  row: { conversationId: string; kbId: string; sourceId: string; capturedActivityAt: Date },
): Promise<void> {
  await db
    .insert(knowledgeConversationTrackers)
    .values(row)
    .onConflictDoUpdate({
      target: knowledgeConversationTrackers.conversationId,
      set: {
        kbId: row.kbId,
        sourceId: row.sourceId,
        capturedActivityAt: row.capturedActivityAt,
        ingestedAt: new Date(),
      },
    });
}

// ---- Logs -------------------------------------------------------------------------------------------------

export async function insertLog(db: Executor, row: typeof knowledgeLogs.$inferInsert): Promise<void> {
  await db.insert(knowledgeLogs).values(row);
}

export async function listLogs(
  db: Executor,
  kbId: string,
  p: { page: number; limit: number },
): Promise<{ rows: KnowledgeLogRow[]; total: number }> {
  const where = eq(knowledgeLogs.kbId, kbId);
  const [rows, [totals]] = await Promise.all([
    db
      .select()
      .from(knowledgeLogs)
      .where(where)
      .orderBy(desc(knowledgeLogs.createdAt), desc(knowledgeLogs.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(knowledgeLogs).where(where),
  ]);
  return { rows, total: totals?.n ?? 0 };
}

/** The newest compiler proposals that were not applied because a user's edit stands on the page. */
export async function recentSkippedProposals(db: Executor, kbId: string, limit = 50): Promise<KnowledgeLogRow[]> {
  return db
    .select()
    .from(knowledgeLogs)
    .where(and(eq(knowledgeLogs.kbId, kbId), sql`${knowledgeLogs.details} ->> 'skipped' = 'user-edit'`))
    .orderBy(desc(knowledgeLogs.createdAt))
    .limit(limit);
}
