import { type SQL, sql } from 'drizzle-orm';
import type { PgDialect, PgPreparedQuery, PgSession, PreparedQueryConfig } from 'drizzle-orm/pg-core';
import type { Executor } from './client.ts';

type Prepared = PgPreparedQuery<PreparedQueryConfig>;

/** Each database handle's prepared statements, by name. */
const prepared = new WeakMap<Executor, Map<string, Prepared>>();

/**
 * A statement whose text never changes, only its parameters (a batch writer's, sent many times a second), run as
 * the prepared statement `name`: on PostgreSQL each connection parses and plans it once and then sends only its
 * parameters, where `db.execute` sends an unnamed statement that is parsed and planned at every call (0.07 to 0.1
 * ms of the database's CPU for a batch function's call), and the query object is built once per database handle
 * (about 0.1 ms of the service's a call: docs/benchmarks.md). `build` writes the statement with
 * `param(key)` for each value; the function it answers runs it with `values` and answers its rows. PGlite runs it
 * as `db.execute` would. Drizzle offers names only to its query builder, so this takes the handle's session and
 * dialect, as its own `execute` does.
 */
export function namedStatement<Key extends string, Row = Record<string, unknown>>(
  name: string,
  build: (param: (key: Key) => SQL) => SQL,
): (db: Executor, values: Record<Key, unknown>) => Promise<Row[]> {
  const query = build((key) => sql`${sql.placeholder(key)}`);
  return async (db, values) => {
    let statements = prepared.get(db);
    if (!statements) {
      statements = new Map();
      prepared.set(db, statements);
    }
    let statement = statements.get(name);
    if (!statement) {
      const { session, dialect } = db as unknown as { session: PgSession; dialect: PgDialect };
      statement = session.prepareQuery(dialect.sqlToQuery(query), undefined, name, false);
      statements.set(name, statement);
    }
    // Without fields to map, both drivers answer their client's result.
    return ((await statement.execute(values)) as { rows: Row[] }).rows;
  };
}
