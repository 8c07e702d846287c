import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import Fastify, { type FastifyServerOptions, LogController } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { registerAuthGuard } from './access/guard.ts';
import { oauthRoutes } from './access/oauth/routes.ts';
import { OAuthServer } from './access/oauth/server.ts';
import type { BearerVerifier } from './access/tokens.ts';
import { JOB_CATALOG } from './composition.ts';
import type { Config } from './config.ts';
import type { Deps } from './context.ts';
import type { Database } from './db/client.ts';
import { DatabaseOutage } from './http/database-outage.ts';
import { frameworkErrorHandler, registerErrorHandler } from './http/error-handler.ts';
import { useJsonBodyParser } from './http/json-body.ts';
import { countRequests, registerMetrics } from './http/metrics.ts';
import { registerOpenApi } from './http/openapi.ts';
import { registerRateLimit } from './http/rate-limit.ts';
import { requestTimeouts } from './http/request-timeout.ts';
import { registerTracing } from './http/tracing.ts';
import type { App, RouteAuthConfig } from './http/types.ts';
import { type JobCatalog, validateCatalog } from './jobs/definition.ts';
import { JobRunner } from './jobs/runner.ts';
import type { KeyRing } from './lib/crypto.ts';
import { databaseUnavailable, NotFoundError, ServiceUnavailableError } from './lib/errors.ts';
import { newId } from './lib/ids.ts';
import { RequestLogger } from './lib/logger.ts';
import { redactUrl } from './lib/redact.ts';
import { openRedis } from './lib/redis.ts';
import { startTracing } from './lib/tracing.ts';
import { mcpRoutes } from './mcp/endpoint.ts';
import type { McpSources } from './mcp/server.ts';
import { connectionSources } from './mcp/sources.ts';
import { accountRoutes } from './modules/accounts/index.ts';
import { activityRoutes } from './modules/activity/index.ts';
import { agentRoutes, failOrphanedRuns, recoverConversationRows } from './modules/agents/index.ts';
import { authRoutes } from './modules/auth/index.ts';
import { authClientRoutes } from './modules/auth-clients/index.ts';
import { channelRoutes, webchatWidgetRoutes } from './modules/channels/index.ts';
import { connectionRoutes, listConnectionTools, searchProviderTools } from './modules/connections/index.ts';
import {
  availableCredits,
  closeCredits,
  creditRoutes,
  creditStats,
  leasedCredits,
  recoverCharges,
} from './modules/credits/index.ts';
import { toolRoutes } from './modules/custom-tools/index.ts';
import { knowledgeRoutes } from './modules/knowledge/index.ts';
import { llmRoutes } from './modules/llm/index.ts';
import { providerCatalog, providerLogoRoutes, providerRoutes } from './modules/providers/index.ts';
import { scheduledTaskRoutes } from './modules/scheduled-tasks/index.ts';
import { skillRoutes } from './modules/skills/index.ts';
import { scopeRoutes, systemRoutes } from './modules/system/index.ts';
import { webhookRoutes } from './modules/webhooks/index.ts';
import { createDeps } from './runtime.ts';
import { send } from './web/common.ts';
import { guideRoutes } from './web/guide-routes.ts';
import { errorPage } from './web/pages.ts';
import { webRoutes } from './web/routes.ts';

export interface BuildAppOptions {
  config: Config;
  database: Database;
  keyRing: KeyRing;
  /** Replaces the JSON logger (tests pass `false` or a stream). */
  logger?: FastifyServerOptions['logger'];
  verifiers?: BearerVerifier[];
  /** Where /mcp's tools read connections and provider tools (default: the connections module). */
  mcpSources?: McpSources;
  /** Sees every route as it is registered (tests list what the app serves). */
  onRoute?: (route: { method: string | string[]; url: string; config?: RouteAuthConfig }) => void;
  /** The job types this instance runs and schedules (default: the service's catalog; tests add their own). */
  jobCatalog?: JobCatalog;
  /** The built documentation site served at /guide/ (default: docs/.vitepress/dist under the working directory). */
  guideDir?: string;
}

/** Log levels at which the per-request line is written. */
const INFO_LEVELS = new Set(['trace', 'debug', 'info']);
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Paths whose 404 is always the JSON body, whatever the client accepts. */
const API_PATH = /^\/(api|mcp|oauth|auth|\.well-known|healthz|readyz|metrics|openapi\.json|docs|providers)(\/|$)/;

