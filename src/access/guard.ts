import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Actor, type Deps, type PublicContext, SESSION_ONLY_MESSAGE, type ServiceContext } from '../context.ts';
import type { RouteAuthConfig } from '../http/types.ts';
import { AppError, CreditsExhaustedError, ForbiddenError, UnauthorizedError } from '../lib/errors.ts';
import { type BearerVerifier, bearerFrom, resolveBearer } from './tokens.ts';

/** A token sent as `x-api-key` (one value, no spaces), for the routes that accept it. */
function apiKeyOf(req: FastifyRequest): string | undefined {
  const key = req.headers['x-api-key'];
  return typeof key === 'string' && /^\S+$/.test(key) ? key : undefined;
}

/** Routes under /api require a bearer unless they say `auth: 'public'`; elsewhere the default is public. */
export function authModeOf(url: string | undefined, config: RouteAuthConfig): 'public' | 'bearer' | 'session' {
  return config.auth ?? (url?.startsWith('/api/') ? 'bearer' : 'public');
}

export function publicContextOf(req: FastifyRequest): PublicContext {
  return {
    deps: req.server.deps,
    db: req.server.deps.database.db,
    log: req.log,
    requestId: req.id,
    ip: req.ip,
    userAgent: req.headers['user-agent'],
  };
}

/** The public context with the caller added in place: one object per request, not a copy of it. */
export function serviceContextOf(req: FastifyRequest, actor: Actor): ServiceContext {
  return Object.assign(publicContextOf(req), { accountId: actor.accountId, actor, scopes: actor.scopes });
}

/**
 * The auth guard: resolves the bearer, then enforces the route's declared scopes (any-of) and the credit
 * guard. It resolves in onRequest, before rate limiting, so limits key on the actor; a refusal is thrown only
 * in preParsing, after the route's limiter (a route-level onRequest hook) has counted the request: callers
 * with no token or a bad one are limited per address instead of trying without limit. The body is still not
 * read for a refused request. A look-up that failed for want of the database (not a refusal, which is always an
 * AppError) fails the request in onRequest itself, before any limiter: the fault is ours, and the caller's
 * budget is not spent on it (issue 39: clients were locked out with 429 after an outage).
 */
export function registerAuthGuard(
  app: FastifyInstance,
  verifiers: BearerVerifier[],
  /**
   * Credits' `leasedCredits` (what this instance leased for an account) and `availableCredits` (the stored
   * balance read afresh with them), given by the app.
   */
  credits: {
    leased: (deps: Deps, accountId: string) => number;
    available: (deps: Deps, accountId: string) => Promise<number | undefined>;
  },
): void {
  app.decorateRequest('actor', null);
  app.decorateRequest('ctx', {
    getter(this: FastifyRequest) {
      if (!this.actor) throw new UnauthorizedError();
      return serviceContextOf(this, this.actor);
    },
  });
  app.decorateRequest('publicCtx', {
    getter(this: FastifyRequest) {
      return publicContextOf(this);
    },
  });

  // Callback hooks, not async ones: a request whose token the cache holds passes both without a promise.
  const refusals = new WeakMap<FastifyRequest, unknown>();
  app.addHook('onRequest', (req, _reply, done) => {
    let resolving: Promise<void> | undefined;
    try {
      resolving = guard(req);
    } catch (err) {
      refusals.set(req, err);
    }
    if (!resolving) return done();
    resolving.then(
      () => done(),
      (err: unknown) => {
        if (!(err instanceof AppError)) return done(err as Error);
        refusals.set(req, err);
        done();
      },
    );
  });
  app.addHook('preParsing', (req, _reply, _payload, done) => done(refusals.get(req) as Error | undefined));

  /** Admits or refuses the request; a promise only while its token is read (not cached, or not our own kind). */
  function guard(req: FastifyRequest): Promise<void> | undefined {
    const { config, url } = req.routeOptions as { config: RouteAuthConfig; url: string | undefined };
    const mode = authModeOf(url, config);
    const token = bearerFrom(req.headers.authorization) ?? (config.apiKeyHeader ? apiKeyOf(req) : undefined);
    if (!token) {
      if (mode === 'public') return undefined;
      throw new UnauthorizedError('Missing bearer token (Authorization: Bearer <token>)');
    }
    const resolved = resolveBearer(app.deps.database.db, token, verifiers, app.deps.actorCache, { path: req.url });
    if (mode === 'public') {
      // A public route may still use an optional identity; a bad token there is ignored, not an error.
      if (!(resolved instanceof Promise)) {
        req.actor = resolved;
        return undefined;
      }
      return resolved.then(
        (actor) => {
          req.actor = actor;
        },
        (err: unknown) => {
          // Only a refused token is ignored here; a database fault still fails the request (uncounted).
          if (!(err instanceof AppError)) throw err;
          req.actor = null;
        },
      );
    }
    if (resolved instanceof Promise) return resolved.then((actor) => admit(req, mode, config, actor));
    return admit(req, mode, config, resolved);
  }

  function admit(
    req: FastifyRequest,
    mode: 'bearer' | 'session',
    config: RouteAuthConfig,
    resolved: Actor,
  ): Promise<void> | undefined {
    // Credits this instance leased for the account count as balance (they left the stored one); a copy, as
    // the resolved actor may be cached and shared.
    const leased = credits.leased(app.deps, resolved.accountId);
    const actor = leased ? { ...resolved, creditBalance: resolved.creditBalance + leased } : resolved;
    req.actor = actor;
    if (mode === 'session' && actor.kind !== 'session') {
      throw new ForbiddenError(SESSION_ONLY_MESSAGE);
    }
    const scopes = config.scopes ?? [];
    if (scopes.length && !scopes.some((s) => actor.scopes.has(s))) {
      throw new ForbiddenError(`Missing required scope: ${scopes.join(' or ')}`);
    }
    if (config.creditGuard && actor.creditBalance <= 0) return confirmExhausted(req, actor);
    return undefined;
  }

  /**
   * The balance a token's look-up brought is a hint (cached for AUTH_CACHE_TTL_MS, or read while a lease of
   * this instance was being handed back): it may admit, the credit bank then decides; a refusal is confirmed
   * against the balance read now, so credits that came back or were added meanwhile are never refused.
   */
  async function confirmExhausted(req: FastifyRequest, actor: Actor): Promise<void> {
    const balance = (await credits.available(app.deps, actor.accountId)) ?? 0;
    if (balance <= 0) {
      throw new CreditsExhaustedError();
    }
    req.actor = { ...actor, creditBalance: balance };
  }
}
