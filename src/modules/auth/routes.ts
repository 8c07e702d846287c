import { z } from 'zod';
import type { Config } from '../../config.ts';
import { ipKey } from '../../http/rate-limit.ts';
import type { App } from '../../http/types.ts';
import { listQuery, paginated } from '../../lib/pagination.ts';
import { Authenticate, CreatedPat, CreatePat, Pat, PatParams, SessionResponse, Signup } from './schema.ts';
import * as service from './service.ts';

export async function authRoutes(app: App, config: Config): Promise<void> {
  const tags = ['Auth'];
  const perIp = { max: config.rateLimits.auth, timeWindow: config.rateLimits.windowMs, keyGenerator: ipKey };

  app.post(
    '/auth/signup',
    {
      schema: {
        tags,
        summary: 'Create an account and a first session',
        body: Signup,
        response: { 201: SessionResponse },
      },
      config: { auth: 'public', rateLimit: perIp },
    },
    async (req, reply) => reply.code(201).send(await service.signup(req.publicCtx, req.body)),
  );
  app.post(
    '/auth/authenticate',
    {
      schema: {
        tags,
        summary: 'Sign in with e-mail and password',
        description:
          'Answers 401 without saying whether the e-mail or the password was wrong. Sign-in attempts (this route, the sign-in page and the OAuth sign-in together) are limited to 10 a minute per address and per account.',
        body: Authenticate,
        response: { 200: SessionResponse },
      },
      config: { auth: 'public', rateLimit: perIp },
    },
    (req) => service.authenticate(req.publicCtx, req.body),
  );
  app.post(
    '/auth/logout',
    {
      schema: { tags, summary: 'End the calling session', response: { 204: z.undefined() } },
      config: { auth: 'session' },
    },
    async (req, reply) => {
      await service.logout(req.ctx);
      return reply.code(204).send();
    },
  );
  app.post(
    '/auth/pat',
    {
      schema: {
        tags,
        summary: 'Create a personal access token (session token only)',
        description: 'The token is in this answer only; only its hash is stored.',
        body: CreatePat,
        response: { 201: CreatedPat },
      },
      config: { auth: 'session' },
    },
    async (req, reply) => reply.code(201).send(await service.createPat(req.ctx, req.body)),
  );
  app.get(
    '/auth/pats',
    {
      schema: {
        tags,
        summary: 'List personal access tokens (metadata, never the token; session token only)',
        querystring: listQuery(['createdAt']),
        response: { 200: paginated(Pat) },
      },
      config: { auth: 'session' },
    },
    (req) => service.listPats(req.ctx, req.query),
  );
  app.delete(
    '/auth/pats/:id',
    {
      schema: {
        tags,
        summary: 'Revoke a personal access token (session token only)',
        params: PatParams,
        response: { 204: z.undefined() },
      },
      config: { auth: 'session' },
    },
    async (req, reply) => {
      await service.revokePat(req.ctx, req.params.id);
      return reply.code(204).send();
    },
  );
}
