import { randomBytes } from 'node:crypto';
import type { Configuration, KoaContextWithOIDC, default as Provider, UnknownObject } from 'oidc-provider';
import type { Config } from '../../config.ts';
import type { Deps } from '../../context.ts';
import { newId } from '../../lib/ids.ts';
import { jsonBodyProblem } from '../../lib/json.ts';
import { hasNul, NUL_MESSAGE } from '../../lib/text.ts';
import { findAccountProfile } from '../../modules/accounts/index.ts';
import { unknownKnowledgeBases } from '../../modules/knowledge/index.ts';
import { SESSION_COOKIE, sessionAccountId } from '../browser-session.ts';
import { ALL_SCOPES } from '../scopes.ts';
import { createAdapterClass } from './adapter.ts';
import { MetadataDocuments } from './client-metadata.ts';
import { routeOidcConsole } from './console-bridge.ts';
import type { KeySet } from './keys.ts';
import {
  ALLOWED_SCOPES_PROPERTY,
  authorizationScope,
  effectiveClientScopes,
  findResource,
  KNOWLEDGE_BASES_PARAM,
  OIDC_SCOPES,
  parseKnowledgeBaseIds,
  resourceServers,
} from './policy.ts';
import { redirectUriProblem } from './redirect-uris.ts';
import { findGrantId, grantKnowledgeBases } from './repo.ts';

/** Where the authorization server's endpoints live (SPEC §5); the origin root holds discovery. */
export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/api/v1/auth/token',
  registration: '/api/v1/auth/register',
  revocation: '/api/v1/auth/revoke',
  jwks: '/.well-known/jwks.json',
  // Disabled features still need a path; nothing routes to these.
  userinfo: '/oauth/userinfo',
  introspection: '/oauth/introspect',
  end_session: '/oauth/logout',
} as const;

const CODE_TTL_SECONDS = 60;
const INTERACTION_TTL_SECONDS = 30 * 60;

export interface ProviderHooks {
  onGrantRevoked(grantId: string): void;
  /** Revokes the grant of one of our JWT access tokens presented by its own client; others are ignored. */
  revokeAccessToken(token: string, clientId: string): Promise<boolean>;
  /** The HTML page of a sign-in request that failed (the pages' error page, given by the app). */
  errorPage(title: string, message: string): string;
}

/**
 * Builds the oidc-provider instance over our database, keys and sign-in pages. oidc-provider (and koa under
 * it) is imported here, on the first OAuth request, not at start: a deployment that only uses PATs never
 * pays its start-up time and memory (docs/benchmarks.md, "Figures behind the code").
 */
