import { type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { rowsOf } from '../../db/rows.ts';
import type { PageType } from '../../db/schema/index.ts';
import { INDEX_SLUG } from './links.ts';

/** Full-text search over a base's pages. */

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
