import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ipKey } from '../../http/rate-limit.ts';
import type { App } from '../../http/types.ts';
import { resourceServers } from './policy.ts';
import { OAUTH_ROUTES } from './provider.ts';
import type { OAuthServer } from './server.ts';

/**
 * Gives oidc-provider the raw request of an origin-root path. It reads the body itself, so these routes parse
 * none; it builds absolute URLs from Host and X-Forwarded-Proto, so we set those to the public origin
 * (BASE_URL, or APP_URL for the pages a browser sees): discovery and redirects never depend on how the request
 * reached us, and cookies are Secure exactly when the public origin is https.
 */
export function passToProvider(server: OAuthServer, publicOrigin: string, rewriteTo?: string) {
  const origin = new URL(publicOrigin);
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const raw: IncomingMessage = req.raw;
    setPublicOrigin(raw, origin, req.ip);
    if (rewriteTo) raw.url = rewriteTo + (raw.url?.includes('?') ? raw.url.slice(raw.url.indexOf('?')) : '');
    // Before hijacking: if the provider cannot be built, our error handler still answers.
    const handler = await server.handler();
    reply.hijack();
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, value);
    }
    await handler(raw, reply.raw);
  };
}

export function setPublicOrigin(raw: IncomingMessage, origin: URL, ip: string): void {
  raw.headers.host = origin.host;
  raw.headers['x-forwarded-proto'] = origin.protocol.slice(0, -1);
  raw.headers['x-forwarded-for'] = ip;
  delete raw.headers['x-forwarded-host'];
}

const OAuthError = z
  .object({ error: z.string(), error_description: z.string().optional() })
  .meta({ id: 'OAuthError', description: 'RFC 6749 error body' });

const TokenRequest = z
  .object({
    grant_type: z.enum(['authorization_code', 'refresh_token']),
    code: z.string().optional(),
    redirect_uri: z.string().optional(),
    code_verifier: z.string().optional().describe('PKCE (S256); required with authorization_code'),
    refresh_token: z.string().optional(),
    client_id: z
      .string()
      .optional()
      .describe("the app's id, or the https URL of its client ID metadata document (docs/mcp-client-metadata.md)"),
    client_secret: z.string().optional().describe('confidential clients using client_secret_post'),
    resource: z.string().optional().describe('RFC 8707 resource indicator'),
    scope: z.string().optional(),
  })
  .meta({ id: 'TokenRequest' });

const TokenResponse = z
  .object({
    token_type: z.literal('Bearer'),
    access_token: z.string().describe('JWT (RS256, typ at+jwt) whose aud is the resource'),
    expires_in: z.number().int().describe('seconds (900)'),
    refresh_token: z.string().describe('single use: every exchange returns a new one'),
    refresh_expires_in: z.number().int().describe('seconds (604800)'),
    scope: z.string(),
    id_token: z.string().optional().describe('with the openid scope'),
  })
  .meta({ id: 'TokenResponse' });

const RegistrationRequest = z
  .object({
    client_name: z.string().optional(),
    redirect_uris: z.array(z.string()),
    grant_types: z.array(z.enum(['authorization_code', 'refresh_token'])).optional(),
    response_types: z.array(z.literal('code')).optional(),
    token_endpoint_auth_method: z.enum(['none', 'client_secret_basic', 'client_secret_post']).optional(),
    scope: z.string().optional(),
    application_type: z.enum(['web', 'native']).optional(),
  })
  .meta({ id: 'ClientRegistrationRequest' });

const RegistrationResponse = RegistrationRequest.extend({
  client_id: z.string(),
  client_secret: z.string().optional().describe('confidential clients only; shown once'),
  client_id_issued_at: z.number().int(),
}).meta({ id: 'ClientRegistrationResponse' });

const ProtectedResource = z
  .object({
    resource: z.string(),
    authorization_servers: z.array(z.string()),
    scopes_supported: z.array(z.string()),
    bearer_methods_supported: z.array(z.string()),
    resource_name: z.string(),
    resource_documentation: z.string(),
  })
  .meta({ id: 'ProtectedResourceMetadata' });

/** A validator that accepts anything: these bodies are read by oidc-provider, the schema is documentation. */
const documentOnly = () => (value: unknown) => ({ value });