/** A zod schema that accepts anything (`z.unknown()`, `z.any()`). */
function isUnknownSchema(schema: unknown): boolean {
  return schema instanceof z.ZodUnknown || schema instanceof z.ZodAny;
}

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]', '*.password', '*.token'],
      censor: '[REDACTED]',
    },
    serializers: {
      req: (req: { method: string; url: string; ip?: string }) => ({
        method: req.method,
        url: redactUrl(req.url),
        ip: req.ip,
      }),
    },
  };
}

/** Answered even while the database is known to be down. */
const OPERATIONS_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

/** Assembles the HTTP service over an open, migrated database. Does not listen. */
export async function buildApp(opts: BuildAppOptions): Promise<App> {
  const { config, database } = opts;
  // The connector catalog is validated before anything starts: a bad provider file stops start-up.
  providerCatalog(config);
  const timeouts = requestTimeouts(config);
  const fastify = Fastify({
    logger: opts.logger ?? loggerOptions(config.logLevel),
    // A hop count trusts that many proxies in front of us.
    trustProxy:
      typeof config.trustProxy === 'number'
        ? (_addr: string, hop: number) => hop < (config.trustProxy as number)
        : config.trustProxy,
    bodyLimit: config.bodyLimitBytes,
    requestTimeout: config.requestTimeoutMs,
    // Node reads the time-out when the server is made (fastify's later assignment alone does not apply it), and
    // checks it this often (its default, 30 s, would let a slow body run a minute).
    http: {
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, config.requestTimeoutMs),
    },
    clientErrorHandler: timeouts.clientErrorHandler,
    // One log line per request, written by our onResponse hook with secrets redacted.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings, options) => new RequestLogger(logger, bindings, options),
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : newId('request');
    },
    frameworkErrors: frameworkErrorHandler,
    forceCloseConnections: 'idle',
    // Our onRequest hook answers requests that arrive while closing, with the §7 body and a request id.
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: true },
  });
  fastify.setValidatorCompiler(validatorCompiler);
  // A response declared `z.unknown()` (the chat completion: the upstream's shape, passed on) is written as it is:
  // the type provider's check of it always passes, and showed in the gateway's CPU profile (docs/gateway-speed.md).
  fastify.setSerializerCompiler<Parameters<typeof serializerCompiler>[0]['schema']>((route) =>
    isUnknownSchema(route.schema) ? (data: unknown) => JSON.stringify(data) : serializerCompiler(route),
  );
  // No route reads text/plain: such a body is a 415, not a string that fails the schema with a 422.
  fastify.removeContentTypeParser('text/plain');
  useJsonBodyParser(fastify);
  const app = fastify.withTypeProvider<ZodTypeProvider>();

  if (opts.onRoute) app.addHook('onRoute', opts.onRoute);
  // Tracing starts before the dependencies, which instrument themselves only when it is on.
  const stopTracing = config.tracing && (await startTracing(config.tracing));
  if (stopTracing) registerTracing(app);
  const redis = await openRedis(config, app.log);
  const deps: Deps = createDeps(config, { database, keyRing: opts.keyRing, redis }, app.log);
  app.decorate('deps', deps);
  const requests = countRequests(app);

  let closing = false;
  const outage = new DatabaseOutage(database, app.log);
  timeouts.watch(app.server);
  app.addHook('preClose', async () => {
    closing = true;
    timeouts.closing();
  });
  // The hooks every request passes take a callback rather than being async: an async hook costs each request a
  // promise and a turn of the microtask queue.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('X-Request-Id', req.id);
    // A request on a kept-alive connection after shutdown began: the client retries on a new connection
    // (to another instance, or to this one once it is back).
    if (closing) {
      reply.header('Connection', 'close').header('Retry-After', '1');
      return done(new ServiceUnavailableError('The service is shutting down; retry'));
    }
    // The database is known to be down: 503 before the guard and the limiters, so no budget is spent. The
    // operations endpoints still answer (/readyz finds out for itself).
    if (outage.down && !OPERATIONS_ROUTES.has(req.routeOptions.url ?? '')) return done(databaseUnavailable());
    done();
  });
  // The request's line goes through one child of the service's logger made here, with no redaction of its own:
  // the line's fields are primitives made below (the URL already redacted), which no redact path (two levels deep
  // or more) can match, while pino runs every value of a line through its redaction, strings included, and the
  // request's own child logger would be made for this line alone: both showed per request at LOG_LEVEL=info
  // (docs/gateway-speed.md). The line is the same: the request id first, then the fields.
  const requestLines = app.log.child({}, { redact: [] });
  app.addHook('onResponse', (req, reply, done) => {
    // Nothing to build when the line would not be written.
    if (INFO_LEVELS.has(req.log.level)) {
      requestLines.info(
        {
          reqId: req.id,
          method: req.method,
          url: redactUrl(req.url),
          statusCode: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 10) / 10,
          accountId: req.actor?.accountId,
        },
        'request',
      );
    }
    done();
  });
  registerErrorHandler(app, () => outage.report());
  // The authorization server's JWT access tokens are one more kind of bearer the guard accepts.
  const oauth = new OAuthServer(deps, errorPage);
  app.decorate('oauth', oauth);
  registerAuthGuard(app, [...(opts.verifiers ?? []), oauth.verifyBearer], {
    leased: leasedCredits,
    available: availableCredits,
  });
  await registerRateLimit(app, config, redis);
  await app.register(cookie);
  await app.register(formbody);
  await registerOpenApi(app, config);
  registerMetrics(app, database, requests, creditStats);

  await systemRoutes(app, () => outage.answered());
  await oauth.init();
  await oauthRoutes(app, oauth);
  await webRoutes(app, oauth);
  await mcpRoutes(app, config, opts.mcpSources ?? connectionSources);
  await providerLogoRoutes(app);
  await webchatWidgetRoutes(app);
  await guideRoutes(app, opts.guideDir);
  await app.register(
    async (api) => {
      const v1 = api.withTypeProvider<ZodTypeProvider>();
      await accountRoutes(v1);
      await authRoutes(v1, config);
      await scopeRoutes(v1);
      await activityRoutes(v1);
      await creditRoutes(v1);
      await knowledgeRoutes(v1);
      await agentRoutes(v1, config);
      await scheduledTaskRoutes(v1);
      await llmRoutes(v1, config);
      await authClientRoutes(v1);
      await providerRoutes(v1, { searchProviderTools, listConnectionTools });
      await connectionRoutes(v1);
      await channelRoutes(v1, config);
      await toolRoutes(v1);
      await skillRoutes(v1);
      await webhookRoutes(v1);
    },
    { prefix: '/api/v1' },
  );

  app.setNotFoundHandler(
    { preHandler: redis || config.rateLimits.enabled ? app.rateLimit() : undefined },
    (req, reply) => {
      const path = req.url.split('?')[0] ?? '';
      // A browser asking for a page gets a page; API clients (and every API path) get the §7 body.
      if (req.method === 'GET' && !API_PATH.test(path) && String(req.headers.accept ?? '').includes('text/html')) {
        return send(reply, errorPage('Page not found', 'There is no page at this address.'), 404);
      }
      throw new NotFoundError(`Route ${req.method} ${path} not found`);
    },
  );
  // Jobs start once the app is ready, without delaying it (the first poll runs in the background), and stop
  // when it closes: running jobs get until the shutdown deadline, then their lease hands them to another worker.
  const jobCatalog = opts.jobCatalog ?? JOB_CATALOG;
  validateCatalog(jobCatalog);
  const jobs = config.jobs.enabled ? new JobRunner(deps, jobCatalog) : undefined;
  app.decorate('jobs', jobs);
  // The first listing of LLM_BASE_URL's models (bounded by DISCOVERY_TIMEOUT_MS) ends before requests arrive.
  app.addHook('onReady', async () => deps.llm.ready);
  // Charges journaled during a database outage by an instance that stopped before it ended (issue 39).
  app.addHook('onReady', async () => recoverCharges(deps));
  // Conversation rows the embedded database's journal kept when a process stopped (before the orphaned-turn sweep).
  app.addHook('onReady', async () => recoverConversationRows(deps));
  app.addHook('onReady', async () => jobs?.start());
  // Chat turns an instance that died left in flight are failed now, not at the next minute's sweep (in the
  // background: start-up does not wait on it).
  app.addHook('onReady', async () => {
    if (!jobs) return;
    deps.background.track(
      'failing orphaned agent runs',
      failOrphanedRuns(deps).then((failed) => {
        if (failed) deps.log.warn({ failed }, 'agent chat turns left by a stopped instance marked failed');
      }),
    );
  });
  app.addHook('onClose', async () => {
    outage.close();
    await jobs?.stop(config.shutdownTimeoutMs);
    oauth.close();
    await closeCredits(deps); // drains background work too, giving idle credit leases back at once
    await deps.background.drain();
    await deps.notifications.close();
    redis?.disconnect();
    await deps.sandbox.close();
    if (stopTracing) await stopTracing(); // the spans still buffered are exported
  });
  return app;
}
