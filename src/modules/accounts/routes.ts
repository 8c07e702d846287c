import { z } from 'zod';
import type { App } from '../../http/types.ts';
import { Account, AccountParams, UpdateAccount } from './schema.ts';
import * as service from './service.ts';

export async function accountRoutes(app: App): Promise<void> {
  const tags = ['Accounts'];
  const scopes = ['account' as const];

  app.get(
    '/accounts/me',
    { schema: { tags, summary: 'The calling account', response: { 200: Account } }, config: { scopes } },
    (req) => service.getAccount(req.ctx, 'me'),
  );
  app.put(
    '/accounts/me',
    {
      schema: { tags, summary: 'Update the calling account', body: UpdateAccount, response: { 200: Account } },
      config: { scopes },
    },
    (req) => service.updateAccount(req.ctx, 'me', req.body),
  );
  app.get(
    '/accounts/:accountId',
    {
      schema: { tags, summary: 'One account (only your own)', params: AccountParams, response: { 200: Account } },
      config: { scopes },
    },
    (req) => service.getAccount(req.ctx, req.params.accountId),
  );
  app.put(
    '/accounts/:accountId',
    {
      schema: {
        tags,
        summary: 'Update an account',
        params: AccountParams,
        body: UpdateAccount,
        response: { 200: Account },
      },
      config: { scopes },
    },
    (req) => service.updateAccount(req.ctx, req.params.accountId, req.body),
  );
  app.delete(
    '/accounts/:accountId',
    {
      schema: {
        tags,
        summary: 'Delete an account and everything it owns (session token only)',
        params: AccountParams,
        response: { 204: z.undefined() },
      },
      config: { auth: 'session' },
    },
    async (req, reply) => {
      await service.deleteAccount(req.ctx, req.params.accountId);
      return reply.code(204).send();
    },
  );
  app.get(
    '/accounts/:accountId/avatar',
    {
      schema: {
        tags,
        summary: 'Avatar image: the uploaded one, a redirect to its URL, or generated initials (SVG)',
        params: AccountParams,
      },
    },
    async (req, reply) => {
      const result = await service.getAvatar(req.ctx, req.params.accountId);
      if ('redirect' in result) return reply.redirect(result.redirect, 302);
      return reply
        .type(result.image.contentType)
        .header('Cache-Control', 'private, max-age=300')
        .header('X-Content-Type-Options', 'nosniff')
        .header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox")
        .send(result.image.body);
    },
  );
}
