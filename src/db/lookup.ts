import { type Column, type SQL, type SQLWrapper, sql } from 'drizzle-orm';

/**
 * `column = ANY (ARRAY(subquery))`: the rows whose key a subquery names (a batch to delete, say), found through the
 * key's index. Written `IN (subquery)`, PostgreSQL may join the subquery's rows against a scan of the whole table,
 * whose cost grows with the table however few rows the batch holds (docs/benchmarks.md, migrations 0030 and 0031).
 */
export function byKey(column: Column, subquery: SQLWrapper): SQL {
  return sql`${column} = ANY (ARRAY(${subquery}))`;
}
