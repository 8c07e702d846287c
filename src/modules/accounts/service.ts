import { type PublicContext, requireFirstParty, requireScope, type ServiceContext } from '../../context.ts';
import type { AccountRow } from '../../db/schema/index.ts';
import { NotFoundError } from '../../lib/errors.ts';
import { creditBalance } from '../credits/index.ts';
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
  const id = ownId(ctx, accountId);
  const [row, balance] = await Promise.all([repo.findAccountById(ctx.db, id), creditBalance(ctx.deps, id)]);
  if (!row) throw new NotFoundError(`Account ${accountId} not found`);
  return toAccount(row, ctx.deps.config.baseUrl, balance);
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

/** The name and e-mail the pages greet a signed-in user with; undefined when the account is gone. */
export async function findAccountProfile(
  ctx: PublicContext,
  accountId: string,
): Promise<{ name: string; email: string } | undefined> {
  const row = await repo.findAccountById(ctx.db, accountId);
  return row ? { name: row.name, email: row.email } : undefined;
}
