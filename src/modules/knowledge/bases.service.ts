import type { Scope } from '../../access/scopes.ts';
import { requireScope, type ServiceContext } from '../../context.ts';
import type { KnowledgeBaseRow, KnowledgeConfigRow } from '../../db/schema/index.ts';
import { ConflictError, ForbiddenError, isUniqueViolation, NotFoundError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import * as repo from './repo.ts';
import type {
  CreateKnowledgeBase,
  KnowledgeBase,
  KnowledgeConfig,
  UpdateKnowledgeBase,
  UpdateKnowledgeConfig,
} from './schema.ts';

/**
 * Knowledge bases (SPEC §4, scope `account`). An account has exactly one default base: listing makes one
 * when there is none, the first base created becomes it, and it cannot be deleted. A token limited to some
 * bases (`allowedKnowledgeBaseIds`) sees only those and is refused the others, reads and writes alike.
 */

export const DEFAULT_BASE_NAME = 'My knowledge';

/**
 * The scopes that reach knowledge bases: the REST API (`account`), MCP's tools/call and agent chat (the
 * `knowledge-base` tools). A token holding one of them may be limited to some bases.
 */
export const KNOWLEDGE_SCOPES: readonly Scope[] = ['account', 'universal-mcp-read-write', 'agents-use', 'agents-all'];

/** Every base of the account (the default made if missing), for a person choosing which a token may use. */
export async function knowledgeBaseChoices(
  ctx: Pick<ServiceContext, 'db' | 'accountId'>,
): Promise<Array<{ id: string; name: string; isDefault: boolean }>> {
  await ensureDefaultBase(ctx);
  const { rows } = await repo.listBases(ctx.db, ctx.accountId, { page: 1, limit: 1000 });
  return rows.map((r) => ({ id: r.id, name: r.name, isDefault: r.isDefault }));
}

export function toKnowledgeBase(row: KnowledgeBaseRow): KnowledgeBase {
  return {
    id: row.id,
    accountId: row.accountId,
    name: row.name,
    description: row.description,
    customInstructions: row.customInstructions,
    maxPagesLimit: row.maxPagesLimit,
    isDefault: row.isDefault,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** Whether this caller's token may touch the base (a token without a list may touch all of its account's). */
export function mayUseBase(ctx: ServiceContext, kbId: string): boolean {
  const allowed = ctx.actor.allowedKnowledgeBaseIds;
  return !allowed || allowed.includes(kbId);
}

/**
 * The caller's base, or 404 (another account's, or none) / 403 (outside the token's list of bases). The REST
 * API needs `account`; the agent's knowledge tools pass the scopes that may run them.
 */
export async function ownedBase(
  ctx: ServiceContext,
  kbId: string,
  anyOf: readonly Scope[] = ['account'],
): Promise<KnowledgeBaseRow> {
  requireScope(ctx, ...anyOf);
  const row = await repo.findBase(ctx.db, ctx.accountId, kbId);
  if (!row) throw new NotFoundError(`Knowledge base ${kbId} not found`);
  if (!mayUseBase(ctx, kbId)) throw new ForbiddenError(`This token may not use knowledge base ${kbId}`);
  return row;
}

/** The account's default base, made now if it has none (two racing callers end with one). */
export async function ensureDefaultBase(ctx: Pick<ServiceContext, 'db' | 'accountId'>): Promise<KnowledgeBaseRow> {
  const found = await repo.findDefaultBase(ctx.db, ctx.accountId);
  if (found) return found;
  for (let n = 0; n < 5; n++) {
    const name = n === 0 ? DEFAULT_BASE_NAME : `${DEFAULT_BASE_NAME} ${n + 1}`;
    const made = await repo.insertBase(ctx.db, {
      id: newId('knowledgeBase'),
      accountId: ctx.accountId,
      name,
      isDefault: true,
    });
    if (made) return made;
    const raced = await repo.findDefaultBase(ctx.db, ctx.accountId);
    if (raced) return raced;
    // The name is taken by a base that is not the default: try the next name.
  }
  throw new ConflictError('Could not create the default knowledge base; rename the bases named like it');
}

export async function listKnowledgeBases(
  ctx: ServiceContext,
  p: { page: number; limit: number },
): Promise<Page<KnowledgeBase>> {
  requireScope(ctx, 'account');
  await ensureDefaultBase(ctx);
  const { rows, total } = await repo.listBases(ctx.db, ctx.accountId, p);
  if (!ctx.actor.allowedKnowledgeBaseIds) return toPage(rows.map(toKnowledgeBase), total, p);
  // A limited token: its list is short (a handful of ids), so filter the whole set.
  const all = await repo.listBases(ctx.db, ctx.accountId, { page: 1, limit: 10_000 });
  const visible = all.rows.filter((r) => mayUseBase(ctx, r.id));
  const start = (p.page - 1) * p.limit;
  return toPage(visible.slice(start, start + p.limit).map(toKnowledgeBase), visible.length, p);
}

export async function getKnowledgeBase(ctx: ServiceContext, kbId: string): Promise<KnowledgeBase> {
  return toKnowledgeBase(await ownedBase(ctx, kbId));
}

export async function createKnowledgeBase(ctx: ServiceContext, input: CreateKnowledgeBase): Promise<KnowledgeBase> {
  requireScope(ctx, 'account');
  if (ctx.actor.allowedKnowledgeBaseIds) {
    throw new ForbiddenError('This token is limited to some knowledge bases and may not create others');
  }
  return ctx.db.transaction(async (tx) => {
    const hasDefault = Boolean(await repo.findDefaultBase(tx, ctx.accountId));
    const row = await repo.insertBase(tx, {
      id: newId('knowledgeBase'),
      accountId: ctx.accountId,
      ...input,
      isDefault: !hasDefault,
    });
    if (!row) throw new ConflictError(`A knowledge base named "${input.name}" already exists`);
    return toKnowledgeBase(row);
  });
}

export async function updateKnowledgeBase(
  ctx: ServiceContext,
  kbId: string,
  input: UpdateKnowledgeBase,
): Promise<KnowledgeBase> {
  await ownedBase(ctx, kbId);
  try {
    const row = await repo.updateBase(ctx.db, ctx.accountId, kbId, input);
    if (!row) throw new NotFoundError(`Knowledge base ${kbId} not found`);
    return toKnowledgeBase(row);
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError(`A knowledge base named "${input.name}" already exists`);
    throw err;
  }
}

/** Makes the base the default; the previous default stops being one in the same transaction. */
export async function setDefaultKnowledgeBase(ctx: ServiceContext, kbId: string): Promise<KnowledgeBase> {
  await ownedBase(ctx, kbId);
  return ctx.db.transaction(async (tx) => {
    await repo.setDefaultBase(tx, ctx.accountId, kbId);
    const row = await repo.findBase(tx, ctx.accountId, kbId);
    if (!row) throw new NotFoundError(`Knowledge base ${kbId} not found`);
    return toKnowledgeBase(row);
  });
}

/** Deletes a base with its pages, versions, links, sources and logs (cascade); never the default. */
export async function deleteKnowledgeBase(ctx: ServiceContext, kbId: string): Promise<void> {
  const row = await ownedBase(ctx, kbId);
  if (row.isDefault) {
    throw new ConflictError('The default knowledge base cannot be deleted: make another base the default first');
  }
  if (!(await repo.deleteBase(ctx.db, ctx.accountId, kbId))) {
    // It became the default between the read and the delete.
    throw new ConflictError('The default knowledge base cannot be deleted: make another base the default first');
  }
}

function toConfig(row: KnowledgeConfigRow): KnowledgeConfig {
  return {
    enabled: row.enabled,
    autoIngestConversations: row.autoIngestConversations,
    updatedAt: row.updatedAt.toISOString(),
  };
}

export async function getKnowledgeConfig(ctx: ServiceContext): Promise<KnowledgeConfig> {
  requireScope(ctx, 'account');
  return toConfig(await repo.getOrCreateConfig(ctx.db, ctx.accountId));
}

export async function updateKnowledgeConfig(
  ctx: ServiceContext,
  input: UpdateKnowledgeConfig,
): Promise<KnowledgeConfig> {
  requireScope(ctx, 'account');
  return toConfig(await repo.updateConfig(ctx.db, ctx.accountId, input));
}

/** The names of those of `ids` that are bases of the account, by id. */
export async function knowledgeBaseNames(
  ctx: Pick<ServiceContext, 'db' | 'accountId'>,
  ids: readonly string[],
): Promise<Map<string, string>> {
  return new Map((await repo.findBasesByIds(ctx.db, ctx.accountId, ids)).map((b) => [b.id, b.name]));
}

/** The ids among `ids` that are not knowledge bases of the caller's account (a token's allow-list is checked so). */
export async function unknownKnowledgeBases(
  ctx: Pick<ServiceContext, 'db' | 'accountId'>,
  ids: readonly string[],
): Promise<string[]> {
  const known = new Set((await repo.findBasesByIds(ctx.db, ctx.accountId, ids)).map((b) => b.id));
  return ids.filter((id) => !known.has(id));
}
