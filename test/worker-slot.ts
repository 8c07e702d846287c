/**
 * The database of worker slot `poolId` (`VITEST_POOL_ID`: vitest numbers its workers 1 to `maxWorkers`; unset: 1)
 * among `urls`, the run's PostgreSQL databases, one a slot (test/global-setup.ts): slots running side by side never
 * share one. A slot with no database of its own is refused rather than given another's. Apart from
 * test/test-database.ts, which reads the run's databases with vitest's `inject`, so a database-free test can pin it.
 */
export function workerSlotDatabaseUrl(urls: readonly string[], poolId = process.env.VITEST_POOL_ID): string {
  if (urls.length === 0) throw new Error('The test run prepared no PostgreSQL database');
  const slot = Number(poolId ?? '1');
  const url = urls[slot - 1];
  if (!url) throw new Error(`Worker slot ${poolId} has no PostgreSQL database: the run prepared ${urls.length}`);
  return url;
}
