import { z } from 'zod';
import type { App } from '../../http/types.ts';
import { listQuery, paginated } from '../../lib/pagination.ts';
import {
  AuthClient,
  ClientParams,
  ClientSecret,
  CreateAuthClient,
  CreatedAuthClient,
  UpdateAuthClient,
} from './schema.ts';
import * as service from './service.ts';

/**
 * SPEC §4 "Auth clients": the OAuth apps an account owns. Reading them takes `account`; changing them
 * (create, update, delete, rotate the secret) takes the account's own session, never a PAT or an OAuth token.
 */
export async function authClientRoutes(app: App): Promise<void> {
  const tags = ['Auth clients'];
  const config = { scopes: ['account' as const] };
  const sessionOnly = { auth: 'session' as const };

  app.post(
    '/auth-clients',
    {
      schema: {
        tags,
        summary: 'Create an OAuth client (session token only)',
        description: 'A confidential client gets a `clientSecret` in this answer only.',
        body: CreateAuthClient,
        response: { 201: CreatedAuthClient },
      },
      config: sessionOnly,
    },
    async (req, reply) => reply.code(201).send(await service.createAuthClient(req.ctx, req.body)),
  );
  app.get(
    '/auth-clients',
    {
      schema: {
        tags,
        summary: "List the account's OAuth clients (never their secrets)",
        querystring: listQuery(['createdAt', 'updatedAt']),
        response: { 200: paginated(AuthClient) },
      },
      config,
    },
    (req) => service.listAuthClients(req.ctx, req.query),
  );
  app.get(
    '/auth-clients/:clientId',
    { schema: { tags, summary: 'Get an OAuth client', params: ClientParams, response: { 200: AuthClient } }, config },
    (req) => service.getAuthClient(req.ctx, req.params.clientId),
  );
  app.put(
    '/auth-clients/:clientId',
    {
      schema: {
        tags,
        summary: 'Update an OAuth client (session token only)',
        description:
          'Any of name, roles, redirectUris, allowedScopes, branding. Issued tokens lose what is taken away at once.',
        params: ClientParams,
        body: UpdateAuthClient,
        response: { 200: AuthClient },
      },
      config: sessionOnly,
    },
    (req) => service.updateAuthClient(req.ctx, req.params.clientId, req.body),
  );
  app.delete(
    '/auth-clients/:clientId',
    {
      schema: {
        tags,
        summary: 'Delete an OAuth client and revoke everything issued to it (session token only)',
        params: ClientParams,
        response: { 204: z.undefined() },
      },
      config: sessionOnly,
    },
    async (req, reply) => {
      await service.deleteAuthClient(req.ctx, req.params.clientId);
      return reply.code(204).send();
    },
  );
  app.put(
    '/auth-clients/:clientId/secret',
    {
      schema: {
        tags,
        summary: 'Rotate the client secret (confidential clients; session token only)',
        description: 'The new secret is in this answer only; the old one stops working at once.',
        params: ClientParams,
        response: { 200: ClientSecret },
      },
      config: sessionOnly,
    },
    (req) => service.rotateAuthClientSecret(req.ctx, req.params.clientId),
  );
}
