import { and, asc, count, desc, eq, isNull, lt, sql } from 'drizzle-orm';
import type { Executor } from '../db/client.ts';
import {
  accounts,
  type PersonalAccessTokenRow,
  personalAccessTokens,
  sessions,
  signInAttempts,
} from '../db/schema/index.ts';
import { offsetOf } from '../lib/pagination.ts';

/** All SQL for sessions and personal access tokens. Token lookups go by SHA-256, never by the secret. */

export async function insertSession(
  db: Executor,
  row: { id: string; accountId: string; tokenHash: string; expiresAt: Date; userAgent?: string | undefined },
): Promise<void> {
  await db.insert(sessions).values(row);
}

export async function deleteSession(db: Executor, accountId: string, sessionId: string): Promise<void> {
  await db.delete(sessions).where(and(eq(sessions.id, sessionId), eq(sessions.accountId, accountId)));
}

export async function deleteExpiredSessions(db: Executor, now: Date): Promise<number> {
  const rows = await db.delete(sessions).where(lt(sessions.expiresAt, now)).returning({ id: sessions.id });
  return rows.length;
}

/** One round trip: the session and the balance the credit guard needs. */
export async function findSessionByHash(db: Executor, tokenHash: string) {
  const [row] = await db
    .select({
      id: sessions.id,
      accountId: sessions.accountId,
      expiresAt: sessions.expiresAt,
      creditBalance: accounts.creditBalance,
    })
    .from(sessions)
    .innerJoin(accounts, eq(accounts.id, sessions.accountId))
    .where(eq(sessions.tokenHash, tokenHash))
    .limit(1);
  return row;
}

export async function findPatByHash(db: Executor, tokenHash: string) {
  const [row] = await db
    .select({
      id: personalAccessTokens.id,
      accountId: personalAccessTokens.accountId,
      scopes: personalAccessTokens.scopes,
      providerPermissions: personalAccessTokens.providerPermissions,
      defaultProviderPermission: personalAccessTokens.defaultProviderPermission,
      knowledgeBaseIds: personalAccessTokens.knowledgeBaseIds,
      expiresAt: personalAccessTokens.expiresAt,
      revokedAt: personalAccessTokens.revokedAt,
      lastUsedAt: personalAccessTokens.lastUsedAt,
      creditBalance: accounts.creditBalance,
    })
    .from(personalAccessTokens)
    .innerJoin(accounts, eq(accounts.id, personalAccessTokens.accountId))
    .where(eq(personalAccessTokens.tokenHash, tokenHash))
    .limit(1);
  return row;
}

export async function touchPat(db: Executor, id: string, now: Date): Promise<void> {
  await db.update(personalAccessTokens).set({ lastUsedAt: now }).where(eq(personalAccessTokens.id, id));
}

export async function insertPat(
  db: Executor,
  row: typeof personalAccessTokens.$inferInsert,
): Promise<PersonalAccessTokenRow> {
  const [created] = await db.insert(personalAccessTokens).values(row).returning();
  if (!created) throw new Error('insert returned no row');
  return created;
}

/** Active (unrevoked) tokens of the account by creation time, newest first unless `sortOrder` is `asc`. */
export async function listPats(
  db: Executor,
  accountId: string,
  p: { page: number; limit: number; sortOrder: 'asc' | 'desc' },
) {
  const where = and(eq(personalAccessTokens.accountId, accountId), isNull(personalAccessTokens.revokedAt));
  const order = p.sortOrder === 'asc' ? asc : desc;
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(personalAccessTokens)
      .where(where)
      .orderBy(order(personalAccessTokens.createdAt), order(personalAccessTokens.id))
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(personalAccessTokens).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

/** One live token of the account, or undefined (another account's, revoked or unknown). */
export async function findPat(db: Executor, accountId: string, id: string) {
  const [row] = await db
    .select()
    .from(personalAccessTokens)
    .where(
      and(
        eq(personalAccessTokens.id, id),
        eq(personalAccessTokens.accountId, accountId),
        isNull(personalAccessTokens.revokedAt),
      ),
    );
  return row;
}

/** Marks the token revoked; false when it is not the account's or already revoked. */
export async function revokePat(db: Executor, accountId: string, id: string, now: Date): Promise<boolean> {
  const rows = await db
    .update(personalAccessTokens)
    .set({ revokedAt: now })
    .where(
      and(
        eq(personalAccessTokens.id, id),
        eq(personalAccessTokens.accountId, accountId),
        isNull(personalAccessTokens.revokedAt),
      ),
    )
    .returning({ id: personalAccessTokens.id });
  return rows.length > 0;
}

/**
 * Counts one attempt against each key (fixed windows of `windowMs` on the database's clock) and answers each
 * key's count and the end of its window. One statement, so instances counting at once never lose a count.
 */
export async function countSignInAttempts(
  db: Executor,
  keys: readonly string[],
  windowMs: number,
): Promise<Array<{ count: number; resetAt: Date }>> {
  const resetAt = sql`now() + ${windowMs} * interval '1 millisecond'`;
  const spent = sql`${signInAttempts.resetAt} <= now()`;
  return db
    .insert(signInAttempts)
    .values(keys.map((key) => ({ key, count: 1, resetAt })))
    .onConflictDoUpdate({
      target: signInAttempts.key,
      set: {
        count: sql`CASE WHEN ${spent} THEN 1 ELSE ${signInAttempts.count} + 1 END`,
        resetAt: sql`CASE WHEN ${spent} THEN excluded.reset_at ELSE ${signInAttempts.resetAt} END`,
      },
    })
    .returning({ count: signInAttempts.count, resetAt: signInAttempts.resetAt });
}

/** Deletes the sign-in windows that ended before `before`. */
export async function deleteSpentSignInAttempts(db: Executor, before: Date): Promise<number> {
  const rows = await db
    .delete(signInAttempts)
    .where(lt(signInAttempts.resetAt, before))
    .returning({ key: signInAttempts.key });
  return rows.length;
}
