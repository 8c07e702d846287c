import type { BaseDeps, Deps, PublicContext, ServiceContext } from '../../context.ts';
import { requireScope } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { CreditTransactionRow } from '../../db/schema/index.ts';
import { NotFoundError, ValidationError } from '../../lib/errors.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import { type BankHold, type BankSettled, CreditBank } from './bank.ts';
import { ChargeJournal } from './journal.ts';
import { USAGE_KINDS, type UsageDay, type UsageKind } from './kinds.ts';
import * as repo from './repo.ts';
import type { CreditTransaction, CreditTransactionQuery } from './schema.ts';

declare module '../../context.ts' {
  interface AreaState {
    /** The app's credit leases and the group commit of their charges (bank.ts); closed by `closeCredits`. */
    creditBank: CreditBank;
  }
}

/** The app's credit bank (`deps.areas.creditBank`), made once with `Deps`: per app, per CLI run. */
export function createCreditBank(deps: BaseDeps): CreditBank {
  return new CreditBank(deps.database.asyncCommitDb, deps.log, deps.background, Date.now, {
    journal: new ChargeJournal(deps.config.dataDir, deps.log),
    backlogMax: deps.config.creditsBacklogMax,
  });
}

export type CreditHold = BankHold;

/**
 * Admits a credit-consuming request by holding its worst-case cost. Refused (402) at a zero balance; while
 * the balance is positive the hold always succeeds, so at most one request's worst case can overdraw. Served
 * from this instance's lease on the account when it covers the hold (no database write), see bank.ts.
 */
export function holdCredits(ctx: ServiceContext, amount: number): Promise<CreditHold> {
  return ctx.deps.areas.creditBank.hold(ctx.accountId, amount);
}

export interface Charge {
  type: repo.CreditTransactionType;
  cost: number;
  description: string;
  model?: string;
  promptTokens?: number;
  completionTokens?: number;
}

/**
 * Replaces the hold by the real cost: exactly one ledger row when cost > 0, written with others in a batch
 * (group commit). Answers at once the balance after it, as `creditBalance` shows it (the answer's
 * `X-Credits-Remaining`), and `written`, which resolves once the row is written: an answer does not wait for it.
 */
export function settleCredits(ctx: ServiceContext, hold: CreditHold, charge: Charge): BankSettled {
  return ctx.deps.areas.creditBank.charge(hold, {
    cost: charge.cost,
    type: charge.type,
    description: charge.description,
    model: charge.model ?? null,
    promptTokens: charge.promptTokens ?? null,
    completionTokens: charge.completionTokens ?? null,
    requestId: ctx.requestId,
  });
}

/**
 * The account's `creditBalance` (API, pages, CLI): the balance after every request answered so far, whichever
 * instance answered it, as far as the database has it: the stored balance plus what every lease holds and has
 * not charged, less what this instance answered and has not written yet. A request in flight is not counted
 * until it is answered. Undefined for an account that is gone. See the README's credits section.
 */
export function creditBalance(deps: Deps, accountId: string): Promise<number | undefined> {
  return deps.areas.creditBank.shownBalance(accountId, () => repo.readTotal(deps.database.db, accountId));
}

/**
 * The balance after a request this instance just answered (every charge it settled counted): from memory while
 * it holds a lease on the account, else creditBalance.
 */
export async function balanceAfter(deps: Deps, accountId: string): Promise<number | undefined> {
  return deps.areas.creditBank.known(accountId) ?? creditBalance(deps, accountId);
}

/**
 * The balance the credit guard admits against: the stored one plus what this instance has leased for the
 * account and not yet held (leased credits left the stored balance). Undefined for an account that is gone.
 * The row and the leases are read at different moments: a lease handed back in between would be in neither and
 * refuse an account that can pay, so its free credits count as they were before the read or after it, whichever
 * is more (a return counted twice only admits the request: the credit bank holds and charges it).
 */
export async function availableCredits(deps: Deps, accountId: string): Promise<number | undefined> {
  const before = leasedCredits(deps, accountId);
  const stored = await repo.storedBalance(deps.database.db, accountId);
  return stored === undefined ? undefined : stored + Math.max(before, leasedCredits(deps, accountId));
}

/** Credits this instance has leased for the account and not yet held: they count as balance for the guard. */
export function leasedCredits(deps: Deps, accountId: string): number {
  return deps.areas.creditBank.free(accountId);
}

