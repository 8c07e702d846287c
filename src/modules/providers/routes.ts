import { z } from 'zod';
import type { ServiceContext } from '../../context.ts';
import type { App } from '../../http/types.ts';
import { NotFoundError } from '../../lib/errors.ts';
import {
  Provider,
  ProviderParams,
  ProvidersQuery,
  ProviderTool,
  ProviderToolsQuery,
  ToolSearchHit,
  ToolSearchQuery,
} from './schema.ts';
import * as service from './service.ts';

/** What these routes ask of the connections area, given by the app (connections imports providers, not back). */
export interface ConnectionToolsOf {
  /** Tool search over the catalog, or over the caller's active connections (`connected=true`). */
  searchProviderTools(ctx: ServiceContext, query: ToolSearchQuery): Promise<ToolSearchHit[]>;
  /** The tools the caller may run on one of its connections of this provider. */
  listConnectionTools(ctx: ServiceContext, providerId: string, connectionId: string): Promise<ProviderTool[]>;
}

/** `/api/v1/providers*` (SPEC §4 Providers). */
export async function providerRoutes(app: App, connections: ConnectionToolsOf): Promise<void> {
  const tags = ['Providers'];
  app.get(
    '/providers',
    {
      schema: {
        tags,
        summary: 'The connector catalog (public), optionally one category or providers matching every word of q',
        querystring: ProvidersQuery,
        response: { 200: z.array(Provider) },
      },
      config: { auth: 'public' },
    },
    (req) => service.listProviders(req.publicCtx, req.query),
  );
  app.get(
    '/providers/tools/search',
    {
      schema: {
        tags,
        summary:
          'Search tools across providers by a request in plain words, best first: over the whole catalog, or with ' +
          'connected=true over the tools of your active connections you may run. Each hit names its provider and ' +
          "carries the tool's description and input schema (the ranking the agent's find_tools uses)",
        querystring: ToolSearchQuery,
        response: { 200: z.array(ToolSearchHit) },
      },
      config: { scopes: ['connections'] },
    },
    (req) => connections.searchProviderTools(req.ctx, req.query),
  );
  app.get(
    '/providers/:providerId',
    { schema: { tags, summary: 'One provider', params: ProviderParams, response: { 200: Provider } } },
    (req) => service.getProvider(req.ctx, req.params.providerId),
  );
  app.get(
    '/providers/:providerId/tools',
    {
      schema: {
        tags,
        summary:
          "A provider's tools: name, description for an LLM, JSON Schema parameters, mode. With connectionId (scope " +
          '`connections`; one of yours, of this provider, else 404): only the tools you may run on it (no write tools ' +
          'with a read permission)',
        params: ProviderParams,
        querystring: ProviderToolsQuery,
        response: { 200: z.array(ProviderTool) },
      },
    },
    (req) =>
      req.query.connectionId
        ? connections.listConnectionTools(req.ctx, req.params.providerId, req.query.connectionId)
        : service.listProviderTools(req.ctx, req.params.providerId),
  );
}

const LogoParams = z.object({ file: z.string().max(120) });

/** `/providers/logos/<id>.svg` at the origin root: public, cacheable, inert (no scripts run from it). */
export async function providerLogoRoutes(app: App): Promise<void> {
  app.get(
    '/providers/logos/:file',
    {
      schema: { tags: ['Providers'], summary: "A provider's logo (SVG)", params: LogoParams },
      config: { auth: 'public', rateLimit: false },
    },
    async (req, reply) => {
      const m = /^([a-z0-9][a-z0-9-]*)\.svg$/.exec(req.params.file);
      if (!m?.[1]) throw new NotFoundError(`Logo ${req.params.file} not found`);
      const svg = service.getProviderLogo(req.publicCtx, m[1]);
      return reply
        .type('image/svg+xml; charset=utf-8')
        .header('Cache-Control', 'public, max-age=86400')
        .header('X-Content-Type-Options', 'nosniff')
        .header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox")
        .send(svg);
    },
  );
}
