import { and, eq } from 'drizzle-orm';
import type { TestHarness } from '../../../test/harness.ts';
import { runQueuedJobs } from '../../../test/jobs.ts';
import { buildApp } from '../../app.ts';
import { openDatabase } from '../../db/client.ts';
import { jobs } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';
import { channelJobs } from './jobs.ts';

/**
 * Runs the account's queued channel jobs as a worker would (tests keep the worker off), each once, and marks
 * them done; answers the handlers' results. A handler that throws leaves its job queued (the worker retries it).
 */
export function runChannelJobs(h: TestHarness, accountId: string, app: App = h.app): Promise<unknown[]> {
  return runQueuedJobs(app, channelJobs, 'channels.deliver', { accountId, ...(app === h.app ? {} : { log: app.log }) });
}

/** How many channel jobs the account has, whatever their state. */
export async function channelJobCount(h: TestHarness, accountId: string): Promise<number> {
  const rows = await h.database.db
    .select({ id: jobs.id })
    .from(jobs)
    .where(and(eq(jobs.type, 'channels.deliver'), eq(jobs.accountId, accountId)));
  return rows.length;
}

/**
 * Another instance of the service on the test database: on PostgreSQL with its own connection pool (as a second
 * process would have), on PGlite an app over the one embedded database. Close it after use.
 */
export async function secondInstance(h: TestHarness): Promise<{ app: App; close(): Promise<void> }> {
  if (!h.config.databaseUrl) {
    const app = await h.extraApp();
    return { app, close: async () => {} };
  }
  const database = await openDatabase({ databaseUrl: h.config.databaseUrl, dataDir: h.config.dataDir, poolMax: 5 });
  const app = await buildApp({ config: h.config, database, keyRing: h.keyRing, logger: false });
  await app.ready();
  return {
    app,
    async close() {
      await app.close();
      await database.close();
    },
  };
}