/** This instance's credit writes so far (lease takes, batches, charges, requests that waited on a take). */
export function creditStats(deps: Deps): CreditBank['stats'] {
  return deps.areas.creditBank.stats;
}

/** Writes every queued charge and gives back the leases no request holds from (tests read the balance after). */
export async function returnIdleLeases(deps: Deps): Promise<void> {
  await deps.areas.creditBank.returnIdle();
}

/**
 * Start-up: charges an earlier instance on this DATA_DIR journaled during a database outage and could not write
 * before it stopped are written now (in the background; kept, as any charge, until the database answers).
 */
export function recoverCharges(deps: Deps): void {
  const bank = deps.areas.creditBank;
  if (bank.recover()) deps.background.track('writing journaled charges', bank.flush());
}

/**
 * Shutdown, once requests ended: waits for background work (which may still settle charges; an idle lease is
 * given back at once rather than after LEASE_IDLE_MS), then writes every charge and gives back every lease.
 */
export async function closeCredits(deps: Deps): Promise<void> {
  const bank = deps.areas.creditBank;
  bank.stopping();
  await Promise.all([deps.background.drain(), bank.returnIdle()]);
  await bank.close();
}

/** A new account's starting credits: their `grant` ledger row, in the transaction that inserts the account. */
export async function recordWelcomeCredits(
  ctx: { db: Executor; requestId?: string },
  accountId: string,
  amount: number,
): Promise<void> {
  await repo.insertCreditTransaction(ctx.db, {
    accountId,
    amount,
    balanceAfter: amount,
    type: 'grant',
    description: 'Welcome credits',
    requestId: ctx.requestId,
  });
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

const DAY_MS = 86_400_000;

/**
 * Credits spent per UTC day and kind over the last `days` days up to `now` (today included), oldest first, every
 * day present (zeros where nothing was spent). Charges of a type outside the usage kinds are not counted.
 */
export async function creditUsage(ctx: ServiceContext, days: number, now = new Date()): Promise<UsageDay[]> {
  requireScope(ctx, 'account');
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const from = new Date(today - (days - 1) * DAY_MS);
  const rows = await repo.usageByDay(ctx.db, ctx.accountId, from, new Date(today + DAY_MS));
  const out: UsageDay[] = Array.from({ length: days }, (_, i) => ({
    day: new Date(from.getTime() + i * DAY_MS).toISOString().slice(0, 10),
    credits: Object.fromEntries(USAGE_KINDS.map((k) => [k, 0])) as Record<UsageKind, number>,
    total: 0,
  }));
  const byDay = new Map(out.map((d) => [d.day, d]));
  for (const r of rows) {
    const day = byDay.get(r.day);
    if (!day || !(USAGE_KINDS as readonly string[]).includes(r.type)) continue;
    day.credits[r.type as UsageKind] += r.credits;
    day.total += r.credits;
  }
  return out;
}

/**
 * Tops an account up exactly once per idempotency key: a repeated key answers the first transaction and
 * changes nothing (also when two calls race: the unique index decides). The CLI finds the account by e-mail
 * through the accounts area.
 */
export async function addCredits(
  ctx: PublicContext,
  input: { accountId: string; amount: number; idempotencyKey: string; description?: string },
): Promise<{ transaction: CreditTransaction; duplicate: boolean }> {
  if (!Number.isSafeInteger(input.amount) || input.amount <= 0) {
    throw new ValidationError('Validation failed', [{ field: 'amount', message: 'must be a positive integer' }]);
  }
  if (!input.idempotencyKey.trim()) {
    throw new ValidationError('Validation failed', [{ field: 'idempotencyKey', message: 'is required' }]);
  }
  const existing = await repo.findByIdempotencyKey(ctx.db, input.idempotencyKey);
  if (existing) return { transaction: toTransaction(existing), duplicate: true };
  const { accountId } = input;
  try {
    const row = await ctx.db.transaction(async (tx) => {
      const written = await repo.adjustBalance(tx, {
        accountId,
        amount: input.amount,
        type: 'topup',
        description: input.description ?? 'Top-up',
        idempotencyKey: input.idempotencyKey,
        requestId: ctx.requestId,
      });
      // An account that does not exist changes nothing and is refused.
      if (!written) throw new NotFoundError(`No account ${accountId}`);
      return written;
    });
    return { transaction: toTransaction(row), duplicate: false };
  } catch (err) {
    const raced = await repo.findByIdempotencyKey(ctx.db, input.idempotencyKey);
    if (raced) return { transaction: toTransaction(raced), duplicate: true };
    throw err;
  }
}
