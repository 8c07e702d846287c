import { z } from 'zod';
import { type Actor, type Deps, type ProviderPermission, type ServiceContext, systemContext } from '../context.ts';
import type { StoredDelegation } from '../db/schema/columns.ts';
import type { Logger } from '../lib/logger.ts';
import { isScope, type Scope } from './scopes.ts';

/**
 * What a token allowed, kept for work done later on its behalf (a scheduled task's runs, a messaging channel's
 * answers): its whole restriction set. `delegationOf` is the only way to make one and `delegatedContext` the only
 * way to act with one, so a restriction added to `Actor` later is added here once, not forgotten in each area.
 */
export interface Delegation {
  scopes: Scope[];
  providerPermissions: Record<string, ProviderPermission>;
  defaultProviderPermission: ProviderPermission;
  /** Knowledge bases it may touch; null: every base of the account. */
  allowedKnowledgeBaseIds: string[] | null;
}

/** The restriction set of the caller, to store with what acts later in its name. */
export function delegationOf(actor: Actor): Delegation {
  return {
    scopes: [...actor.scopes].sort(),
    providerPermissions: { ...actor.providerPermissions },
    defaultProviderPermission: actor.defaultProviderPermission,
    allowedKnowledgeBaseIds: actor.allowedKnowledgeBaseIds ? [...actor.allowedKnowledgeBaseIds] : null,
  };
}

const Permission = z.enum(['read', 'read-write']);
const Stored = z.object({
  scopes: z.array(z.string()).optional(),
  providerPermissions: z.record(z.string(), Permission).optional(),
  defaultProviderPermission: Permission.optional(),
  allowedKnowledgeBaseIds: z.array(z.string()).nullable().optional(),
});

/**
 * A stored delegation read back. Rows written before the whole set was kept lack parts of it: what is missing
 * is read as the narrowest value (no knowledge base, read-only providers), and missing scopes as `legacyScopes`,
 * the ones whoever wrote such a row must have held. Anything unreadable grants nothing.
 */
export function readDelegation(stored: StoredDelegation | null, legacyScopes: readonly Scope[]): Delegation {
  const parsed = Stored.safeParse(stored ?? {});
  if (!parsed.success) {
    return { scopes: [], providerPermissions: {}, defaultProviderPermission: 'read', allowedKnowledgeBaseIds: [] };
  }
  const d = parsed.data;
  return {
    scopes: d.scopes ? d.scopes.filter(isScope) : [...legacyScopes],
    providerPermissions: d.providerPermissions ?? {},
    defaultProviderPermission: d.defaultProviderPermission ?? 'read',
    allowedKnowledgeBaseIds: d.allowedKnowledgeBaseIds === undefined ? [] : d.allowedKnowledgeBaseIds,
  };
}

const narrower = (a: ProviderPermission, b: ProviderPermission): ProviderPermission =>
  a === 'read' || b === 'read' ? 'read' : 'read-write';

/**
 * What two delegations both allow, for work acting for two people at once (a channel's answer to a person
 * linked by someone else's code): common scopes and bases, the narrower permission on every provider.
 */
export function intersectDelegations(a: Delegation, b: Delegation): Delegation {
  const providers = new Set([...Object.keys(a.providerPermissions), ...Object.keys(b.providerPermissions)]);
  const permission = (d: Delegation, p: string) => d.providerPermissions[p] ?? d.defaultProviderPermission;
  const bases =
    a.allowedKnowledgeBaseIds === null
      ? b.allowedKnowledgeBaseIds
      : b.allowedKnowledgeBaseIds === null
        ? a.allowedKnowledgeBaseIds
        : a.allowedKnowledgeBaseIds.filter((id) => b.allowedKnowledgeBaseIds?.includes(id));
  return {
    scopes: a.scopes.filter((s) => b.scopes.includes(s)),
    providerPermissions: Object.fromEntries(
      [...providers].map((p) => [p, narrower(permission(a, p), permission(b, p))]),
    ),
    defaultProviderPermission: narrower(a.defaultProviderPermission, b.defaultProviderPermission),
    allowedKnowledgeBaseIds: bases === null ? null : [...bases],
  };
}

/**
 * Whether `holder` allows everything `needed` does: its scopes, at least its permission on every provider, and
 * its knowledge bases. A token reading what was done under another token's restrictions must hold at least them.
 */
export function coversDelegation(holder: Delegation, needed: Delegation): boolean {
  const permission = (d: Delegation, p: string) => d.providerPermissions[p] ?? d.defaultProviderPermission;
  const providers = new Set([...Object.keys(holder.providerPermissions), ...Object.keys(needed.providerPermissions)]);
  const atLeast = (h: ProviderPermission, n: ProviderPermission) => h === 'read-write' || n === 'read';
  // null: every base of the account.
  const held = holder.allowedKnowledgeBaseIds;
  const wanted = needed.allowedKnowledgeBaseIds;
  const bases = held === null || wanted?.every((id) => held.includes(id)) === true;
  return (
    needed.scopes.every((s) => holder.scopes.includes(s)) &&
    atLeast(holder.defaultProviderPermission, needed.defaultProviderPermission) &&
    [...providers].every((p) => atLeast(permission(holder, p), permission(needed, p))) &&
    bases
  );
}

/** A needed scope the delegator held through a broader one: `agents-all` grants everything `agents-use` does. */
const INCLUDED_IN: Partial<Record<Scope, readonly Scope[]>> = { 'agents-use': ['agents-all'] };

/**
 * The context delegated work acts in: the scopes the job needs that the delegator held (never more than it
 * had), and its provider permissions and knowledge-base limit as they were.
 */
export function delegatedContext(
  deps: Deps,
  accountId: string,
  log: Logger,
  delegation: Delegation,
  needs: readonly Scope[],
  creditBalance = 0,
): ServiceContext {
  const held = new Set(delegation.scopes);
  const granted = needs.filter((s) => held.has(s) || (INCLUDED_IN[s] ?? []).some((broader) => held.has(broader)));
  const base = systemContext(deps, accountId, log, granted);
  const actor: Actor = {
    ...base.actor,
    providerPermissions: { ...delegation.providerPermissions },
    defaultProviderPermission: delegation.defaultProviderPermission,
    ...(delegation.allowedKnowledgeBaseIds ? { allowedKnowledgeBaseIds: [...delegation.allowedKnowledgeBaseIds] } : {}),
    creditBalance,
  };
  return { ...base, actor };
}
