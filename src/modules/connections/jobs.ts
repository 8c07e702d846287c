import { z } from 'zod';
import type { Deps } from '../../context.ts';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { connectionsChanged } from './active-cache.ts';
import { connectionEvent } from './events.ts';
import * as repo from './repo.ts';
import { refreshConnectionRow } from './tokens.ts';

/**
 * Background work of the connections area. Tokens are also refreshed on use (and by
 * `PUT /connections/:id/refresh`), which is enough for correctness: the recurring job keeps idle connections
 * fresh and their status truthful.
 */

export interface RefreshSweepResult {
  /** Connections whose token was refreshed. */
  refreshed: number;
  /** Connections whose refresh failed (their status now says why). */
  failed: number;
  /** Active connections that expired and cannot be refreshed, now `expired`. */
  expired: number;
  /** Finished or abandoned authorizations removed. */
  swept: number;
}

const DEFAULT_LOOK_AHEAD_MS = 10 * 60 * 1000;
const KEEP_AUTHORIZATIONS_MS = 24 * 3600 * 1000;

/**
 * Refreshes the tokens that expire within `lookAheadMs`, each under its row lock (several workers may run
 * this at once: a row refreshed by one is skipped by the others); marks `expired` the active connections
 * whose token expired without a way to refresh it; deletes authorization states and pending connections a
 * day past their expiry.
 */
export async function refreshExpiringConnections(
  deps: Deps,
  opts: { lookAheadMs?: number; limit?: number; now?: Date } = {},
): Promise<RefreshSweepResult> {
  const now = opts.now ?? new Date();
  const db = deps.database.db;
  const due = await repo.listRefreshDue(
    db,
    new Date(now.getTime() + (opts.lookAheadMs ?? DEFAULT_LOOK_AHEAD_MS)),
    opts.limit ?? 200,
  );
  let refreshed = 0;
  let failed = 0;
  for (const row of due) {
    try {
      const after = await refreshConnectionRow(deps, row.accountId, row.id, {
        force: true,
        unlessTokenChangedFrom: row.accessTokenEnc,
      });
      if (after.accessTokenEnc !== row.accessTokenEnc) refreshed++;
      else if (after.status !== 'active' || after.refreshFailures > row.refreshFailures) failed++;
    } catch (err) {
      failed++;
      deps.log.warn({ err, connectionId: row.id }, 'scheduled token refresh failed');
    }
  }
  const expired = await db.transaction(async (tx) => {
    const rows = await repo.expireUnrefreshable(tx, now);
    for (const row of rows) {
      await connectionEvent(deps, tx, {
        before: { status: 'active' },
        after: row,
        event: 'expired',
        error: 'The token expired and cannot be refreshed; reconnect it',
      });
    }
    return rows.length;
  });
  if (expired) connectionsChanged(deps, undefined);
  const swept = await repo.sweepExpiredAuthorizations(db, new Date(now.getTime() - KEEP_AUTHORIZATIONS_MS));
  return { refreshed, failed, expired, swept };
}

export const connectionJobs = {
  /** Every 5 minutes: tokens expiring within 10 minutes are refreshed before anyone waits for them. */
  'connections.refresh-expiring': defineJob({
    payload: z.object({}),
    schedule: { cron: '*/5 * * * *' },
    // The next slot is the retry; a run cut short leaves each connection as it was (row locks).
    retry: { maxAttempts: 1 },
    run: (deps) => refreshExpiringConnections(deps),
  }),
} satisfies JobCatalog;