export async function createProvider(deps: Deps, keys: KeySet, hooks: ProviderHooks): Promise<Provider> {
  routeOidcConsole(deps.log);
  const { default: Provider, errors, interactionPolicy } = await import('oidc-provider');
  const { config } = deps;
  const db = deps.database.db;
  const rs = resourceServers(config);
  const oauth = config.oauth;

  const policy = interactionPolicy.base();
  // Our own sign-in is the source of truth: a browser signed out of Switchboard (or into another account)
  // is asked to sign in again, whatever the authorization server's own session says.
  policy.get('login')?.checks.add(
    new interactionPolicy.Check('switchboard_session', 'Sign-in to Switchboard is required', async (ctx) => {
      if (ctx.oidc.result?.login) return interactionPolicy.Check.NO_NEED_TO_PROMPT;
      const token = ctx.cookies.get(SESSION_COOKIE, { signed: false });
      const accountId = token ? await sessionAccountId(deps, token) : undefined;
      return !accountId || accountId !== ctx.oidc.session?.accountId;
    }),
  );

  // An app asking for some knowledge bases (`knowledge_base_ids`) is shown the consent screen unless the grant
  // is already limited to bases among those; ids that are not the account's bases are shown there too, where
  // the request fails with invalid_request.
  policy.get('consent')?.checks.add(
    new interactionPolicy.Check(
      'knowledge_bases',
      'the knowledge bases asked for are not those granted',
      async (ctx) => {
        const asked = parseKnowledgeBaseIds(ctx.oidc.params?.[KNOWLEDGE_BASES_PARAM]);
        const accountId = ctx.oidc.session?.accountId;
        if (!asked || !('ids' in asked) || !accountId) return interactionPolicy.Check.NO_NEED_TO_PROMPT;
        const { REQUEST_PROMPT, NO_NEED_TO_PROMPT } = interactionPolicy.Check;
        if ((await unknownKnowledgeBases({ db, accountId }, asked.ids)).length) return REQUEST_PROMPT;
        const grantId = ctx.oidc.grant?.jti;
        const held = grantId ? await grantKnowledgeBases(db, grantId) : null;
        return held?.every((id) => asked.ids.includes(id)) ? NO_NEED_TO_PROMPT : REQUEST_PROMPT;
      },
    ),
  );

  const configuration: Configuration = {
    adapter: createAdapterClass({
      db,
      keyRing: deps.keyRing,
      onGrantRevoked: hooks.onGrantRevoked,
      metadataDocuments: new MetadataDocuments({ db, config, log: deps.log }),
    }),
    clients: [],
    jwks: { keys: [keys.signing as unknown as UnknownObject] } as Configuration['jwks'],
    cookies: {
      keys: keys.cookieKeys,
      names: { session: 'sb_oauth_session', interaction: 'sb_oauth_interaction', resume: 'sb_oauth_resume' },
      long: { httpOnly: true, sameSite: 'lax' },
      short: { httpOnly: true, sameSite: 'lax' },
    },
    routes: OAUTH_ROUTES,
    scopes: [...OIDC_SCOPES],
    extraParams: {
      // Its form is checked here, before sign-in; whether the ids are the account's, on the consent screen.
      async [KNOWLEDGE_BASES_PARAM](_ctx, value) {
        const parsed = parseKnowledgeBaseIds(value);
        if (parsed && 'error' in parsed) throw new errors.InvalidRequest(parsed.error);
      },
    },
    claims: {
      openid: ['sub'],
      profile: ['name', 'picture', 'updated_at'],
      email: ['email', 'email_verified'],
    },
    async findAccount(_ctx, sub) {
      const row = await findAccountProfile({ db }, sub);
      if (!row) return undefined;
      return {
        accountId: row.id,
        async claims() {
          return {
            sub: row.id,
            name: row.name,
            email: row.email,
            email_verified: false,
            picture: `${config.baseUrl}/api/v1/accounts/${row.id}/avatar`,
            updated_at: Math.floor(row.updatedAt.getTime() / 1000),
          };
        },
      };
    },
    features: {
      devInteractions: { enabled: false },
      registration: {
        enabled: oauth.dynamicRegistration,
        initialAccessToken: false,
        issueRegistrationAccessToken: false,
        idFactory: () => newId('authClient'),
        secretFactory: async () => randomBytes(32).toString('base64url'),
      },
      revocation: {
        enabled: true,
        // A client may revoke its own tokens only; another client's token is silently ignored (RFC 7009).
        allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
      },
      introspection: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      dPoP: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      resourceIndicators: {
        enabled: true,
        // No `resource` parameter: the MCP endpoint if only MCP scopes are asked for (no scope: if the client may
        // hold only MCP scopes), else the REST API.
        defaultResource: async (ctx, client, oneOf) => {
          if (oneOf) return oneOf.length === 1 ? (oneOf[0] as string) : rs.api.id;
          const param = ctx.oidc.params?.scope;
          const asked = typeof param === 'string' && param ? param.split(' ') : clientScopes(client);
          const wantsMcp = asked.some((s) => (rs.mcp.scopes as readonly string[]).includes(s));
          const wantsApi = asked.some((s) => (rs.api.scopes as readonly string[]).includes(s));
          return wantsMcp && !wantsApi ? rs.mcp.id : rs.api.id;
        },
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx, indicator, client) => {
          const resource = findResource(config, indicator);
          if (!resource) throw new errors.InvalidTarget('unknown resource; use the MCP endpoint or the REST API');
          const allowed = new Set(clientScopes(client));
          // At the authorization endpoint, the request's scope is settled against the resources it names (default
          // or refusal, see authorizationScope) before consent and the code see it.
          if (ctx.oidc.route === 'authorization' && ctx.oidc.params) {
            const params = ctx.oidc.params;
            const resources = [params.resource ?? []].flat().map(String);
            const asked = typeof params.scope === 'string' ? params.scope : undefined;
            const settled = authorizationScope(config, asked, resources, clientScopes(client));
            if ('error' in settled) throw new errors.InvalidScope(settled.error, asked ?? '');
            params.scope = settled.scope;
          }
          return {
            scope: resource.scopes.filter((s) => allowed.has(s)).join(' '),
            audience: resource.id,
            accessTokenTTL: oauth.accessTokenTtl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    pkce: { required: () => true },
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
    responseTypes: ['code'],
    allowOmittingSingleRegisteredRedirectUri: false,
    ttl: {
      AccessToken: () => oauth.accessTokenTtl,
      AuthorizationCode: () => CODE_TTL_SECONDS,
      IdToken: () => oauth.accessTokenTtl,
      RefreshToken: () => oauth.refreshTokenTtl,
      Interaction: () => INTERACTION_TTL_SECONDS,
      Session: () => config.sessionTtlSeconds,
      Grant: () => oauth.consentTtl,
      ClientCredentials: () => oauth.accessTokenTtl,
      DeviceCode: () => 600,
      BackchannelAuthenticationRequest: () => 600,
    },
    // Every refresh returns a new refresh token; the old one is spent (reuse revokes the grant).
    rotateRefreshToken: true,
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    expiresWithSession: async () => false,
    async loadExistingGrant(ctx) {
      const clientId = ctx.oidc.client?.clientId;
      const accountId = ctx.oidc.session?.accountId;
      if (!clientId || !accountId) return undefined;
      const grantId =
        ctx.oidc.result?.consent?.grantId ||
        ctx.oidc.session?.grantIdFor(clientId) ||
        (await findGrantId(db, accountId, clientId));
      return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
    },
    // The grant id (revocation ends its tokens) and, when the user limited the app to some knowledge bases,
    // those: read from the grant at every issue, so refreshed tokens carry the limit too.
    extraTokenClaims: async (_ctx, token) => {
      if (token.kind !== 'AccessToken' || !('grantId' in token) || typeof token.grantId !== 'string') return undefined;
      const kb = await grantKnowledgeBases(db, token.grantId);
      return { gid: token.grantId, ...(kb ? { [KNOWLEDGE_BASES_PARAM]: kb } : {}) };
    },
    interactions: {
      policy,
      url: (_ctx, interaction) => `/interaction/${interaction.uid}`,
    },
    extraClientMetadata: {
      properties: [ALLOWED_SCOPES_PROPERTY],
      // Runs on every client, registered or loaded: checks redirect URIs and sorts scopes (see policy.ts).
      validator(ctx, key, value, metadata) {
        if (key !== ALLOWED_SCOPES_PROPERTY) return;
        // oidc-provider parses registration bodies itself, past our JSON parser's checks: the same rules here.
        const problem = jsonBodyProblem(metadata);
        if (problem) throw new errors.InvalidClientMetadata(problem);
        if (hasNul(metadata)) throw new errors.InvalidClientMetadata(NUL_MESSAGE);
        const uris = metadata.redirect_uris ?? [];
        // Checked before iterating: a string would be read character by character, an object would throw (500).
        if (!Array.isArray(uris) || !uris.every((u) => typeof u === 'string')) {
          throw new errors.InvalidClientMetadata('redirect_uris must be an array of strings');
        }
        const native = metadata.application_type === 'native';
        for (const uri of uris) {
          const problem = redirectUriProblem(uri, { allowCustomScheme: native });
          if (problem) throw new errors.InvalidRedirectUri(problem);
        }
        const registering = (ctx as KoaContextWithOIDC | undefined)?.oidc?.route === 'registration';
        if (!registering && Array.isArray(value)) return;
        // Dynamic registration: what the client asks for, cut to a third-party client's scopes.
        const asked = typeof metadata.scope === 'string' ? metadata.scope.split(' ').filter(Boolean) : [...ALL_SCOPES];
        const allowed = effectiveClientScopes(asked, ['third-party']);
        const unknown = asked.filter((s) => !(ALL_SCOPES as string[]).includes(s));
        if (unknown.length) throw new errors.InvalidClientMetadata(`unknown scope: ${unknown.join(' ')}`);
        metadata[ALLOWED_SCOPES_PROPERTY] = allowed;
        const oidc = allowed.filter((s) => (OIDC_SCOPES as readonly string[]).includes(s));
        if (oidc.length) metadata.scope = oidc.join(' ');
        else delete metadata.scope;
      },
    },
    // Browser apps (public clients) may call the token and revocation endpoints from their redirect origins.
    clientBasedCORS(_ctx, origin, client) {
      return client.redirectUris?.some((uri) => safeOrigin(uri) === origin) ?? false;
    },
    async renderError(ctx, out) {
      ctx.type = 'html';
      ctx.body = hooks.errorPage(
        'The sign-in request could not be completed',
        String(out.error_description ?? out.error ?? 'Unknown error'),
      );
    },
    discovery: { service_documentation: `${config.baseUrl}/docs` },
    enabledJWA: {
      idTokenSigningAlgValues: ['RS256'],
      clientAuthSigningAlgValues: ['RS256'],
    },
  };

  const provider = new Provider(config.baseUrl, configuration);
  // We hand it the public origin through X-Forwarded-Proto/Host (see routes.ts): cookies are Secure under https.
  provider.proxy = true;
  provider.on('server_error', (_ctx: KoaContextWithOIDC, err: Error) => {
    deps.log.error({ err: { name: err.name, message: err.message } }, 'authorization server error');
  });
  provider.use(async (ctx, next) => {
    await next();
    const oidcCtx = ctx as KoaContextWithOIDC;
    await revokeStructuredToken(oidcCtx, hooks);
    decorateResponse(oidcCtx, config);
  });
  return provider;
}

function clientScopes(client: unknown): string[] {
  const value = (client as Record<string, unknown>)[ALLOWED_SCOPES_PROPERTY];
  return Array.isArray(value) ? (value as string[]) : [];
}

function safeOrigin(uri: string): string | undefined {
  try {
    return new URL(uri).origin;
  } catch {
    return undefined;
  }
}

/**
 * oidc-provider cannot revoke a JWT access token (it keeps none) and answers unsupported_token_type. Clients
 * do revoke access tokens (on sign-out): for one of ours presented by its own, authenticated client, we end
 * the token's grant, which stops it and its refresh token. Any other token is ignored; both answer 200 as
 * RFC 7009 asks (an invalid token or another client's is no error).
 */
async function revokeStructuredToken(ctx: KoaContextWithOIDC, hooks: ProviderHooks): Promise<void> {
  if (ctx.path !== OAUTH_ROUTES.revocation || ctx.status !== 400) return;
  const body = ctx.body as { error?: string } | undefined;
  const clientId = ctx.oidc?.client?.clientId;
  const token = ctx.oidc?.params?.token;
  if (body?.error !== 'unsupported_token_type' || !clientId || typeof token !== 'string') return;
  await hooks.revokeAccessToken(token, clientId);
  ctx.status = 200;
  ctx.body = '';
}

/** Our additions to the answers oidc-provider builds: discovery per SPEC, `refresh_expires_in`. */
function decorateResponse(ctx: KoaContextWithOIDC, config: Config): void {
  if ((ctx.status !== 200 && ctx.status !== 201) || !ctx.body || typeof ctx.body !== 'object') return;
  const body = ctx.body as Record<string, unknown>;
  if (ctx.path === '/.well-known/openid-configuration') {
    body.authorization_endpoint = `${config.appUrl}${OAUTH_ROUTES.authorization}`;
    body.scopes_supported = [...ALL_SCOPES];
    body.code_challenge_methods_supported = ['S256'];
    body.response_types_supported = ['code'];
    body.grant_types_supported = ['authorization_code', 'refresh_token'];
    body.token_endpoint_auth_methods_supported = ['none', 'client_secret_basic', 'client_secret_post'];
    body.revocation_endpoint_auth_methods_supported = ['none', 'client_secret_basic', 'client_secret_post'];
    body.protected_resources = Object.values(resourceServers(config)).map((r) => r.id);
    body.authorization_response_iss_parameter_supported = true;
    // An https URL as client_id names the client's metadata document (client-metadata.ts).
    body.client_id_metadata_document_supported = true;
  } else if (ctx.path === OAUTH_ROUTES.registration) {
    // RFC 7591: answer the scopes the client may be granted, in the standard field.
    const allowed = body[ALLOWED_SCOPES_PROPERTY];
    if (Array.isArray(allowed)) body.scope = allowed.join(' ');
    delete body[ALLOWED_SCOPES_PROPERTY];
  } else if (ctx.path === OAUTH_ROUTES.token && typeof body.refresh_token === 'string') {
    body.refresh_expires_in = config.oauth.refreshTokenTtl;
  }
}