/** The authorization server's routes (SPEC §5) and the discovery documents at the origin root. */
export async function oauthRoutes(app: App, server: OAuthServer): Promise<void> {
  const { config } = app.deps;
  const rl = config.rateLimits;
  const base = config.baseUrl;
  const tags = ['OAuth'];

  await app.register(async (scope) => {
    // oidc-provider reads the raw body itself: leave it unread here.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));

    const toProvider = passToProvider(server, base);
    const toProviderAsApp = passToProvider(server, config.appUrl);

    scope.route({
      method: ['GET', 'POST'],
      url: OAUTH_ROUTES.authorization,
      schema: { hide: true },
      config: { auth: 'public' },
      handler: toProviderAsApp,
    });
    scope.get(
      `${OAUTH_ROUTES.authorization}/:uid`,
      { schema: { hide: true }, config: { auth: 'public' } },
      toProviderAsApp,
    );

    scope.post(
      OAUTH_ROUTES.token,
      {
        schema: {
          tags,
          summary: 'Token endpoint: authorization code (PKCE) and refresh token grants',
          description:
            'Form-encoded (RFC 6749). Refresh tokens are single use; presenting a spent one revokes the whole grant. ' +
            'Confidential clients authenticate with client_secret_basic or client_secret_post. Errors are RFC 6749 ' +
            `bodies. ${rl.auth} a minute per address.`,
          consumes: ['application/x-www-form-urlencoded'],
          body: TokenRequest,
          response: { 200: TokenResponse, 400: OAuthError, 401: OAuthError },
        },
        validatorCompiler: documentOnly,
        config: { auth: 'public', rateLimit: { max: rl.auth, timeWindow: rl.windowMs, keyGenerator: ipKey } },
      },
      toProvider,
    );
    scope.options(OAUTH_ROUTES.token, { schema: { hide: true }, config: { auth: 'public' } }, toProvider);
    scope.post(
      OAUTH_ROUTES.revocation,
      {
        schema: {
          tags,
          summary: 'Revoke a refresh or access token (RFC 7009): its grant and every token of it end',
          description: `Form fields \`token\`, \`client_id\` (and the secret of a confidential client). ${rl.auth} a minute per address.`,
          consumes: ['application/x-www-form-urlencoded'],
          body: z.object({
            token: z.string(),
            token_type_hint: z.string().optional(),
            client_id: z.string().optional(),
          }),
          response: { 200: z.string().describe('empty'), 400: OAuthError, 401: OAuthError },
        },
        validatorCompiler: documentOnly,
        config: { auth: 'public', rateLimit: { max: rl.auth, timeWindow: rl.windowMs, keyGenerator: ipKey } },
      },
      toProvider,
    );
    scope.options(OAUTH_ROUTES.revocation, { schema: { hide: true }, config: { auth: 'public' } }, toProvider);
    if (config.oauth.dynamicRegistration) {
      scope.post(
        OAUTH_ROUTES.registration,
        {
          schema: {
            tags,
            summary: 'Dynamic client registration (RFC 7591)',
            description:
              'Registers a third-party client: public (`token_endpoint_auth_method: none`) or confidential (the secret is ' +
              `in this answer only). Redirect URIs must be https, or http on a loopback host. ${rl.register} a minute per address.`,
            body: RegistrationRequest,
            response: { 201: RegistrationResponse, 400: OAuthError },
          },
          validatorCompiler: documentOnly,
          config: { auth: 'public', rateLimit: { max: rl.register, timeWindow: rl.windowMs, keyGenerator: ipKey } },
        },
        toProvider,
      );
      scope.options(OAUTH_ROUTES.registration, { schema: { hide: true }, config: { auth: 'public' } }, toProvider);
    }

    const discovery = {
      schema: { tags, summary: 'Authorization server metadata (RFC 8414 / OpenID Connect Discovery)' },
      config: { auth: 'public' as const },
    };
    scope.get('/.well-known/openid-configuration', discovery, toProvider);
    scope.get(
      '/.well-known/oauth-authorization-server',
      discovery,
      passToProvider(server, base, '/.well-known/openid-configuration'),
    );
  });

  app.get(
    OAUTH_ROUTES.jwks,
    {
      schema: { tags, summary: 'Public keys that verify access and ID tokens (current and recently rotated)' },
      config: { auth: 'public' },
    },
    async (_req, reply) => {
      reply.header('access-control-allow-origin', '*').header('cache-control', 'public, max-age=300');
      return { keys: server.keys.published };
    },
  );

  const rs = resourceServers(config);
  const metadata = (r: (typeof rs)['mcp']) => ({
    resource: r.id,
    authorization_servers: [base],
    scopes_supported: [...r.scopes],
    bearer_methods_supported: ['header'],
    resource_name: r.name,
    resource_documentation: `${base}/docs`,
  });
  const prm = (r: (typeof rs)['mcp'], summary: string) =>
    [
      {
        schema: { tags, summary, response: { 200: ProtectedResource } },
        config: { auth: 'public' as const },
      },
      async (_req: FastifyRequest, reply: FastifyReply) => {
        reply.header('access-control-allow-origin', '*');
        return metadata(r);
      },
    ] as const;
  // The MCP endpoint's metadata sits at the root too: `POST /mcp`'s 401 points there (SPEC §5).
  app.get(
    '/.well-known/oauth-protected-resource',
    ...prm(rs.mcp, 'Protected resource metadata of the MCP endpoint (RFC 9728)'),
  );
  app.get(
    '/.well-known/oauth-protected-resource/mcp',
    ...prm(rs.mcp, 'Protected resource metadata of the MCP endpoint (RFC 9728)'),
  );
  app.get(
    '/.well-known/oauth-protected-resource/api/v1',
    ...prm(rs.api, 'Protected resource metadata of the REST API (RFC 9728)'),
  );
}
