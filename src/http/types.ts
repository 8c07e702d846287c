import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Scope } from '../access/scopes.ts';
import type { Actor, Deps, PublicContext, ServiceContext } from '../context.ts';
import type { JobRunner } from '../jobs/runner.ts';

/**
 * What a route declares besides its schemas. `auth` defaults to `bearer` under /api and `public` elsewhere;
 * `scopes` is any-of (a route open to `agents-all` or `agents-use` lists both).
 */
export interface RouteAuthConfig {
  auth?: 'public' | 'bearer' | 'session';
  scopes?: Scope[];
  /** SPEC §5 credit guard: 402 CreditsExhaustedError at a zero balance. */
  creditGuard?: boolean;
  /** The token may also come as `x-api-key` (the Anthropic SDK and Claude Code send it so). */
  apiKeyHeader?: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig extends RouteAuthConfig {}
  interface FastifyRequest {
    actor: Actor | null;
    /** The caller's service context; throws 401 on a public route with no token. */
    readonly ctx: ServiceContext;
    readonly publicCtx: PublicContext;
  }
  interface FastifyInstance {
    deps: Deps;
    /** This instance's job worker and scheduler; undefined when `JOBS_ENABLED=false`. */
    jobs: JobRunner | undefined;
  }
}

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;
