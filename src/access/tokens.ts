import type { Actor } from '../context.ts';
import type { Db } from '../db/client.ts';
import { TokenExpiredError, UnauthorizedError } from '../lib/errors.ts';
import { sha256Hex } from '../lib/ids.ts';
import type { ActorCache } from './actor-cache.ts';
import * as repo from './repo.ts';
import { ALL_SCOPES, isScope, type Scope } from './scopes.ts';

/** Session tokens belong to the first-party app and hold every scope. */
const SESSION_SCOPES: ReadonlySet<Scope> = new Set(ALL_SCOPES);

/** What the token is presented to: JWT access tokens check their audience (RFC 8707) against it. */
export interface BearerTarget {
  /** The request path (`/mcp`, `/api/v1/...`). */
  path: string;
}

/**
 * A verifier for a further token kind (OAuth JWT access tokens): undefined when the token is not its kind,
 * an actor when valid, a thrown 401 when it is its kind but invalid, expired or meant for another resource.
 */
export type BearerVerifier = (token: string, target: BearerTarget) => Promise<Actor | undefined>;

const PAT_TOUCH_INTERVAL_MS = 60_000;

/**
 * Resolves `Authorization: Bearer <token>` to an actor. Unknown tokens are 401 UnauthorizedError; expired
 * ones 401 TokenExpiredError, so clients know a refresh (or a new token) will help. A token the cache holds
 * answers the actor itself, not a promise of it, so the request guard admits it without a turn of promises;
 * anything else answers a promise, and a fault is always its rejection, never a throw.
 */
export function resolveBearer(
  db: Db,
  token: string,
  extra: BearerVerifier[] = [],
  cache?: ActorCache,
  target: BearerTarget = { path: '/' },
): Actor | Promise<Actor> {
  if (!token.startsWith('sess_') && !token.startsWith('pat_')) return verifyOther(token, extra, target);
  const hash = sha256Hex(token);
  if (cache) return cache.resolve(hash, () => lookupStored(db, token, hash));
  return lookupStored(db, token, hash).then((r) => r.actor);
}

/** A token that is not one of our own opaque kinds: the first verifier that knows it decides. */
async function verifyOther(token: string, extra: BearerVerifier[], target: BearerTarget): Promise<Actor> {
  for (const verify of extra) {
    const actor = await verify(token, target);
    if (actor) return actor;
  }
  throw new UnauthorizedError('Invalid bearer token');
}

/** Our own opaque tokens, looked up by hash. */
async function lookupStored(db: Db, token: string, hash: string): Promise<{ actor: Actor; expiresAt: Date }> {
  if (token.startsWith('sess_')) {
    const row = await repo.findSessionByHash(db, hash);
    if (!row) throw new UnauthorizedError('Invalid session token');
    if (row.expiresAt.getTime() <= Date.now()) throw new TokenExpiredError('Session expired; sign in again');
    const actor: Actor = {
      kind: 'session',
      accountId: row.accountId,
      tokenId: row.id,
      scopes: SESSION_SCOPES,
      providerPermissions: {},
      defaultProviderPermission: 'read-write',
      creditBalance: row.creditBalance,
    };
    return { actor, expiresAt: row.expiresAt };
  }
  const row = await repo.findPatByHash(db, hash);
  if (!row || row.revokedAt) throw new UnauthorizedError('Invalid or revoked personal access token');
  const now = new Date();
  if (row.expiresAt.getTime() <= now.getTime()) throw new TokenExpiredError('Personal access token expired');
  if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() > PAT_TOUCH_INTERVAL_MS) {
    // Bookkeeping only: never delay or fail the request for it.
    repo.touchPat(db, row.id, now).catch(() => {});
  }
  const actor: Actor = {
    kind: 'pat',
    accountId: row.accountId,
    tokenId: row.id,
    scopes: new Set(row.scopes.filter(isScope)),
    providerPermissions: row.providerPermissions,
    defaultProviderPermission: row.defaultProviderPermission,
    ...(row.knowledgeBaseIds ? { allowedKnowledgeBaseIds: row.knowledgeBaseIds } : {}),
    creditBalance: row.creditBalance,
  };
  return { actor, expiresAt: row.expiresAt };
}

/** Extracts the token from an Authorization header; undefined when absent or not a Bearer header. */
export function bearerFrom(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}
