/**
 * The database of worker slot `poolId` (`VITEST_POOL_ID`, from 1; unset: 1) among `urls`, the run's PostgreSQL
 * databases, one a slot (test/global-setup.ts): slots running side by side never share one. Apart from
 * test/test-database.ts, which reads the run's databases with vitest's `inject`, so a database-free test can pin it.
 */
export function workerSlotDatabaseUrl(urls: readonly string[], poolId = process.env.VITEST_POOL_ID): string {
  const slot = Number(poolId ?? '1');
  const url = urls[(slot - 1) % urls.length];
  if (!url) throw new Error('The test run prepared no PostgreSQL database');
  return url;
}
