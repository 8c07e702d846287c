import { and, count, desc, eq, gte, lt, lte, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { byKey } from '../../db/lookup.ts';
import { namedStatement } from '../../db/named.ts';
import { type ActivityRow, activity, authClients, personalAccessTokens } from '../../db/schema/index.ts';
import { storable } from '../../lib/text.ts';

/** All SQL of the activity log. */

export type NewActivityRow = typeof activity.$inferInsert;

/**
 * The activity writer's batch, one named statement whatever its size (drizzle built a multi-row insert at every
 * batch: about 0.1 ms of the service's CPU for two rows). Text no column can hold (NUL, an unpaired surrogate) is
 * stored as U+FFFD.
 */
const insertBatch = namedStatement(
  'activity_insert_batch',
  (p: (key: 'rows') => SQL) => sql`
    INSERT INTO activity (id, account_id, kind, via, actor_kind, token_id, client_id, agent_id, agent_name,
      connection_id, provider_id, tool, mode, status, duration_ms, credits, args_summary, result_summary, error,
      created_at)
    SELECT x.id, x."accountId", x.kind, x.via, x."actorKind", x."tokenId", x."clientId", x."agentId", x."agentName",
      x."connectionId", x."providerId", x.tool, x.mode, x.status, x."durationMs", COALESCE(x.credits, 0),
      x."argsSummary", x."resultSummary", x.error, COALESCE(x."createdAt", now())
    FROM jsonb_to_recordset(${p('rows')}::jsonb) AS x(
      id text, "accountId" text, kind text, via text, "actorKind" text, "tokenId" text, "clientId" text,
      "agentId" text, "agentName" text, "connectionId" text, "providerId" text, tool text, mode text, status text,
      "durationMs" int, credits bigint, "argsSummary" text, "resultSummary" text, error text,
      "createdAt" timestamptz)`,
);

export async function insertMany(db: Executor, rows: NewActivityRow[]): Promise<void> {
  if (rows.length) await insertBatch(db, { rows: JSON.stringify(storable(rows)) });
}

export interface ActivityFilter {
  connectionId?: string | undefined;
  tool?: string | undefined;
  agentId?: string | undefined;
  status?: string | undefined;
  kind?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
}

/** A row with the name of the PAT or OAuth app that acted, when it still exists. */
export type ActivityWithActor = ActivityRow & { patName: string | null; clientName: string | null };

function where(accountId: string, f: ActivityFilter): SQL | undefined {
  return and(
    eq(activity.accountId, accountId),
    f.connectionId ? eq(activity.connectionId, f.connectionId) : undefined,
    f.tool ? eq(activity.tool, f.tool) : undefined,
    f.agentId ? eq(activity.agentId, f.agentId) : undefined,
    f.status ? eq(activity.status, f.status) : undefined,
    f.kind ? eq(activity.kind, f.kind) : undefined,
    f.from ? gte(activity.createdAt, f.from) : undefined,
    f.to ? lte(activity.createdAt, f.to) : undefined,
  );
}

const selection = {
  row: activity,
  patName: personalAccessTokens.name,
  clientName: authClients.name,
};

function withNames(r: { row: ActivityRow; patName: string | null; clientName: string | null }): ActivityWithActor {
  return { ...r.row, patName: r.patName, clientName: r.clientName };
}

export async function list(
  db: Executor,
  accountId: string,
  filter: ActivityFilter,
  page: { limit: number; offset: number },
): Promise<{ rows: ActivityWithActor[]; total: number }> {
  const cond = where(accountId, filter);
  const [rows, totals] = await Promise.all([
    db
      .select(selection)
      .from(activity)
      .leftJoin(
        personalAccessTokens,
        and(eq(personalAccessTokens.id, activity.tokenId), eq(personalAccessTokens.accountId, activity.accountId)),
      )
      .leftJoin(authClients, eq(authClients.id, activity.clientId))
      .where(cond)
      .orderBy(desc(activity.createdAt), desc(activity.id))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ n: count() }).from(activity).where(cond),
  ]);
  return { rows: rows.map(withNames), total: totals[0]?.n ?? 0 };
}

export async function findById(db: Executor, accountId: string, id: string): Promise<ActivityWithActor | undefined> {
  const [r] = await db
    .select(selection)
    .from(activity)
    .leftJoin(
      personalAccessTokens,
      and(eq(personalAccessTokens.id, activity.tokenId), eq(personalAccessTokens.accountId, activity.accountId)),
    )
    .leftJoin(authClients, eq(authClients.id, activity.clientId))
    .where(and(eq(activity.accountId, accountId), eq(activity.id, id)))
    .limit(1);
  return r ? withNames(r) : undefined;
}

/** Deletes rows created before `before`, `batch` a statement so no statement holds a long lock; answers how many. */
export async function deleteBefore(db: Executor, before: Date, batch = 5000): Promise<number> {
  let deleted = 0;
  for (;;) {
    const old = db.select({ id: activity.id }).from(activity).where(lt(activity.createdAt, before)).limit(batch);
    const gone = await db.delete(activity).where(byKey(activity.id, old)).returning({ id: activity.id });
    deleted += gone.length;
    if (gone.length < batch) return deleted;
  }
}
