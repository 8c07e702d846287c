import type { Redis } from 'ioredis';
import type { ActorCache } from './access/actor-cache.ts';
import type { Scope } from './access/scopes.ts';
import type { AgentDeletionHook, AgentPorts } from './agent/ports.ts';
import type { AgentToolGroup } from './agent/tool-group.ts';
import type { Sandbox } from './code-runner/sandbox.ts';
import type { Config } from './config.ts';
import type { Database, Db } from './db/client.ts';
import type { BackgroundTasks } from './lib/background.ts';
import type { KeyRing } from './lib/crypto.ts';
import { ForbiddenError } from './lib/errors.ts';
import { newId } from './lib/ids.ts';
import type { Logger } from './lib/logger.ts';
import type { NotificationHub } from './lib/notifications.ts';
import type { LlmGateway } from './llm-upstreams/gateway.ts';

/** What every service may use; built once per process (or per test app). */
export interface Deps {
  config: Config;
  database: Database;
  keyRing: KeyRing;
  log: Logger;
  /** Model catalog and upstream clients. */
  llm: LlmGateway;
  /** Recently resolved bearer tokens; evict on revocation. */
  actorCache: ActorCache;
  /** Work that outlives a request; drained on shutdown. */
  background: BackgroundTasks;
  /** The database's notifications, fanned out in this process (conversation events). */
  notifications: NotificationHub;
  /** The code sandbox: started on its first run, closed with the app (src/code-runner). */
  sandbox: Sandbox;
  /** Shared counters (rate limits) when `REDIS_URL` is set; the database is the shared store otherwise. */
  redis?: Redis | undefined;
  /** Set on SIGTERM: `/readyz` answers 503 so balancers stop sending, while requests are still served. */
  lifecycle: { draining: boolean };
  /** The agent runtime's model calls and activity log (src/composition.ts). */
  agentPorts: AgentPorts;
  /** Every area's agent tool groups, in the order the model sees their tools (src/composition.ts). */
  toolGroups: readonly AgentToolGroup[];
  /** What other areas do when an agent is deleted (src/composition.ts). */
  agentDeletion: readonly AgentDeletionHook[];
  /** What the areas hold for the app's lifetime, one of each per `Deps` (see `AreaState`). */
  areas: AreaState;
}

/** `Deps` but the areas' state: what `createAreaState` (src/composition.ts) builds that state from. */
export type BaseDeps = Omit<Deps, 'areas'>;

/**
 * The areas' per-app state (per process, per test app, per CLI run), built by `createAreaState`
 * (src/composition.ts) when `Deps` is. This file imports no area (docs/architecture.md), so each area declares
 * its member next to the code that uses it (`declare module '../../context.ts' { interface AreaState { … } }`):
 * - `activityWriter` (activity/service.ts): the group commit of activity rows.
 * - `creditBank` (credits/service.ts): credit leases and the group commit of charges; closed by `closeCredits`.
 * - `conversationLog` (agents/events.service.ts): the group commit of conversations, messages and events.
 * - `agentConfigCache` (agents/config-cache.ts): agent rows and linked tools a chat reads.
 * - `activeConnectionsCache` (connections/active-cache.ts): each account's active connections.
 * The group commits track their writes in `background`, which shutdown drains.
 */
// biome-ignore lint/suspicious/noEmptyInterface: the areas declare the members (declaration merging)
export interface AreaState {}

export type ProviderPermission = 'read' | 'read-write';

/** Who is calling: resolved from the bearer token by the auth guard, or made by the CLI. */
export interface Actor {
  /** `system`: work no request carries (a job acting for the account), with the scopes it was given. */
  kind: 'session' | 'pat' | 'oauth' | 'cli' | 'system';
  accountId: string;
  /** The session, PAT or grant id: what a revocation targets. */
  tokenId: string;
  scopes: ReadonlySet<Scope>;
  providerPermissions: Readonly<Record<string, ProviderPermission>>;
  defaultProviderPermission: ProviderPermission;
  /** Knowledge bases a restricted token may touch; undefined means all of the account's. */
  allowedKnowledgeBaseIds?: readonly string[];
  /** OAuth client id for tokens issued to an app. */
  clientId?: string;
  /** OAuth tokens: the client's roles (`third-party`, `whitelabel-customer`); see auth/oauth/policy. */
  clientRoles?: readonly string[];
  /** OAuth tokens: the resource (RFC 8707) the token was minted for, its `aud`. */
  audience?: string;
  /** Balance seen when the token was resolved; the credit guard reads it without another query. */
  creditBalance: number;
}

/** Context of a call with no caller identity yet (sign-up, sign-in, public routes). */
export interface PublicContext {
  deps: Deps;
  db: Db;
  log: Logger;
  requestId: string;
  ip: string;
  userAgent?: string | undefined;
}

/** Every service action on tenant data takes this first; authorization rules read it and nothing else. */
export interface ServiceContext extends PublicContext {
  accountId: string;
  actor: Actor;
  scopes: ReadonlySet<Scope>;
}

/** Passes when the actor holds at least one of `anyOf`; otherwise 403 naming them. */
export function requireScope(ctx: ServiceContext, ...anyOf: Scope[]): void {
  if (anyOf.some((s) => ctx.scopes.has(s))) return;
  throw new ForbiddenError(`Missing required scope: ${anyOf.join(' or ')}`);
}

/** The refusal the auth guard and `requireFirstParty` give a token that is not the account's own session. */
export const SESSION_ONLY_MESSAGE = 'This endpoint requires a session token (sign in), not an access token';

/**
 * Credential management (auth clients, PATs, deleting the account) is first-party only: the account's own
 * session (the API's session token or the pages' cookie) or the operator's CLI. A PAT or a token issued to an
 * OAuth client never passes, whatever its scopes: a third-party app holding `account` could otherwise rotate
 * the secret of the user's own clients or mint itself more tokens.
 */
export function requireFirstParty(ctx: ServiceContext): void {
  if (ctx.actor.kind === 'session' || ctx.actor.kind === 'cli') return;
  throw new ForbiddenError(SESSION_ONLY_MESSAGE);
}

/** A context acting for the account in work no request carries (background jobs), holding only `scopes`. */
export function systemContext(deps: Deps, accountId: string, log: Logger, scopes: readonly Scope[]): ServiceContext {
  const held = new Set(scopes);
  const actor: Actor = {
    kind: 'system',
    accountId,
    tokenId: 'system',
    scopes: held,
    providerPermissions: {},
    defaultProviderPermission: 'read',
    creditBalance: 0,
  };
  return { deps, db: deps.database.db, log, requestId: newId('request'), ip: '', accountId, actor, scopes: held };
}
