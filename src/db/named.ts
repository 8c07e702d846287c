import { type SQL, sql } from 'drizzle-orm';
import type { PgDialect, PgPreparedQuery, PgSession, PreparedQueryConfig } from 'drizzle-orm/pg-core';
import type { Executor } from './client.ts';

type Prepared = PgPreparedQuery<PreparedQueryConfig>;

/** The names taken by `namedStatement`. */
const names = new Set<string>();

/**
 * `make(db)` once per database handle, then the same for every call with it: a prepared query of drizzle's query
 * builder (its `.prepare(name)`), built and planned once rather than at every call.
 */
export function perDatabase<T>(make: (db: Executor) => T): (db: Executor) => T {
  const made = new WeakMap<Executor, T>();
  return (db) => {
    let value = made.get(db);
    if (value === undefined) {
      value = make(db);
      made.set(db, value);
    }
    return value;
  };
}

/**
 * A statement whose text never changes, only its parameters (a batch writer's, sent many times a second), run as
 * the prepared statement `name`: on PostgreSQL each connection parses and plans it once and then sends only its
 * parameters, where `db.execute` sends an unnamed statement that is parsed and planned at every call (0.07 to 0.1
 * ms of the database's CPU for a batch function's call), and the query object is built once per database handle
 * (drizzle's building costs about 0.1 to 0.2 ms of the service's CPU a query: docs/benchmarks.md). `build` writes
 * the statement with `param(key)` for each value; the function it answers runs it with `values` and answers its
 * rows. PGlite runs it as `db.execute` would. Drizzle offers names only to its query builder, so this takes the
 * handle's session and dialect, as its own `execute` does.
 */
export function namedStatement<Key extends string, Row = Record<string, unknown>>(
  name: string,
  build: (param: (key: Key) => SQL) => SQL,
): (db: Executor, values: Record<Key, unknown>) => Promise<Row[]> {
  // A connection keeps one text per name: a second statement of the same name would fail where it first ran.
  if (names.has(name)) throw new Error(`A named statement ${name} exists already`);
  names.add(name);
  const query = build((key) => sql`${sql.placeholder(key)}`);
  const statement = perDatabase((db): Prepared => {
    const { session, dialect } = db as unknown as { session: PgSession; dialect: PgDialect };
    return session.prepareQuery(dialect.sqlToQuery(query), undefined, name, false);
  });
  // Without fields to map, both drivers answer their client's result.
  return async (db, values) => ((await statement(db).execute(values)) as { rows: Row[] }).rows;
}
