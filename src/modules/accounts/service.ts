import { type PublicContext, requireFirstParty, requireScope, type ServiceContext } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { AccountRow } from '../../db/schema/index.ts';
import { ConflictError, isUniqueViolation, NotFoundError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { creditBalance, recordWelcomeCredits } from '../credits/index.ts';
import { type AvatarImage, decodeDataUri, initialsSvg } from './avatar.ts';
import * as repo from './repo.ts';
import type { Account, UpdateAccount } from './schema.ts';

/**
 * The account as the API answers it. `creditBalance` is the stored balance unless `balance` gives the one users see
 * (credits' creditBalance: leases' unspent credits counted); every answer that shows a balance passes it.
 */
export function toAccount(row: AccountRow, baseUrl: string, balance?: number): Account {
  const ownImage = row.avatar && /^https?:/.test(row.avatar) ? row.avatar : undefined;
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    avatar: ownImage ?? `${baseUrl}/api/v1/accounts/${row.id}/avatar`,
    creditBalance: balance ?? row.creditBalance,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** `me` or the caller's own id; any other id is 404 so account ids cannot be probed. */
function ownId(ctx: ServiceContext, accountId: string): string {
  if (accountId === 'me' || accountId === ctx.accountId) return ctx.accountId;
  throw new NotFoundError(`Account ${accountId} not found`);
}

export async function getAccount(ctx: ServiceContext, accountId: string): Promise<Account> {
  requireScope(ctx, 'account');
  const account = await findAccount(ctx, ownId(ctx, accountId));
  if (!account) throw new NotFoundError(`Account ${accountId} not found`);
  return account;
}

export async function updateAccount(ctx: ServiceContext, accountId: string, input: UpdateAccount): Promise<Account> {
  requireScope(ctx, 'account');
  const id = ownId(ctx, accountId);
  const row = await repo.updateAccount(ctx.db, id, input);
  if (!row) throw new NotFoundError(`Account ${accountId} not found`);
  return toAccount(row, ctx.deps.config.baseUrl, await creditBalance(ctx.deps, id));
}

/** Deletes the account and, by cascade, everything it owns (tokens, sessions, ledger ...). */
export async function deleteAccount(ctx: ServiceContext, accountId: string): Promise<void> {
  requireFirstParty(ctx);
  const deleted = await repo.deleteAccount(ctx.db, ownId(ctx, accountId));
  if (!deleted) throw new NotFoundError(`Account ${accountId} not found`);
  ctx.deps.actorCache.evict({ accountId: ctx.accountId });
  ctx.log.info({ accountId: ctx.accountId }, 'account deleted');
}

/** Any bearer may read its own account's avatar; URL avatars answer a redirect (we never fetch them). */
export async function getAvatar(
  ctx: ServiceContext,
  accountId: string,
): Promise<{ redirect: string } | { image: AvatarImage }> {
  const row = await repo.findAccountById(ctx.db, ownId(ctx, accountId));
  if (!row) throw new NotFoundError(`Account ${accountId} not found`);
  if (row.avatar && /^https?:/.test(row.avatar)) return { redirect: row.avatar };
  const uploaded = row.avatar ? decodeDataUri(row.avatar) : undefined;
  return { image: uploaded ?? initialsSvg(row.id, row.name) };
}

/**
 * What the pages greet a signed-in user with and the OAuth server's claims tell a client; undefined when the
 * account is gone.
 */
export async function findAccountProfile(
  ctx: Pick<PublicContext, 'db'>,
  accountId: string,
): Promise<{ id: string; name: string; email: string; updatedAt: Date } | undefined> {
  const row = await repo.findAccountById(ctx.db, accountId);
  return row ? { id: row.id, name: row.name, email: row.email, updatedAt: row.updatedAt } : undefined;
}

/** The account as the API answers it, for callers with no caller identity yet (a new session); undefined when gone. */
export async function findAccount(ctx: PublicContext, accountId: string): Promise<Account | undefined> {
  const [row, balance] = await Promise.all([
    repo.findAccountById(ctx.db, accountId),
    creditBalance(ctx.deps, accountId),
  ]);
  return row ? toAccount(row, ctx.deps.config.baseUrl, balance) : undefined;
}

/** Creates an account with its starting credits (a `grant` row), in one transaction: sign-up and the CLI. */
export async function createAccount(
  ctx: PublicContext,
  input: { email: string; name: string; passwordHash: string },
): Promise<{ id: string }> {
  const { initialCredits } = ctx.deps.config;
  const id = newId('account');
  try {
    await ctx.db.transaction(async (tx) => {
      await repo.insertAccount(tx, { id, ...input, creditBalance: initialCredits });
      await recordWelcomeCredits({ db: tx, requestId: ctx.requestId }, id, initialCredits);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError('An account with this e-mail already exists');
    throw err;
  }
  return { id };
}

/** The id and password hash sign-in checks (e-mails match whatever their case); undefined for an unknown e-mail. */
export async function findSignIn(
  ctx: Pick<PublicContext, 'db'>,
  email: string,
): Promise<{ id: string; passwordHash: string | null } | undefined> {
  const row = await repo.findAccountByEmail(ctx.db, email);
  return row ? { id: row.id, passwordHash: row.passwordHash } : undefined;
}

/** The id of the account with this e-mail (the operator's CLI names accounts by e-mail); undefined if none. */
export async function accountIdByEmail(ctx: Pick<PublicContext, 'db'>, email: string): Promise<string | undefined> {
  return (await repo.findAccountByEmail(ctx.db, email))?.id;
}

/** Whether an operator allowed the account to give its clients the `whitelabel-customer` role. */
export async function allowsWhitelabel(ctx: Pick<PublicContext, 'db'>, accountId: string): Promise<boolean> {
  return (await repo.findAccountById(ctx.db, accountId))?.allowWhitelabel ?? false;
}

/** Allows or withdraws the role; `ctx.db` may be the caller's transaction (which demotes clients with it). */
export async function setAllowWhitelabel(ctx: { db: Executor }, accountId: string, allowed: boolean): Promise<void> {
  await repo.updateAccount(ctx.db, accountId, { allowWhitelabel: allowed });
}
