import { z } from 'zod';
import type { App } from '../../http/types.ts';
import { BadRequestError } from '../../lib/errors.ts';
import { sha256Hex } from '../../lib/ids.ts';
import { paginated } from '../../lib/pagination.ts';
import { send as sendPage } from '../../web/common.ts';
import { staleCallbackPage } from '../../web/connection-callback-page.ts';
import { BINDING_COOKIE_PATH, bindingCookieName } from './browser-binding.ts';
import * as connect from './connect.service.ts';
import { executeProviderTool } from './provider-tools.ts';
import {
  AuthorizeQuery,
  CallbackQuery,
  Connection,
  ConnectionParams,
  ExecuteBody,
  ExecuteParams,
  ExecuteResponse,
  FinalizeBody,
  FinalizeResponse,
  FromCatalogCreate,
  FromCatalogInitiate,
  InitiateConnection,
  InitiateResponse,
  ListConnectionsQuery,
  PendingFields,
  PendingParams,
} from './schema.ts';
import * as service from './service.ts';
import { connectionSettings } from './settings.ts';

/** `/api/v1/connections*` (SPEC §4 Connections) and `POST /providers/:providerId/tools/:toolName/execute`. */
export async function connectionRoutes(app: App): Promise<void> {
  // Bad PROVIDER_* settings stop start-up, naming each variable.
  connectionSettings(app.deps.config);
  const tags = ['Connections'];
  const scopes = ['connections' as const];

  app.get(
    '/connections',
    {
      schema: {
        tags,
        summary: "The account's connections (first-party app and white-label clients only)",
        querystring: ListConnectionsQuery,
        response: { 200: paginated(Connection) },
      },
      config: { scopes },
    },
    (req) => service.listConnections(req.ctx, req.query),
  );

  app.post(
    '/connections/initiate',
    {
      schema: {
        tags,
        summary: 'Start connecting a provider: answers the URL to send the user to',
        body: InitiateConnection,
        response: { 200: InitiateResponse },
      },
      config: { scopes },
    },
    (req) => connect.initiateConnection(req.ctx, req.body),
  );

  app.get(
    '/connections/authorize',
    {
      schema: {
        tags,
        summary: "Open in the user's browser: binds the authorization to it (a cookie), then redirects to the provider",
        description:
          'The `authorizationUrl` of the initiate answers. Works once per state: the browser that opens it is the only ' +
          'one whose callback completes the connection. 400 for an unknown, expired, used or already opened state.',
        querystring: AuthorizeQuery,
      },
      config: { auth: 'public' },
    },
    async (req, reply) => {
      const { providerUrl, cookie } = await connect.beginAuthorization(req.publicCtx, req.query.state);
      reply.setCookie(cookie.name, cookie.value, {
        path: BINDING_COOKIE_PATH,
        httpOnly: true,
        sameSite: 'lax',
        secure: app.deps.config.baseUrl.startsWith('https:'),
        maxAge: cookie.maxAgeSeconds,
      });
      return reply.redirect(providerUrl, 302);
    },
  );

  app.get(
    '/connections/callback',
    {
      schema: {
        tags,
        summary: 'OAuth redirect target of the providers (public): redirects to the redirectUrl given at initiate',
        description:
          'Completes the connection only in the browser that opened the `authorizationUrl` (its cookie); otherwise it ' +
          'redirects with `error=access_denied` and makes no connection.',
        querystring: CallbackQuery,
      },
      config: { auth: 'public' },
    },
    async (req, reply) => {
      let target: string;
      try {
        target = await connect.completeAuthorization(req.publicCtx, req.query, req.cookies);
      } catch (err) {
        // A person's browser on a stale or copied link: a page saying what to do rather than a JSON body.
        if (err instanceof BadRequestError && String(req.headers.accept ?? '').includes('text/html')) {
          return sendPage(reply, staleCallbackPage(), 400);
        }
        throw err;
      }
      if (req.query.state) {
        reply.clearCookie(bindingCookieName(sha256Hex(req.query.state)), { path: BINDING_COOKIE_PATH });
      }
      return reply.redirect(target, 302);
    },
  );

  app.get(
    '/connections/pending/:pendingId/fields',
    {
      schema: {
        tags,
        summary: 'Fields the provider still needs to finalize a connection (public: the id is the secret)',
        params: PendingParams,
        response: { 200: PendingFields },
      },
      config: { auth: 'public' },
    },
    (req) => connect.getPendingFields(req.publicCtx, req.params.pendingId),
  );

  app.post(
    '/connections/pending/:pendingId/finalize',
    {
      schema: {
        tags,
        summary: 'Finalize a pending connection with its fields (public, single use)',
        params: PendingParams,
        body: FinalizeBody,
        response: { 200: FinalizeResponse },
      },
      config: { auth: 'public' },
    },
    (req) => connect.finalizePending(req.publicCtx, req.params.pendingId, req.body),
  );

  app.post(
    '/connections/from-catalog/initiate-oauth',
    {
      schema: {
        tags,
        summary: 'Start OAuth for a catalog entry (a provider id)',
        body: FromCatalogInitiate,
        response: { 200: InitiateResponse },
      },
      config: { scopes },
    },
    (req) => connect.initiateFromCatalog(req.ctx, req.body),
  );

  app.post(
    '/connections/from-catalog',
    {
      schema: {
        tags,
        summary: 'Create a connection from a bearer token the provider issued (cannot be refreshed)',
        body: FromCatalogCreate,
        response: { 201: Connection },
      },
      config: { scopes },
    },
    async (req, reply) => reply.code(201).send(await connect.createFromCatalog(req.ctx, req.body)),
  );

  app.get(
    '/connections/:connectionId',
    {
      schema: {
        tags,
        summary: 'One connection (first-party app and white-label clients only)',
        params: ConnectionParams,
        response: { 200: Connection },
      },
      config: { scopes },
    },
    (req) => service.getConnection(req.ctx, req.params.connectionId),
  );

  app.put(
    '/connections/:connectionId/refresh',
    {
      schema: {
        tags,
        summary: "Refresh the connection's token now; answers the connection with its new status",
        params: ConnectionParams,
        response: { 200: Connection },
      },
      config: { scopes },
    },
    (req) => service.refreshConnection(req.ctx, req.params.connectionId),
  );

  app.delete(
    '/connections/:connectionId',
    {
      schema: {
        tags,
        summary: 'Delete the connection and revoke its token at the provider where it can',
        params: ConnectionParams,
        response: { 204: z.undefined() },
      },
      config: { scopes },
    },
    async (req, reply) => {
      await service.deleteConnection(req.ctx, req.params.connectionId);
      return reply.code(204).send();
    },
  );

  app.post(
    '/providers/:providerId/tools/:toolName/execute',
    {
      schema: {
        tags: ['Providers'],
        summary: 'Run one provider tool on one of your connections, without an agent',
        params: ExecuteParams,
        body: ExecuteBody,
        response: { 200: ExecuteResponse },
      },
      config: { scopes },
    },
    async (req) => {
      const { providerId, toolName } = req.params;
      const { connectionId } = req.body;
      const result = await executeProviderTool(req.ctx, {
        providerId,
        toolName,
        connectionId,
        arguments: req.body.arguments,
      });
      return { providerId, toolName, connectionId, result };
    },
  );
}
