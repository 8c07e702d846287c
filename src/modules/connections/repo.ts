import {
  and,
  asc,
  count,
  desc,
  eq,
  gt,
  gte,
  inArray,
  isNotNull,
  isNull,
  lt,
  lte,
  ne,
  notInArray,
  or,
  type SQL,
  sql,
} from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { Executor } from '../../db/client.ts';
import {
  authClients,
  type ConnectionRow,
  type ConnectionStatus,
  connections,
  type OAuthStateRow,
  oauthStates,
  type PendingConnectionRow,
  pendingConnections,
} from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';
import type { FilterCondition, FilterField } from './filter.ts';

/** All SQL of the connections area. Every function on tenant rows takes the account id and filters by it. */

// ---- filters: a whitelist of columns and of operator functions; values are always bound parameters ----

const FILTER_COLUMNS: Record<FilterField, PgColumn> = {
  status: connections.status,
  providerId: connections.providerId,
  createdAt: connections.createdAt,
  updatedAt: connections.updatedAt,
};

const COMPARE = { $eq: eq, $ne: ne, $gt: gt, $gte: gte, $lt: lt, $lte: lte } as const;

/** The WHERE fragment of parsed filter conditions (ANDed). */
export function connectionFilterSql(conditions: readonly FilterCondition[]): SQL | undefined {
  const parts = conditions.map((c): SQL => {
    const column = FILTER_COLUMNS[c.field];
    switch (c.op) {
      case '$in':
        return inArray(column, c.value);
      case '$nin':
        return notInArray(column, c.value);
      default:
        return COMPARE[c.op](column, c.value);
    }
  });
  return parts.length ? and(...parts) : undefined;
}

const SORT_COLUMNS = { createdAt: connections.createdAt, updatedAt: connections.updatedAt } as const;

