import { and, eq } from 'drizzle-orm';
import pino from 'pino';
import { jobs } from '../src/db/schema/index.ts';
import type { App } from '../src/http/types.ts';
import type { JobCatalog } from '../src/jobs/definition.ts';
import type { Logger } from '../src/lib/logger.ts';

const silent = pino({ level: 'silent' });

/**
 * Runs the queued jobs of one type (of one account, when given) as a worker would, for tests that keep the worker
 * off: each once, in order, marked succeeded after; answers the handlers' results. A handler that throws stops
 * here with its job still queued (a worker would retry it).
 */
export async function runQueuedJobs<C extends JobCatalog>(
  app: App,
  catalog: C,
  type: keyof C & string,
  opts: { accountId?: string; log?: Logger } = {},
): Promise<unknown[]> {
  const db = app.deps.database.db;
  const def = catalog[type];
  if (!def) throw new Error(`No job type ${type} in this catalog`);
  const queued = await db
    .select()
    .from(jobs)
    .where(
      and(
        eq(jobs.type, type),
        eq(jobs.status, 'queued'),
        opts.accountId === undefined ? undefined : eq(jobs.accountId, opts.accountId),
      ),
    )
    .orderBy(jobs.createdAt);
  const results: unknown[] = [];
  for (const job of queued) {
    results.push(
      await def.run(app.deps, def.payload.parse(job.payload), {
        jobId: job.id,
        attempt: 1,
        signal: new AbortController().signal,
        log: opts.log ?? silent,
      }),
    );
    await db.update(jobs).set({ status: 'succeeded' }).where(eq(jobs.id, job.id));
  }
  return results;
}
