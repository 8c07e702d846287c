import { delegatedContext, readDelegation } from '../../access/delegation.ts';
import type { Scope } from '../../access/scopes.ts';
import type { Deps } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { ScheduledTaskRunRow } from '../../db/schema/index.ts';
import type { JobContext } from '../../jobs/definition.ts';
import { errorText } from '../../jobs/queue.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { AGENT_DELETED_REASON, chatWithAgent, existingAgentId, OWNER } from '../agents/index.ts';
import { deliverToAgentChannels } from '../channels/index.ts';
import { availableCredits } from '../credits/index.ts';
import { emitEvent } from '../webhooks/index.ts';
import { nextRun } from './cron.ts';
import { enqueueTaskJob, TASK_RUN_RETRY } from './jobs.ts';
import * as repo from './repo.ts';

/**
 * How scheduled tasks run (docs/scheduled-tasks.md): a dispatcher each minute claims the due tasks (SKIP LOCKED)
 * and records one run per occurrence with its job, missed occurrences collapsing into one. A run is tried again
 * only on a passing fault before anything was charged (TASK_RUN_RETRY), so it is never charged twice; its answer
 * is stored and pushed to the agent's linked channels once, keyed by the run.
 */

/** Tasks claimed per dispatch transaction; the dispatcher loops until none are due. */
const DISPATCH_BATCH = 100;
const TRANSIENT_STATUSES = new Set([429, 502, 503, 504]);
/**
 * What a run acts with, cut to what the task's writer held: `agents-all`, which writing a task needs, so rows
 * kept before the scopes were stored read as that (and, knowing nothing else, with no knowledge base).
 */
const RUN_SCOPES: readonly Scope[] = ['agents-all'];
export const INTERRUPTED_ERROR =
  'The run was interrupted (the service stopped while it ran); it is not retried, so nothing is charged twice';

/** Dispatches every task due at `now`; answers how many runs were queued. */
export async function dispatchDueTasks(deps: Pick<Deps, 'database' | 'log'>, now = new Date()): Promise<number> {
  let queued = 0;
  for (;;) {
    const claimed = await deps.database.db.transaction(async (tx) => {
      const due = await repo.lockDueTasks(tx, now, DISPATCH_BATCH);
      for (const task of due) {
        const slot = task.nextRunAt ?? now;
        const run = await repo.insertRun(tx, {
          id: newId('scheduledTaskRun'),
          taskId: task.id,
          accountId: task.accountId,
          trigger: 'schedule',
          scheduledFor: slot,
        });
        if (run) {
          await enqueueTaskJob(
            tx,
            'tasks.run',
            { runId: run.id },
            { accountId: task.accountId, dedupeKey: `tasks.run:${run.id}` },
          );
          queued++;
        }
        await repo.setNextRun(tx, task.id, nextRun(task.cronExpression, task.timezone, now));
      }
      return due.length;
    });
    if (claimed < DISPATCH_BATCH) break;
  }
  if (queued) deps.log.info({ queued }, 'scheduled task runs queued');
  return queued;
}

/** Ends the run as failed with `error` (when it is still `from`); answers the outcome for the job's record. */
async function fail(
  deps: Deps,
  run: ScheduledTaskRunRow,
  error: string,
  extra: Partial<ScheduledTaskRunRow> = {},
): Promise<{ status: 'failed'; error: string }> {
  await deps.database.db.transaction(async (tx) => {
    const done = await repo.updateRun(tx, run.id, ['running', 'queued', 'retrying'], {
      status: 'failed',
      error,
      finishedAt: new Date(),
      ...extra,
    });
    if (done) await emitRunFinished(tx, done);
  });
  return { status: 'failed', error };
}

/** The most characters of a run's answer a `task_run.finished` webhook carries (the run keeps it whole). */
const WEBHOOK_OUTPUT_CHARS = 4000;

