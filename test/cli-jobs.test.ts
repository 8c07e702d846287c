import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueJob } from '../src/composition.ts';
import type { Database } from '../src/db/client.ts';
import { jobs } from '../src/db/schema/index.ts';
import { openTestDatabase, TEST_ENCRYPTION_KEYS, type TestDatabase } from './harness.ts';

const run = promisify(execFile);

/** `switchboard jobs list` and `jobs retry`, as an operator runs them, over a database of this file's own. */
describe('switchboard jobs', () => {
  let testDb: TestDatabase;
  const ids: Record<string, string> = {};

  const cli = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await run(process.execPath, ['bin/switchboard.js', ...args], {
        env: {
          ...process.env,
          ...testDb.env,
          ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS,
          BASE_URL: 'http://localhost:8080',
          LOG_LEVEL: 'error',
        },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };
  /** The test uses the database, then hands it back to the commands it runs. */
  const withDb = async <T>(fn: (db: Database) => Promise<T>): Promise<T> => {
    try {
      return await fn(await testDb.open());
    } finally {
      await testDb.handOver();
    }
  };

  beforeAll(async () => {
    testDb = await openTestDatabase({ privateDatabase: true });
    await withDb(async ({ db }) => {
      const later = new Date(Date.now() + 3600_000);
      ids.queued = (await enqueueJob(db, 'connections.refresh-expiring', {}, { runAt: later })) ?? '';
      ids.dead = (await enqueueJob(db, 'credits.release-expired-holds', {})) ?? '';
      await db
        .update(jobs)
        .set({
          status: 'dead',
          attempts: 1,
          lastError: 'Error: the database\nwas away',
          finishedAt: sql`now()`,
          createdAt: sql`now() - interval '1 minute'`,
        })
        .where(eq(jobs.id, ids.dead));
    });
  });
  afterAll(() => testDb?.close());

  it('lists jobs newest first, filtered by status and type, as a table or JSON lines', async () => {
    const table = await cli('jobs', 'list');
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TYPE\s+STATUS\s+ATTEMPTS\s+RUN AT \/ FINISHED\s+LAST ERROR$/);
    expect(lines.slice(1).map((l) => l.split(/\s{2,}/).slice(0, 4))).toEqual([
      [ids.queued, 'connections.refresh-expiring', 'queued', '0/1'],
      [ids.dead, 'credits.release-expired-holds', 'dead', '1/1'],
    ]);
    expect(lines[2]).toMatch(/Error: the database was away$/);

    const dead = await cli('jobs', 'list', '--status', 'dead', '--json');
    expect(dead.code).toBe(0);
    const parsed = dead.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(parsed).toEqual([
      {
        id: ids.dead,
        type: 'credits.release-expired-holds',
        status: 'dead',
        attempts: 1,
        maxAttempts: 1,
        runAt: expect.any(String),
        lastError: 'Error: the database\nwas away',
        accountId: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        finishedAt: expect.any(String),
      },
    ]);
    const byType = await cli('jobs', 'list', '--type', 'connections.refresh-expiring,nope', '--json');
    expect(
      byType.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).id),
    ).toEqual([ids.queued]);
    const none = await cli('jobs', 'list', '--status', 'running');
    expect(none).toMatchObject({ code: 0, stdout: '', stderr: 'No jobs match.\n' });
  }, 60_000);

  it('refuses bad input with exit code 2', async () => {
    const badStatus = await cli('jobs', 'list', '--status', 'dead,broken');
    expect(badStatus.code).toBe(2);
    expect(badStatus.stderr).toContain('--status: unknown status broken (queued, running, succeeded, dead)');
    const badLimit = await cli('jobs', 'list', '--limit', '0');
    expect(badLimit.code).toBe(2);
    expect(badLimit.stderr).toContain('--limit must be an integer from 1 to 1000');
    const noId = await cli('jobs', 'retry');
    expect(noId.code).toBe(2);
    expect(noId.stderr).toContain('Missing ID');
    const extra = await cli('jobs', 'retry', 'job_a', 'job_b');
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain('Unexpected argument: job_b');
    const help = await cli('jobs', 'retry', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: switchboard jobs retry ID');
    expect((await cli('--help')).stdout).toMatch(/jobs list .*\n\s+jobs retry /);
  }, 60_000);

  it('retries a dead job: queued again, due now, with fresh attempts; anything else is refused', async () => {
    const retried = await cli('jobs', 'retry', ids.dead ?? '');
    expect(retried).toMatchObject({
      code: 0,
      stdout: `Queued credits.release-expired-holds job ${ids.dead} again; a running instance picks it up within JOBS_POLL_INTERVAL_MS.\n`,
    });
    const row = await withDb(
      async ({ db }) =>
        (
          await db
            .select()
            .from(jobs)
            .where(eq(jobs.id, ids.dead ?? ''))
        )[0],
    );
    expect(row).toMatchObject({ status: 'queued', attempts: 0, finishedAt: null });
    expect(row?.runAt.getTime()).toBeLessThanOrEqual(Date.now() + 1000);

    const again = await cli('jobs', 'retry', ids.dead ?? '');
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`Job ${ids.dead} is queued; only a dead job can be retried\n`);
    const missing = await cli('jobs', 'retry', 'job_nope');
    expect(missing).toMatchObject({ code: 1, stderr: 'Job job_nope not found\n' });
  }, 60_000);
});
