import { type BaseDeps, type Deps, requireScope, type ServiceContext } from '../../context.ts';
import type { ActivityEntry } from '../../lib/activity.ts';
import { NotFoundError } from '../../lib/errors.ts';
import { GROUP_COMMIT_WINDOW_MS, GroupCommit } from '../../lib/group-commit.ts';
import { newId } from '../../lib/ids.ts';
import { offsetOf, type Page, toPage } from '../../lib/pagination.ts';
import { REDACTED, redactSecrets } from '../../lib/redact.ts';
import * as repo from './repo.ts';
import type { Activity, ActivityQuery } from './schema.ts';

/**
 * The activity log: what was done on an account's behalf (tool calls, agent runs, connection events). Writes
 * are queued and written in batches (a group commit) so a tool call never waits for its row; every queued row
 * is tracked by `deps.background`, so shutdown drains it, and a row that cannot be written after retries is
 * logged as lost, never dropped silently.
 */

/** The longest stored summary of a call's arguments or result, and of an error. */
export const SUMMARY_LIMIT = 500;
export const ERROR_LIMIT = 1000;

export type { ActivityEntry, ActivitySource, ActivityStatus, ActivityVia } from '../../lib/activity.ts';

const SECRET_KEY = /token|secret|password|passwd|api[-_]?key|authorization|cookie|credential|private[-_]?key/i;

/** Values under keys that name a credential are replaced whatever they look like; the rest is pattern-redacted. */
function withoutSecretKeys(value: unknown, depth = 0): unknown {
  if (depth > 8) return '…';
  if (Array.isArray(value)) return value.slice(0, 20).map((v) => withoutSecretKeys(v, depth + 1));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .slice(0, 50)
        .map(([k, v]) => [k, SECRET_KEY.test(k) ? REDACTED : withoutSecretKeys(v, depth + 1)]),
    );
  }
  if (typeof value === 'string' && value.length > SUMMARY_LIMIT) return value.slice(0, SUMMARY_LIMIT);
  return value;
}

/** A short, redacted summary of a value: JSON, credentials removed, at most `limit` characters. */
export function summarize(value: unknown, limit = SUMMARY_LIMIT): string | null {
  if (value === undefined) return null;
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(withoutSecretKeys(value)) ?? '');
  } catch {
    text = String(value);
  }
  // Redacted before the final cut (a token cut short may no longer look like one), on a bounded prefix.
  text = redactSecrets(text.length > limit * 4 ? text.slice(0, limit * 4) : text);
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

declare module '../../context.ts' {
  interface AreaState {
    /** The app's queue of activity rows, written in batches; its writes are tracked by `background`. */
    activityWriter: GroupCommit<repo.NewActivityRow>;
  }
}

/** The app's activity writer (`deps.areas.activityWriter`), made once with `Deps`. */
export function createActivityWriter(deps: BaseDeps): GroupCommit<repo.NewActivityRow> {
  return new GroupCommit<repo.NewActivityRow>({
    what: 'activity log',
    write: (rows) => repo.insertMany(deps.database.db, rows),
    windowMs: GROUP_COMMIT_WINDOW_MS[deps.database.driver],
    max: 500,
    log: deps.log,
    background: deps.background,
  });
}

/** Queues one row for the caller's account; resolves once written (true) or given up and logged (false). */
export function recordActivity(ctx: ServiceContext, entry: ActivityEntry): Promise<boolean> {
  return queue(ctx.deps, ctx.accountId, {
    actorKind: ctx.actor.kind,
    tokenId: ctx.actor.kind === 'pat' || ctx.actor.kind === 'oauth' ? ctx.actor.tokenId : null,
    clientId: ctx.actor.clientId ?? null,
    entry,
  });
}

export type ConnectionEvent = 'created' | 'refreshed' | 'expired' | 'error' | 'revoked';

/**
 * Queues a connection event (work no request carries, such as the refresh job, is recorded as `system`): a
 * failed refresh and a token the provider refused carry the error, `created` and `refreshed` are `ok`.
 */
export function recordConnectionEvent(
  deps: Deps,
  accountId: string,
  e: { connectionId: string; providerId: string; event: ConnectionEvent; error?: string | null | undefined },
  ctx?: ServiceContext,
): Promise<boolean> {
  const entry: ActivityEntry = {
    kind: 'connection',
    via: ctx ? 'api' : 'system',
    status: e.error ? 'error' : 'ok',
    tool: e.event,
    connectionId: e.connectionId,
    providerId: e.providerId,
    ...(e.error ? { error: e.error } : {}),
  };
  if (ctx) return recordActivity(ctx, entry);
  return queue(deps, accountId, { actorKind: 'system', tokenId: null, clientId: null, entry });
}

