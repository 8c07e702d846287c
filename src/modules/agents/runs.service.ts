import type { Deps } from '../../context.ts';
import type { Logger } from '../../lib/logger.ts';
import { writeFailedTurns } from './events.service.ts';
import * as repo from './repo.ts';

/**
 * Turns in flight and the ones whose instance died. A chat turn writes a lease row (`conversation_runs`) with its
 * user message and renews it every third of AGENT_RUN_LEASE_MS while the run lives, however long the model
 * takes; the row goes in the same statement as the answer or the failure. A row whose lease ran out (database
 * time) belongs to an instance that stopped (crash, SIGKILL, lost machine): the sweep, run by every instance at
 * start-up and by the recurring job `agents.fail-orphaned-runs`, takes it and stores the turn's failure the
 * way a run that fails on its own does (events.service `failureOps`): a marker message and `run.failed` on the
 * conversation's events. However many instances sweep, each turn is failed once (`takeExpiredRuns`).
 */

/** The error of a turn whose instance stopped before it answered. */
export const INTERRUPTED_RUN_ERROR = 'The agent stopped before it answered (the server running it went away).';

/** Turns failed per transaction of a sweep. */
const SWEEP_BATCH = 100;

/**
 * Marks failed every turn whose lease ran out (by `at`, default the database's now: tests look ahead); answers
 * how many. Each batch is one transaction: the lease rows are taken (deleted) and the failures written together,
 * so a turn is failed once or not at all.
 */
export async function failOrphanedRuns(deps: Pick<Deps, 'database'>, at?: Date): Promise<number> {
  let failed = 0;
  for (;;) {
    const taken = await deps.database.db.transaction(async (tx) => {
      const turns = await repo.takeExpiredRuns(tx, SWEEP_BATCH, at);
      await writeFailedTurns(tx, turns, INTERRUPTED_RUN_ERROR);
      return turns.length;
    });
    failed += taken;
    if (taken < SWEEP_BATCH) return failed;
  }
}

export interface RunLease {
  /** Stops renewing (the turn ended; its row goes with its answer or failure). */
  stop(): void;
}

/**
 * Renews a turn's lease every third of `leaseMs` until stopped, the first time once its row is written. A renewal
 * that finds the row gone means the turn was already failed (this instance could not renew it for a whole lease,
 * and a sweep took it): `onLost` then stops the run, so a turn marked failed is never answered afterwards. A
 * renewal that fails (the database away) is retried at the next beat; the lease covers two more.
 */
export function holdRunLease(
  deps: Pick<Deps, 'database'>,
  run: { id: string; written: Promise<boolean> },
  leaseMs: number,
  log: Logger,
  onLost: () => void,
): RunLease {
  const every = Math.max(100, Math.floor(leaseMs / 3));
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const beat = async () => {
    try {
      const held = await repo.renewRunLease(deps.database.db, run.id, leaseMs);
      if (!held && !stopped) {
        log.warn({ runId: run.id }, 'agent run lease lost: the turn was marked failed; stopping the run');
        onLost();
        return;
      }
    } catch (err) {
      log.warn({ runId: run.id, error: (err as Error).message }, 'renewing an agent run lease failed');
    }
    schedule();
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => void beat(), every);
    // A lease never keeps a process alive: once the process is gone, so is the turn.
    timer.unref();
  };
  void run.written.then((ok) => {
    // Not written (the batch failed): there is no row to hold.
    if (ok) schedule();
  });
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
