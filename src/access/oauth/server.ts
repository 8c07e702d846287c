import { createLocalJWKSet, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import type Provider from 'oidc-provider';
import type { Actor, Deps } from '../../context.ts';
import { TokenExpiredError, UnauthorizedError } from '../../lib/errors.ts';
import { sha256Hex } from '../../lib/ids.ts';
import type { Scope } from '../scopes.ts';
import type { BearerTarget } from '../tokens.ts';
import { currentKeyIds, type KeySet, loadKeySet, retireAfterSeconds } from './keys.ts';
import { effectiveClientScopes, KNOWLEDGE_BASES_PARAM, knowledgeBaseLimit, resourceForPath } from './policy.ts';
import { createProvider } from './provider.ts';
import { grantKnowledgeBases, grantOfToken, revokeGrantArtifacts, setGrantKnowledgeBases } from './repo.ts';

const KEY_CHECK_INTERVAL_MS = 60_000;
/** An unknown `kid` reloads the keys at most this often (a rotation on another instance). */
const UNKNOWN_KID_RELOAD_MS = 5_000;

/**
 * The authorization server of one app instance: oidc-provider over our keys and storage, and the resource
 * server side (JWT access token verification for the auth guard). Keys are re-read every minute, so a
 * `switchboard keys rotate` reaches running instances without a restart.
 */
type ProviderState = { provider: Provider; handler: ReturnType<Provider['callback']> };

export class OAuthServer {
  /** The keys, and the provider built over them on first use (see createProvider). */
  private current: { keys: KeySet; provider?: Promise<ProviderState> } | undefined;
  private jwks: ReturnType<typeof createLocalJWKSet> | undefined;
  private stamp = '';
  private lastKidMiss = 0;
  private keyCheck: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: Deps,
    /** The HTML page of a sign-in request that failed (the pages' error page: the app gives it). */
    private readonly errorPage: (title: string, message: string) => string,
  ) {}

  async init(): Promise<void> {
    await this.reload();
    // Each instance's own copy of the keys: a rotation elsewhere reaches it within a minute. (Expired
    // artifacts are swept by the recurring job oauth.sweep-expired.)
    this.keyCheck = setInterval(() => {
      this.reloadIfRotated().catch((err: unknown) => this.deps.log.warn({ err }, 'signing key check failed'));
    }, KEY_CHECK_INTERVAL_MS);
    this.keyCheck.unref();
  }

  close(): void {
    clearInterval(this.keyCheck);
  }

  private state() {
    if (!this.current) throw new Error('OAuth server not initialised');
    return this.current;
  }

  /** The oidc-provider instance over the current keys, built on the first call. */
  async provider(): Promise<Provider> {
    return (await this.providerState()).provider;
  }

  /** The node request handler of the current provider. */
  async handler(): Promise<ReturnType<Provider['callback']>> {
    return (await this.providerState()).handler;
  }

  private providerState(): Promise<ProviderState> {
    const state = this.state();
    state.provider ??= createProvider(this.deps, state.keys, {
      onGrantRevoked: (id) => this.evictGrant(id),
      revokeAccessToken: (token, clientId) => this.revokeAccessToken(token, clientId),
      errorPage: this.errorPage,
    }).then(
      (provider) => ({ provider, handler: provider.callback() }),
      (err: unknown) => {
        // Not cached: the next request tries again.
        state.provider = undefined;
        throw err;
      },
    );
    return state.provider;
  }

  get keys(): KeySet {
    return this.state().keys;
  }

  /** Reads the keys; the provider is rebuilt over them on its next use (cheap: its state is in the database). */
  async reload(): Promise<void> {
    const { database, keyRing } = this.deps;
    const stamp = await currentKeyIds(database.db);
    const keys = await loadKeySet(database.db, keyRing, retireAfterSeconds(this.deps));
    this.current = { keys };
    this.jwks = createLocalJWKSet({
      keys: keys.published as unknown as Parameters<typeof createLocalJWKSet>[0]['keys'],
    });
    this.stamp = stamp === '' ? await currentKeyIds(database.db) : stamp;
  }

  async reloadIfRotated(): Promise<boolean> {
    const stamp = await currentKeyIds(this.deps.database.db);
    if (stamp === this.stamp) return false;
    await this.reload();
    return true;
  }

  /** Forgets cached access-token actors of a grant (revoked, or its refresh token was reused). */
  evictGrant(grantId: string): void {
    this.deps.actorCache.evict({ tokenId: grantId });
  }

  /** Revokes a grant: its refresh tokens and codes go, and its access tokens stop working. */
  async revokeGrant(grantId: string): Promise<void> {
    await revokeGrantArtifacts(this.deps.database.db, grantId);
    this.evictGrant(grantId);
  }

  /** The knowledge bases a grant is limited to (null: all of the account's). */
  grantKnowledgeBases(grantId: string): Promise<string[] | null> {
    return grantKnowledgeBases(this.deps.database.db, grantId);
  }

  /**
   * Limits a grant to some knowledge bases (null lifts the limit). Tokens issued from now on carry it; tokens
   * already out are cut to it (never widened: they keep their own claim), here at once, elsewhere within the
   * actor cache's TTL.
   */
  async setGrantKnowledgeBases(grantId: string, ids: readonly string[] | null): Promise<void> {
    await setGrantKnowledgeBases(this.deps.database.db, grantId, ids);
    this.evictGrant(grantId);
  }

  /**
   * RFC 7009 for our JWT access tokens: one signed by us for this client (expired or not) revokes its grant.
   * Anything else is not ours to revoke: false.
   */
  async revokeAccessToken(token: string, clientId: string): Promise<boolean> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.jwks ?? createLocalJWKSet({ keys: [] }), {
        issuer: this.deps.config.baseUrl,
        typ: 'at+jwt',
        algorithms: ['RS256'],
        // An expired token may still be revoked: its grant (and refresh token) goes with it.
        currentDate: new Date(0),
      }));
    } catch {
      return false;
    }
    if (payload.client_id !== clientId || typeof payload.gid !== 'string') return false;
    await this.revokeGrant(payload.gid);
    return true;
  }

  /**
   * The auth guard's verifier for our JWT access tokens: signature (RS256, a published key), `typ` at+jwt,
   * issuer, expiry (TokenExpiredError), audience = the resource the request addresses, and a live grant
   * (revocation and refresh-token reuse end access at once). Scopes are the token's, cut to what the client's
   * roles allow now.
   */
  verifyBearer = async (token: string, target: BearerTarget): Promise<Actor | undefined> => {
    if (token.split('.').length !== 3) return undefined;
    let typ: string | undefined;
    try {
      typ = decodeProtectedHeader(token).typ;
    } catch {
      return undefined;
    }
    if (typ !== 'at+jwt') return undefined;
    const { config, actorCache } = this.deps;
    const expected = resourceForPath(config, target.path).id;
    const hash = sha256Hex(token);
    const cached = actorCache.get(hash);
    if (cached) {
      if (cached.audience !== expected) throw wrongAudience(cached.audience ?? '', expected);
      return cached;
    }
    const payload = await this.verifySignature(token);
    const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud ?? ''];
    if (!aud.includes(expected)) throw wrongAudience(aud.join(', '), expected);
    const gid = typeof payload.gid === 'string' ? payload.gid : '';
    const row = await this.grantRow(gid);
    if (!row || row.accountId !== payload.sub || row.clientId !== payload.client_id) {
      throw new UnauthorizedError('Access token revoked');
    }
    const allowed = new Set<string>(effectiveClientScopes(row.allowedScopes, row.roles));
    const scopes = new Set(
      String(payload.scope ?? '')
        .split(' ')
        .filter((s): s is Scope => allowed.has(s)),
    );
    const claim = payload[KNOWLEDGE_BASES_PARAM];
    const limit = knowledgeBaseLimit(
      Array.isArray(claim) ? claim.filter((id): id is string => typeof id === 'string') : undefined,
      row.knowledgeBaseIds,
    );
    const actor: Actor = {
      kind: 'oauth',
      accountId: row.accountId,
      tokenId: gid,
      scopes,
      providerPermissions: {},
      defaultProviderPermission: 'read-write',
      clientId: row.clientId,
      clientRoles: row.roles,
      audience: expected,
      ...(limit ? { allowedKnowledgeBaseIds: limit } : {}),
      creditBalance: row.creditBalance,
    };
    actorCache.set(hash, actor, (payload.exp ?? 0) * 1000);
    return actor;
  };

  private async verifySignature(token: string): Promise<JWTPayload> {
    const verify = () =>
      jwtVerify(token, this.jwks ?? createLocalJWKSet({ keys: [] }), {
        issuer: this.deps.config.baseUrl,
        typ: 'at+jwt',
        algorithms: ['RS256'],
      });
    try {
      return (await verify()).payload;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ERR_JWKS_NO_MATCHING_KEY' && Date.now() - this.lastKidMiss > UNKNOWN_KID_RELOAD_MS) {
        // Perhaps a key another instance has just rotated in.
        this.lastKidMiss = Date.now();
        if (await this.reloadIfRotated()) return this.verifySignature(token);
      }
      if (code === 'ERR_JWT_EXPIRED') throw new TokenExpiredError('Access token expired; use the refresh token');
      throw new UnauthorizedError('Invalid access token');
    }
  }

  private async grantRow(grantId: string) {
    if (!grantId) return undefined;
    const row = await grantOfToken(this.deps.database.db, grantId);
    if (!row?.accountId || !row.clientId) return undefined;
    return { ...row, accountId: row.accountId, clientId: row.clientId };
  }
}

function wrongAudience(got: string, expected: string): UnauthorizedError {
  return new UnauthorizedError(`Access token was issued for another resource (${got}); this endpoint is ${expected}`);
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The authorization server of this app (keys, provider, grant revocation). */
    oauth: OAuthServer;
  }
}
