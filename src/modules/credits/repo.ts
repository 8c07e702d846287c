import { and, count, desc, eq, gte, inArray, lt, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { namedStatement } from '../../db/named.ts';
import { rowsOf } from '../../db/rows.ts';
import { accounts, type CreditTransactionRow, creditTransactions } from '../../db/schema/index.ts';
import { newId } from '../../lib/ids.ts';
import { offsetOf } from '../../lib/pagination.ts';
import type { CreditTransactionType } from './kinds.ts';

// The kinds live in kinds.ts (pages read them too); re-exported for the callers that import them from here.
export { CREDIT_TRANSACTION_TYPES, type CreditTransactionType } from './kinds.ts';

/** The account's stored balance; undefined for an account that is gone. */
export async function storedBalance(db: Executor, accountId: string): Promise<number | undefined> {
  const [row] = await db
    .select({ creditBalance: accounts.creditBalance })
    .from(accounts)
    .where(eq(accounts.id, accountId))
    .limit(1);
  return row?.creditBalance;
}

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

const takeLeaseStatement = namedStatement<
  'id' | 'accountId' | 'need' | 'want' | 'free' | 'expiresAt',
  { balance: string; take: string; admitted: boolean; total: string }
>(
  'credits_take_lease',
  (p) => sql`SELECT balance, take, admitted, total FROM credits_take_lease(${p('id')}, ${p('accountId')},
    ${p('need')}::bigint, ${p('want')}::bigint, ${p('free')}::bigint, ${p('expiresAt')}::timestamptz)`,
);

/**
 * Takes (or tops up) a credit lease in one call (the function `credits_take_lease`, migration 0020): a row of
 * `credit_holds` owned by one instance, from which it serves holds in memory. Expired rows of the account (a
 * crashed instance's) are given back first. The lease's free credits `free` count as balance, so the request is
 * admitted while `balance + free > 0`, as a hold always was; it then holds `take` free credits in all: at least
 * `need`, at most `want` and at most half of what is available, so one instance never takes an account's whole
 * balance. The row's amount grows by `take - free`. Answers the stored balance after, `take`, and `total`: the
 * balance users see as the database has it (the stored balance plus every lease's amount, which a take leaves
 * unchanged); undefined when refused.
 */
export async function takeLease(
  db: Executor,
  lease: { id: string; accountId: string; need: number; want: number; free: number; expiresAt: Date },
): Promise<{ balance: number; take: number; total: number } | undefined> {
  const [row] = await takeLeaseStatement(db, { ...lease, expiresAt: lease.expiresAt.toISOString() });
  if (!row?.admitted) return undefined;
  return { balance: Number(row.balance), take: Number(row.take), total: Number(row.total) };
}

/**
 * The balance users see, as the database has it: the stored balance plus what every lease holds and has not
 * charged (a crashed instance's until it is swept back, when it joins the stored balance). One snapshot: every
 * statement that moves credits between the two writes both at once. Undefined for an account that is gone.
 */
export async function readTotal(db: Executor, accountId: string): Promise<number | undefined> {
  const result = await db.execute(sql`
    SELECT (a.credit_balance + COALESCE((SELECT sum(h.amount) FROM credit_holds h WHERE h.account_id = a.id), 0))::text
      AS balance
    FROM accounts a WHERE a.id = ${accountId}`);
  return balanceOf(result);
}

/** One charge of a batch: a ledger row to write, paid from a lease. */
export interface LeaseCharge {
  id: string;
  leaseId: string;
  accountId: string;
  cost: number;
  type: CreditTransactionType;
  description: string;
  model: string | null;
  promptTokens: number | null;
  completionTokens: number | null;
  requestId: string | null;
  at: Date;
}

/** What a batch does to one lease: the credits its charges spent, and whether it is given back (closed). */
export interface LeaseUpdate {
  leaseId: string;
  accountId: string;
  charged: number;
  close: boolean;
}

const writeLeaseBatchStatement = namedStatement<
  'charges' | 'leases' | 'expiresAt',
  { account: string; balance: string; total: string }
>(
  'credits_write_lease_batch',
  (p) => sql`SELECT account, balance, total FROM credits_write_lease_batch(${p('charges')}::jsonb,
    ${p('leases')}::jsonb, ${p('expiresAt')}::timestamptz)`,
);

/**
 * Group commit: writes a batch of charges (one ledger row each, in order) and their leases' updates in one statement,
 * the function `credits_write_lease_batch` (migration 0018: a function so that each connection plans it once, which
 * costs more than running it). An open lease's row shrinks by what was charged and is renewed until `expiresAt`; a
 * closed lease's row is deleted and what it still held goes back to the balance. A charge whose lease row is gone
 * (expired and swept while its instance stalled) is debited from the balance directly. `balance_after` is the balance
 * with every lease's credits counted, as each row left it. Answers each touched account's stored balance and that
 * total (readTotal) after the batch. Locks go accounts (in id order) first, then lease rows, as in `takeLease`: two
 * instances' batches never deadlock. Written again (an answer lost with its connection, a journal replayed: migration
 * 0025), a batch changes nothing more: a charge whose id is in the ledger already is skipped, its lease not charged.
 */
export async function writeLeaseBatch(
  db: Executor,
  batch: { charges: LeaseCharge[]; leases: LeaseUpdate[]; expiresAt: Date },
): Promise<Map<string, { balance: number; total: number }>> {
  const charges = batch.charges
    .filter((c) => c.cost > 0)
    .map((c, n) => ({
      n,
      id: c.id,
      lease_id: c.leaseId,
      account_id: c.accountId,
      cost: c.cost,
      type: c.type,
      description: c.description,
      model: c.model,
      prompt_tokens: c.promptTokens,
      completion_tokens: c.completionTokens,
      request_id: c.requestId,
      at: c.at.toISOString(),
    }));
  const leases = batch.leases.map((l) => ({
    lease_id: l.leaseId,
    account_id: l.accountId,
    charged: l.charged,
    close: l.close,
  }));
  const rows = await writeLeaseBatchStatement(db, {
    charges: JSON.stringify(charges),
    leases: JSON.stringify(leases),
    expiresAt: batch.expiresAt.toISOString(),
  });
  return new Map(rows.map((r) => [r.account, { balance: Number(r.balance), total: Number(r.total) }]));
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

/**
 * Adds (or with a negative amount, removes) credits and records it; call it in a transaction. `balance_after` is
 * the balance users see (readTotal), as in the bank's rows: read once the account's row is locked, so a lease an
 * instance takes or gives back meanwhile is counted once. Undefined (nothing written) for an account that is gone.
 */
export async function adjustBalance(
  db: Executor,
  tx: Omit<NewCreditTransaction, 'balanceAfter'>,
): Promise<CreditTransactionRow | undefined> {
  await db.execute(sql`SELECT 1 FROM accounts WHERE id = ${tx.accountId} FOR UPDATE`);
  const result = await db.execute(sql`
    WITH u AS (
      UPDATE accounts SET credit_balance = credit_balance + ${tx.amount}, updated_at = now()
      WHERE id = ${tx.accountId} RETURNING id, credit_balance
    )
    SELECT (u.credit_balance + COALESCE((SELECT sum(h.amount) FROM credit_holds h WHERE h.account_id = u.id), 0))::text
      AS balance FROM u`);
  const balance = balanceOf(result);
  if (balance === undefined) return undefined;
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

/**
 * Credits spent per UTC day and type in [from, to): charges only (negative amounts, counted positive). Days and
 * types with nothing spent are absent. `day` is YYYY-MM-DD.
 */
export async function usageByDay(
  db: Executor,
  accountId: string,
  from: Date,
  to: Date,
): Promise<Array<{ day: string; type: string; credits: number }>> {
  const result = await db.execute(sql`
    SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, type, (-sum(amount))::text AS credits
    FROM credit_transactions
    WHERE account_id = ${accountId} AND amount < 0
      AND created_at >= ${from.toISOString()}::timestamptz AND created_at < ${to.toISOString()}::timestamptz
    GROUP BY 1, 2
    ORDER BY 1, 2`);
  const rows = rowsOf<{ day: string; type: string; credits: string | number }>(result);
  return rows.map((r) => ({ day: r.day, type: r.type, credits: Number(r.credits) }));
}
