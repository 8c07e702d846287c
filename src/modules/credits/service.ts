import type { CreditTransactionRow } from '../../db/schema/index.ts';
import type { PublicContext, ServiceContext } from '../../lib/context.ts';
import { requireScope } from '../../lib/context.ts';
import { CreditsExhaustedError, NotFoundError, ValidationError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import * as accountsRepo from '../accounts/repo.ts';
import * as repo from './repo.ts';
import type { CreditTransaction, CreditTransactionQuery } from './schema.ts';

/** How long a hold may stay unsettled before the sweeper gives it back (its instance is presumed dead). */
export const HOLD_TTL_MS = 30 * 60 * 1000;

export interface CreditHold {
  id: string;
  accountId: string;
  amount: number;
  /** The balance when the request was admitted, before the hold. */
  balanceBefore: number;
}

/**
 * Admits a credit-consuming request by holding its worst-case cost. Refused (402) at a zero balance; while
 * the balance is positive the hold always succeeds, so at most one request's worst case can overdraw.
 */
export async function holdCredits(ctx: ServiceContext, amount: number): Promise<CreditHold> {
  const hold = { id: newId('creditHold'), accountId: ctx.accountId, amount: Math.max(0, Math.ceil(amount)) };
  const db = ctx.deps.database.asyncCommitDb;
  const balance = await repo.placeHold(db, { ...hold, expiresAt: new Date(Date.now() + HOLD_TTL_MS) });
  if (balance === undefined) {
    throw new CreditsExhaustedError('Insufficient credits: the balance is exhausted; add credits to continue');
  }
  return { ...hold, balanceBefore: balance + hold.amount };
}

export interface Charge {
  type: repo.CreditTransactionType;
  cost: number;
  description: string;
  model?: string;
  promptTokens?: number;
  completionTokens?: number;
}

/** Replaces the hold by the real cost; answers the balance after. Exactly one ledger row when cost > 0. */
export async function settleCredits(ctx: ServiceContext, hold: CreditHold, charge: Charge): Promise<number> {
  const { balance } = await repo.settleHold(ctx.deps.database.asyncCommitDb, hold.id, {
    accountId: hold.accountId,
    cost: charge.cost,
    type: charge.type,
    description: charge.description,
    model: charge.model ?? null,
    promptTokens: charge.promptTokens ?? null,
    completionTokens: charge.completionTokens ?? null,
    requestId: ctx.requestId,
  });
  return balance;
}

/** Sweeps holds whose request never settled; run periodically on every instance (rows are claimed once). */
export function releaseExpiredHolds(ctx: Pick<PublicContext, 'db'>): Promise<number> {
  return repo.releaseExpiredHolds(ctx.db, new Date());
}

function toTransaction(row: CreditTransactionRow): CreditTransaction {
  return {
    id: row.id,
    amount: row.amount,
    balanceAfter: row.balanceAfter,
    type: row.type as CreditTransaction['type'],
    description: row.description,
    model: row.model,
    promptTokens: row.promptTokens,
    completionTokens: row.completionTokens,
    requestId: row.requestId,
    idempotencyKey: row.idempotencyKey,
    createdAt: row.createdAt.toISOString(),
  };
}

export async function listCreditTransactions(
  ctx: ServiceContext,
  q: CreditTransactionQuery,
): Promise<Page<CreditTransaction>> {
  requireScope(ctx, 'account');
  const { rows, total } = await repo.listTransactions(
    ctx.db,
    ctx.accountId,
    { types: q.type, from: q.from ? new Date(q.from) : undefined, to: q.to ? new Date(q.to) : undefined },
    q,
  );
  return toPage(rows.map(toTransaction), total, q);
}

/**
 * Tops an account up exactly once per idempotency key: a repeated key answers the first transaction and
 * changes nothing (also when two calls race: the unique index decides).
 */
export async function addCredits(
  ctx: PublicContext,
  input: { email: string; amount: number; idempotencyKey: string; description?: string },
): Promise<{ transaction: CreditTransaction; duplicate: boolean }> {
  if (!Number.isSafeInteger(input.amount) || input.amount <= 0) {
    throw new ValidationError('Validation failed', [{ field: 'amount', message: 'must be a positive integer' }]);
  }
  if (!input.idempotencyKey.trim()) {
    throw new ValidationError('Validation failed', [{ field: 'idempotencyKey', message: 'is required' }]);
  }
  const existing = await repo.findByIdempotencyKey(ctx.db, input.idempotencyKey);
  if (existing) return { transaction: toTransaction(existing), duplicate: true };
  const account = await accountsRepo.findAccountByEmail(ctx.db, input.email);
  if (!account) throw new NotFoundError(`No account with e-mail ${input.email}`);
  try {
    const row = await ctx.db.transaction((tx) =>
      repo.adjustBalance(tx, {
        accountId: account.id,
        amount: input.amount,
        type: 'topup',
        description: input.description ?? 'Top-up',
        idempotencyKey: input.idempotencyKey,
        requestId: ctx.requestId,
      }),
    );
    return { transaction: toTransaction(row), duplicate: false };
  } catch (err) {
    const raced = await repo.findByIdempotencyKey(ctx.db, input.idempotencyKey);
    if (raced) return { transaction: toTransaction(raced), duplicate: true };
    throw err;
  }
}