/** Tells the account's webhooks a run ended (`task_run.finished`), in the transaction that ended it. */
function emitRunFinished(tx: Executor, run: ScheduledTaskRunRow): Promise<number> {
  const output = run.output ?? null;
  return emitEvent(tx, run.accountId, 'task_run.finished', {
    runId: run.id,
    taskId: run.taskId,
    trigger: run.trigger,
    status: run.status,
    error: run.error,
    output: output && output.length > WEBHOOK_OUTPUT_CHARS ? output.slice(0, WEBHOOK_OUTPUT_CHARS) : output,
    outputTruncated: (output?.length ?? 0) > WEBHOOK_OUTPUT_CHARS,
    creditsConsumed: run.creditsConsumed,
    conversationId: run.conversationId,
    scheduledFor: run.scheduledFor.toISOString(),
    finishedAt: run.finishedAt?.toISOString() ?? null,
  });
}

/** Runs one recorded occurrence (the `tasks.run` job). */
export async function executeTaskRun(deps: Deps, runId: string, job: JobContext): Promise<unknown> {
  const db = deps.database.db;
  const found = await repo.findRun(db, runId);
  if (!found) return { skipped: 'run deleted' };
  if (found.status === 'running') return fail(deps, found, INTERRUPTED_ERROR);
  const run = await repo.startRun(db, runId, new Date());
  if (!run) return { skipped: `run already ${found.status}` };

  const task = await repo.findTaskById(db, run.taskId);
  if (!task) return fail(deps, run, 'The task was deleted');
  if (!task.enabled) return fail(deps, run, task.disabledReason ?? 'The task was disabled before it ran');
  if (!(await existingAgentId({ db, accountId: task.accountId }, task.agentId))) {
    await repo.disableTasksOfAgent(db, task.accountId, task.agentId, AGENT_DELETED_REASON);
    return fail(deps, run, AGENT_DELETED_REASON);
  }
  const balance = (await availableCredits(deps, task.accountId)) ?? 0;
  if (balance <= 0) return fail(deps, run, 'The account has no credits left');

  const ctx = delegatedContext(
    deps,
    task.accountId,
    job.log,
    readDelegation(task.runAs, RUN_SCOPES),
    RUN_SCOPES,
    balance,
  );
  let consumed = 0;
  let conversationId: string | null = null;
  try {
    const outcome = await chatWithAgent(
      ctx,
      task.agentId,
      { messages: [{ role: 'user', content: task.prompt }] },
      {
        signal: job.signal,
        endUserId: OWNER,
        billing: { type: 'task', description: `Task ${task.name}` },
        via: 'task',
        onConversation: async (id) => {
          conversationId = id;
          await repo.updateRun(db, run.id, ['running'], { conversationId: id });
        },
        onCharge: (credits) => {
          consumed += credits;
        },
      },
    );
    if (outcome.limited) {
      return fail(deps, run, `A usage limit of the agent stopped the run: ${outcome.content}`, {
        creditsConsumed: outcome.credits.consumed,
        conversationId: outcome.conversationId,
      });
    }
    const pushed = await db.transaction(async (tx) => {
      const done = await repo.updateRun(tx, run.id, ['running'], {
        status: 'succeeded',
        output: outcome.content,
        creditsConsumed: outcome.credits.consumed,
        conversationId: outcome.conversationId,
        finishedAt: new Date(),
      });
      if (!done) return 0;
      await emitRunFinished(tx, done);
      const push = await deliverToAgentChannels({ db: tx, accountId: task.accountId }, task.agentId, outcome.content, {
        key: run.id,
      });
      return push.queued;
    });
    return { status: 'succeeded', creditsConsumed: outcome.credits.consumed, pushed };
  } catch (err) {
    const transient = err instanceof AppError && TRANSIENT_STATUSES.has(err.statusCode);
    if (transient && consumed === 0 && run.attempts < TASK_RUN_RETRY.maxAttempts && !job.signal.aborted) {
      await repo.updateRun(db, run.id, ['running'], { status: 'retrying', error: errorText(err), conversationId });
      throw err;
    }
    return fail(deps, run, errorText(err), { creditsConsumed: consumed, conversationId });
  }
}