export async function listConnections(
  db: Executor,
  accountId: string,
  conditions: readonly FilterCondition[],
  p: { page: number; limit: number; sortBy: keyof typeof SORT_COLUMNS; sortOrder: 'asc' | 'desc' },
): Promise<{ rows: ConnectionRow[]; total: number }> {
  const where = and(eq(connections.accountId, accountId), connectionFilterSql(conditions));
  const dir = p.sortOrder === 'asc' ? asc : desc;
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(connections)
      .where(where)
      .orderBy(dir(SORT_COLUMNS[p.sortBy]), dir(connections.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(connections).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

export async function findConnection(db: Executor, accountId: string, id: string): Promise<ConnectionRow | undefined> {
  const [row] = await db
    .select()
    .from(connections)
    .where(and(eq(connections.id, id), eq(connections.accountId, accountId)))
    .limit(1);
  return row;
}

/** The row, locked until the transaction ends (`SELECT ... FOR UPDATE`): the refresh's serialization point. */
export async function lockConnection(tx: Executor, accountId: string, id: string): Promise<ConnectionRow | undefined> {
  const [row] = await tx
    .select()
    .from(connections)
    .where(and(eq(connections.id, id), eq(connections.accountId, accountId)))
    .for('update')
    .limit(1);
  return row;
}

export async function listActiveConnections(
  db: Executor,
  accountId: string,
  providerId?: string,
): Promise<ConnectionRow[]> {
  return db
    .select()
    .from(connections)
    .where(
      and(
        eq(connections.accountId, accountId),
        eq(connections.status, 'active'),
        providerId === undefined ? undefined : eq(connections.providerId, providerId),
      ),
    )
    .orderBy(asc(connections.providerId), desc(connections.updatedAt), asc(connections.id));
}

/** Serializes connection writes of one account and provider until the transaction ends (create-or-update). */
export async function lockAccountProvider(tx: Executor, accountId: string, providerId: string): Promise<void> {
  await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`${accountId}/${providerId}`}, 0))`);
}

/** The connection a new authorization replaces: the same provider user, or with `anyUser` any of the provider. */
export async function findReplaceable(
  tx: Executor,
  accountId: string,
  providerId: string,
  providerUserId: string,
  anyUser: boolean,
): Promise<ConnectionRow | undefined> {
  const [row] = await tx
    .select()
    .from(connections)
    .where(
      and(
        eq(connections.accountId, accountId),
        eq(connections.providerId, providerId),
        anyUser ? undefined : eq(connections.providerUserId, providerUserId),
      ),
    )
    // The same provider user first, then the oldest.
    .orderBy(sql`${connections.providerUserId} = ${providerUserId} DESC`, asc(connections.createdAt))
    .limit(1);
  return row;
}

export async function insertConnection(db: Executor, row: typeof connections.$inferInsert): Promise<ConnectionRow> {
  const [created] = await db.insert(connections).values(row).returning();
  if (!created) throw new Error('insert returned no row');
  return created;
}

export type ConnectionPatch = Partial<
  Pick<
    ConnectionRow,
    | 'providerUserId'
    | 'scopes'
    | 'status'
    | 'expiresAt'
    | 'canRefresh'
    | 'metadata'
    | 'vars'
    | 'accessTokenEnc'
    | 'refreshTokenEnc'
    | 'refreshFailures'
    | 'lastError'
    | 'refreshedAt'
  >
>;

export async function updateConnection(
  db: Executor,
  accountId: string,
  id: string,
  patch: ConnectionPatch,
): Promise<ConnectionRow | undefined> {
  const [row] = await db
    .update(connections)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(connections.id, id), eq(connections.accountId, accountId)))
    .returning();
  return row;
}

/**
 * Applies the patch only while the row still holds the access token `ifToken` (sealed), that is while nobody
 * refreshed, reconnected or deleted it since it was read; undefined otherwise.
 */
export async function updateConnectionIfToken(
  db: Executor,
  accountId: string,
  id: string,
  ifToken: string,
  patch: ConnectionPatch,
): Promise<ConnectionRow | undefined> {
  const [row] = await db
    .update(connections)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(connections.id, id), eq(connections.accountId, accountId), eq(connections.accessTokenEnc, ifToken)))
    .returning();
  return row;
}

/**
 * Marks a connection whose token the provider refused, unless it changed meanwhile (another caller already
 * refreshed it: its new token deserves its own chance).
 */
export async function markTokenRefused(
  db: Executor,
  accountId: string,
  id: string,
  refusedTokenEnc: string,
  patch: { status: ConnectionStatus; canRefresh: boolean; lastError: string },
): Promise<ConnectionRow | undefined> {
  const [row] = await db
    .update(connections)
    .set({ ...patch, updatedAt: new Date() })
    .where(
      and(
        eq(connections.id, id),
        eq(connections.accountId, accountId),
        eq(connections.accessTokenEnc, refusedTokenEnc),
      ),
    )
    .returning();
  return row;
}

export async function deleteConnection(
  db: Executor,
  accountId: string,
  id: string,
): Promise<ConnectionRow | undefined> {
  const [row] = await db
    .delete(connections)
    .where(and(eq(connections.id, id), eq(connections.accountId, accountId)))
    .returning();
  return row;
}

/**
 * Connections of every account whose token expires before `before` and that a refresh may help: the one
 * query that spans accounts, for the recurring refresh job (each row is then refreshed under its own lock).
 */
export async function listRefreshDue(db: Executor, before: Date, limit: number): Promise<ConnectionRow[]> {
  return db
    .select()
    .from(connections)
    .where(
      and(
        eq(connections.canRefresh, true),
        isNotNull(connections.refreshTokenEnc),
        isNotNull(connections.expiresAt),
        lt(connections.expiresAt, before),
        inArray(connections.status, ['active', 'expired', 'error']),
      ),
    )
    .orderBy(asc(connections.expiresAt))
    .limit(limit);
}

/** Marks `expired` the active connections whose token expired and that cannot be refreshed; answers them. */
export async function expireUnrefreshable(db: Executor, now: Date): Promise<ConnectionRow[]> {
  const rows = await db
    .update(connections)
    .set({ status: 'expired', updatedAt: now })
    .where(
      and(
        eq(connections.status, 'active'),
        lt(connections.expiresAt, now),
        or(eq(connections.canRefresh, false), isNull(connections.refreshTokenEnc)),
      ),
    )
    .returning();
  return rows;
}

// ---- authorization state ----

export async function insertOAuthState(db: Executor, row: typeof oauthStates.$inferInsert): Promise<void> {
  await db.insert(oauthStates).values(row);
}

/**
 * Consumes a state in one statement: only an unused, unexpired state is answered, and never twice. Looks
 * the state up by its hash alone: the callback comes from the browser, without our bearer.
 */
export async function consumeOAuthState(
  db: Executor,
  stateHash: string,
  now: Date,
): Promise<OAuthStateRow | undefined> {
  const [row] = await db
    .update(oauthStates)
    .set({ usedAt: now })
    .where(and(eq(oauthStates.stateHash, stateHash), isNull(oauthStates.usedAt), gt(oauthStates.expiresAt, now)))
    .returning();
  return row;
}

/**
 * Binds an unused, unexpired state to the browser that opened its authorization URL, once: a second opening
 * (the URL forwarded, replayed) gets nothing.
 */
export async function bindOAuthState(
  db: Executor,
  stateHash: string,
  browserBindingHash: string,
  now: Date,
): Promise<OAuthStateRow | undefined> {
  const [row] = await db
    .update(oauthStates)
    .set({ browserBindingHash })
    .where(
      and(
        eq(oauthStates.stateHash, stateHash),
        isNull(oauthStates.browserBindingHash),
        isNull(oauthStates.usedAt),
        gt(oauthStates.expiresAt, now),
      ),
    )
    .returning();
  return row;
}

export async function findOAuthState(db: Executor, stateHash: string): Promise<OAuthStateRow | undefined> {
  const [row] = await db.select().from(oauthStates).where(eq(oauthStates.stateHash, stateHash)).limit(1);
  return row;
}

// ---- pending connections ----

export async function insertPending(db: Executor, row: typeof pendingConnections.$inferInsert): Promise<void> {
  await db.insert(pendingConnections).values(row);
}

/** An unused, unexpired pending connection (by the hash of its id: the public routes carry no bearer). */
export async function findPending(db: Executor, idHash: string, now: Date): Promise<PendingConnectionRow | undefined> {
  const [row] = await db
    .select()
    .from(pendingConnections)
    .where(
      and(
        eq(pendingConnections.idHash, idHash),
        isNull(pendingConnections.usedAt),
        gt(pendingConnections.expiresAt, now),
      ),
    )
    .limit(1);
  return row;
}

/** Claims a pending connection for finalizing: at most one caller ever gets it. */
export async function consumePending(
  db: Executor,
  idHash: string,
  now: Date,
): Promise<PendingConnectionRow | undefined> {
  const [row] = await db
    .update(pendingConnections)
    .set({ usedAt: now })
    .where(
      and(
        eq(pendingConnections.idHash, idHash),
        isNull(pendingConnections.usedAt),
        gt(pendingConnections.expiresAt, now),
      ),
    )
    .returning();
  return row;
}

/** Removes authorization states and pending connections past their expiry (kept a day for diagnosis). */
export async function sweepExpiredAuthorizations(db: Executor, before: Date): Promise<number> {
  const [a, b] = await Promise.all([
    db.delete(oauthStates).where(lt(oauthStates.expiresAt, before)).returning({ k: oauthStates.stateHash }),
    db
      .delete(pendingConnections)
      .where(lt(pendingConnections.expiresAt, before))
      .returning({ k: pendingConnections.idHash }),
  ]);
  return a.length + b.length;
}

// ---- the account's OAuth clients (redirect allow-list) ----

/** Redirect URIs registered by the account's own auth clients. */
export async function accountRedirectUris(db: Executor, accountId: string): Promise<string[]> {
  const rows = await db
    .select({ uris: authClients.redirectUris })
    .from(authClients)
    .where(eq(authClients.accountId, accountId));
  return rows.flatMap((r) => r.uris);
}