function queue(
  deps: Deps,
  accountId: string,
  who: { actorKind: string; tokenId: string | null; clientId: string | null; entry: ActivityEntry },
): Promise<boolean> {
  const { entry } = who;
  return deps.areas.activityWriter.add({
    id: newId('activity'),
    accountId,
    kind: entry.kind,
    via: entry.via,
    actorKind: who.actorKind,
    tokenId: who.tokenId,
    clientId: who.clientId,
    agentId: entry.agentId ?? null,
    agentName: entry.agentName ?? null,
    connectionId: entry.connectionId ?? null,
    providerId: entry.providerId ?? null,
    tool: entry.tool ?? null,
    mode: entry.mode ?? null,
    status: entry.status,
    durationMs: entry.durationMs === undefined ? null : Math.max(0, Math.round(entry.durationMs)),
    credits: Math.max(0, Math.round(entry.credits ?? 0)),
    argsSummary: summarize(entry.args),
    resultSummary: entry.status === 'ok' ? summarize(entry.result) : null,
    error: entry.error === undefined ? null : summarize(entry.error, ERROR_LIMIT),
    createdAt: new Date(),
  });
}

/** Writes every queued row now (tests, and before a read that must see this instance's own rows). */
export async function flushActivity(deps: Deps): Promise<void> {
  await deps.areas.activityWriter.flush();
}

/** Who acted, as a user reads it: the agent, else the OAuth app or PAT by name, else the kind of caller. */
function actorName(row: repo.ActivityWithActor): string {
  if (row.agentName) return `Agent ${row.agentName}`;
  if (row.clientName) return row.clientName;
  if (row.patName) return `Token ${row.patName}`;
  if (row.actorKind === 'session') return 'You (signed in)';
  if (row.actorKind === 'system') return 'Switchboard';
  return row.actorKind;
}

function toActivity(row: repo.ActivityWithActor): Activity {
  return {
    id: row.id,
    kind: row.kind as Activity['kind'],
    via: row.via,
    actor: { kind: row.actorKind, name: actorName(row), tokenId: row.tokenId, clientId: row.clientId },
    agentId: row.agentId,
    agentName: row.agentName,
    connectionId: row.connectionId,
    providerId: row.providerId,
    tool: row.tool,
    mode: row.mode as Activity['mode'],
    status: row.status as Activity['status'],
    durationMs: row.durationMs,
    credits: row.credits,
    arguments: row.argsSummary,
    result: row.resultSummary,
    error: row.error,
    createdAt: row.createdAt.toISOString(),
  };
}

/** `GET /activity`: newest first, the account's own rows only, filtered; this instance's queued rows included. */
export async function listActivity(ctx: ServiceContext, q: ActivityQuery): Promise<Page<Activity>> {
  requireScope(ctx, 'account');
  await flushActivity(ctx.deps);
  const { rows, total } = await repo.list(
    ctx.db,
    ctx.accountId,
    {
      connectionId: q.connectionId,
      tool: q.tool,
      agentId: q.agentId,
      status: q.status,
      kind: q.kind,
      from: q.from ? new Date(q.from) : undefined,
      to: q.to ? new Date(q.to) : undefined,
    },
    { limit: q.limit, offset: offsetOf(q) },
  );
  return toPage(rows.map(toActivity), total, q);
}

/** `GET /activity/:activityId`: 404 for an id that is not the account's. */
export async function getActivity(ctx: ServiceContext, id: string): Promise<Activity> {
  requireScope(ctx, 'account');
  await flushActivity(ctx.deps);
  const row = await repo.findById(ctx.db, ctx.accountId, id);
  if (!row) throw new NotFoundError(`Activity ${id} not found`);
  return toActivity(row);
}

/** The `activity.purge` job: deletes rows older than ACTIVITY_RETENTION_DAYS. */
export async function purgeActivity(deps: Deps, now = new Date()): Promise<{ deleted: number }> {
  const before = new Date(now.getTime() - deps.config.jobs.activityRetentionDays * 86_400_000);
  return { deleted: await repo.deleteBefore(deps.database.db, before) };
}
