import { and, count, desc, eq, gte, inArray, lt, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { type CreditTransactionRow, creditTransactions } from '../../db/schema/index.ts';
import { newId } from '../../lib/ids.ts';
import { offsetOf } from '../../lib/pagination.ts';

export const CREDIT_TRANSACTION_TYPES = [
  'grant',
  'llm',
  'mcp',
  'agent',
  'sandbox',
  'knowledge',
  'topup',
  'refund',
] as const;
export type CreditTransactionType = (typeof CREDIT_TRANSACTION_TYPES)[number];

export interface NewCreditTransaction {
  accountId: string;
  amount: number;
  balanceAfter: number;
  type: CreditTransactionType;
  description?: string;
  model?: string | null;
  promptTokens?: number | null;
  completionTokens?: number | null;
  requestId?: string | null;
  idempotencyKey?: string | null;
}

/** Records one balance change; callers write it in the same transaction as the balance update. */
export async function insertCreditTransaction(db: Executor, tx: NewCreditTransaction): Promise<string> {
  const id = newId('creditTransaction');
  await db.insert(creditTransactions).values({ id, description: '', ...tx });
  return id;
}

// Raw statements answer int8 as a number on PGlite and a string on pg: read balances as text, then Number.
type BalanceRow = { balance: string | number };
const balanceOf = (rows: unknown): number | undefined => {
  const row = (rows as { rows: BalanceRow[] }).rows[0];
  return row ? Number(row.balance) : undefined;
};

/**
 * Sets `amount` aside for a request in one statement: admitted only while the balance is above zero, so
 * concurrent requests take it below zero by at most one request's hold. Answers the balance after the
 * hold, or undefined when refused.
 */
export async function placeHold(
  db: Executor,
  hold: { id: string; accountId: string; amount: number; expiresAt: Date },
): Promise<number | undefined> {
  const result = await db.execute(sql`
    WITH u AS (
      UPDATE accounts SET credit_balance = credit_balance - ${hold.amount}
      WHERE id = ${hold.accountId} AND credit_balance > 0
      RETURNING credit_balance
    ), h AS (
      INSERT INTO credit_holds (id, account_id, amount, expires_at)
      SELECT ${hold.id}, ${hold.accountId}, ${hold.amount}, ${hold.expiresAt.toISOString()}::timestamptz FROM u
    )
    SELECT credit_balance::text AS balance FROM u`);
  return balanceOf(result);
}

/**
 * Settles a hold in one statement: returns the hold, debits the real cost and records it. Safe when the hold
 * was already released (an expired hold swept away): the cost is then debited alone.
 */
export async function settleHold(
  db: Executor,
  holdId: string,
  charge: Omit<NewCreditTransaction, 'amount' | 'balanceAfter'> & { cost: number },
): Promise<{ balance: number; transactionId: string | undefined }> {
  const txId = charge.cost > 0 ? newId('creditTransaction') : undefined;
  const result = await db.execute(sql`
    WITH h AS (
      DELETE FROM credit_holds WHERE id = ${holdId} AND account_id = ${charge.accountId} RETURNING amount
    ), u AS (
      UPDATE accounts SET credit_balance = credit_balance + COALESCE((SELECT sum(amount) FROM h), 0) - ${charge.cost}
      WHERE id = ${charge.accountId}
      RETURNING credit_balance
    ), t AS (
      INSERT INTO credit_transactions
        (id, account_id, amount, balance_after, type, description, model, prompt_tokens, completion_tokens, request_id)
      SELECT ${txId ?? ''}, ${charge.accountId}, ${-charge.cost}, u.credit_balance, ${charge.type},
        ${charge.description ?? ''}, ${charge.model ?? null}, ${charge.promptTokens ?? null},
        ${charge.completionTokens ?? null}, ${charge.requestId ?? null}
      FROM u WHERE ${charge.cost} > 0
    )
    SELECT credit_balance::text AS balance FROM u`);
  return { balance: balanceOf(result) ?? 0, transactionId: txId };
}

/** Gives back holds whose request never settled (its instance died). Answers how many were released. */
export async function releaseExpiredHolds(db: Executor, now: Date): Promise<number> {
  const result = await db.execute(sql`
    WITH h AS (
      DELETE FROM credit_holds WHERE expires_at < ${now.toISOString()}::timestamptz RETURNING account_id, amount
    ), s AS (
      SELECT account_id, sum(amount) AS amount FROM h GROUP BY account_id
    ), u AS (
      UPDATE accounts a SET credit_balance = a.credit_balance + s.amount FROM s WHERE a.id = s.account_id
      RETURNING a.id
    )
    SELECT count(*)::text AS balance FROM h`);
  return balanceOf(result) ?? 0;
}

export async function findByIdempotencyKey(db: Executor, key: string): Promise<CreditTransactionRow | undefined> {
  const [row] = await db.select().from(creditTransactions).where(eq(creditTransactions.idempotencyKey, key)).limit(1);
  return row;
}

/** Adds (or with a negative amount, removes) credits and records it, in one transaction. */
export async function adjustBalance(
  db: Executor,
  tx: Omit<NewCreditTransaction, 'balanceAfter'>,
): Promise<CreditTransactionRow> {
  const result = await db.execute(sql`
    WITH u AS (
      UPDATE accounts SET credit_balance = credit_balance + ${tx.amount}, updated_at = now()
      WHERE id = ${tx.accountId} RETURNING credit_balance
    )
    SELECT credit_balance::text AS balance FROM u`);
  const balance = balanceOf(result);
  if (balance === undefined) throw new Error(`Account ${tx.accountId} not found`);
  const id = await insertCreditTransaction(db, { ...tx, balanceAfter: balance });
  const [row] = await db.select().from(creditTransactions).where(eq(creditTransactions.id, id));
  if (!row) throw new Error('inserted transaction not found');
  return row;
}

export interface TransactionFilter {
  types?: CreditTransactionType[] | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
}

export async function listTransactions(
  db: Executor,
  accountId: string,
  filter: TransactionFilter,
  p: { page: number; limit: number; sortOrder: 'asc' | 'desc' },
) {
  const where = and(
    eq(creditTransactions.accountId, accountId),
    filter.types?.length ? inArray(creditTransactions.type, filter.types) : undefined,
    filter.from ? gte(creditTransactions.createdAt, filter.from) : undefined,
    filter.to ? lt(creditTransactions.createdAt, filter.to) : undefined,
  );
  const order =
    p.sortOrder === 'asc'
      ? [creditTransactions.createdAt, creditTransactions.id]
      : [desc(creditTransactions.createdAt), desc(creditTransactions.id)];
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(creditTransactions)
      .where(where)
      .orderBy(...order)
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(creditTransactions).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

export async function sumTransactions(db: Executor, accountId: string): Promise<number> {
  const [row] = await db
    .select({ total: sql<string>`coalesce(sum(${creditTransactions.amount}), 0)::text` })
    .from(creditTransactions)
    .where(eq(creditTransactions.accountId, accountId));
  return Number(row?.total ?? 0);
}
