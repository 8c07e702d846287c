import { type SQL, sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { openTestDatabase, type TestDatabase } from '../../test/harness.ts';
import { namedStatement } from './named.ts';
import { rowsOf } from './rows.ts';

/**
 * A named statement (the batch writers' functions: conversation log, credit leases) answers what the same SQL run
 * through `db.execute` does, with each call's own values; on PostgreSQL the connection keeps it prepared under its
 * name, so later calls send only their parameters.
 */
describe('namedStatement', () => {
  let testDb: TestDatabase | undefined;
  afterAll(() => testDb?.close());

  const echo = namedStatement<'n' | 'word', { n: number; word: string }>(
    'test_named_echo',
    (p: (key: 'n' | 'word') => SQL) => sql`SELECT ${p('n')}::int + 1 AS n, upper(${p('word')}::text) AS word`,
  );

  it('answers the rows of each call, with its own values, as execute would', async () => {
    testDb = await openTestDatabase({ shared: true });
    const { db, driver } = testDb.database;
    expect(await echo(db, { n: 1, word: 'one' })).toEqual([{ n: 2, word: 'ONE' }]);
    expect(await echo(db, { n: 41, word: 'two' })).toEqual([{ n: 42, word: 'TWO' }]);
    const prepared = await db.transaction(async (tx) => {
      // One connection for the transaction: the statement is prepared on it, under its name, once.
      expect(await echo(tx, { n: 2, word: 'in' })).toEqual([{ n: 3, word: 'IN' }]);
      expect(await echo(tx, { n: 3, word: 'again' })).toEqual([{ n: 4, word: 'AGAIN' }]);
      const rows = await tx.execute(sql`SELECT name FROM pg_prepared_statements WHERE name = 'test_named_echo'`);
      return rowsOf<{ name: string }>(rows).map((r) => r.name);
    });
    // PGlite runs it unnamed, as execute does.
    expect(prepared).toEqual(driver === 'pg' ? ['test_named_echo'] : []);
  });

  it('refuses a second statement of a name already taken', () => {
    expect(() => namedStatement('test_named_echo', () => sql`SELECT 1`)).toThrow(
      'A named statement test_named_echo exists already',
    );
  });
});
