import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RouteAuthConfig } from '../http/types.ts';
import { type Actor, type PublicContext, SESSION_ONLY_MESSAGE, type ServiceContext } from '../lib/context.ts';
import { CreditsExhaustedError, ForbiddenError, UnauthorizedError } from '../lib/errors.ts';
import { leasedCredits } from '../modules/credits/service.ts';
import { type BearerVerifier, bearerFrom, resolveBearer } from './tokens.ts';

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
 * read for a refused request.
 */
export function registerAuthGuard(app: FastifyInstance, verifiers: BearerVerifier[] = []): void {
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

  const refusals = new WeakMap<FastifyRequest, unknown>();
  app.addHook('onRequest', async (req) => {
    try {
      await guard(req);
    } catch (err) {
      refusals.set(req, err);
    }
  });
  app.addHook('preParsing', async (req) => {
    if (refusals.has(req)) throw refusals.get(req);
  });

  async function guard(req: FastifyRequest): Promise<void> {
    const config = req.routeOptions.config as RouteAuthConfig;
    const mode = authModeOf(req.routeOptions.url, config);
    const token = bearerFrom(req.headers.authorization);
    if (mode === 'public') {
      // A public route may still use an optional identity; a bad token there is ignored, not an error.
      if (token) {
        req.actor = await resolveBearer(app.deps.database.db, token, verifiers, app.deps.actorCache, {
          path: req.url,
        }).catch(() => null);
      }
      return;
    }
    if (!token) throw new UnauthorizedError('Missing bearer token (Authorization: Bearer <token>)');
    const resolved = await resolveBearer(app.deps.database.db, token, verifiers, app.deps.actorCache, {
      path: req.url,
    });
    // Credits this instance leased for the account count as balance (they left the stored one); a copy, as
    // the resolved actor may be cached and shared.
    const leased = leasedCredits(app.deps, resolved.accountId);
    const actor = leased ? { ...resolved, creditBalance: resolved.creditBalance + leased } : resolved;
    req.actor = actor;
    if (mode === 'session' && actor.kind !== 'session') {
      throw new ForbiddenError(SESSION_ONLY_MESSAGE);
    }
    const scopes = config.scopes ?? [];
    if (scopes.length && !scopes.some((s) => actor.scopes.has(s))) {
      throw new ForbiddenError(`Missing required scope: ${scopes.join(' or ')}`);
    }
    if (config.creditGuard && actor.creditBalance <= 0) {
      throw new CreditsExhaustedError('Insufficient credits: the balance is exhausted; add credits to continue');
    }
  }
}
