import type { Config } from '../../config.ts';
import type { Deps, PublicContext, ServiceContext } from '../../context.ts';
import { requireScope } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { ConnectionRow } from '../../db/schema/index.ts';
import { AppError, BadRequestError, NotFoundError } from '../../lib/errors.ts';
import { newId, sha256Hex } from '../../lib/ids.ts';
import { redactSecrets } from '../../lib/redact.ts';
import type { AuthType, OAuthProviderDefinition, ProviderDefinition } from '../providers/index.ts';
import { type CatalogProvider, hasOAuth, logoPath, providerCatalog, providerCredentials } from '../providers/index.ts';
import { connectionsChanged } from './active-cache.ts';
import { checkApiKey, TokenRefusedError, tokenIdentity } from './api-key.ts';
import { bindingCookieName, bindingMatches, newBinding, startUrl } from './browser-binding.ts';
import {
  checkFields,
  checkRedirectUrl,
  invalid,
  readProviderParams,
  requireCredentials,
  requireFields,
  requireOAuth,
  type StateParams,
} from './connect-checks.ts';
import { connectionEvent } from './events.ts';
import {
  authorizationUrl,
  discoverVars,
  exchangeCode,
  fetchUserInfo,
  newCodeVerifier,
  ProviderAnswerError,
  TokenEndpointError,
  type TokenSet,
  type UserInfo,
} from './provider-oauth.ts';
import * as repo from './repo.ts';
import type {
  CallbackQuery,
  Connection,
  FinalizeBody,
  FinalizeResponse,
  FromCatalogCreate,
  FromCatalogInitiate,
  InitiateConnection,
  InitiateResponse,
  PendingFields,
} from './schema.ts';
import { AUTHORIZATION_TTL_MS, callbackUrl, catalogProvider, toConnection } from './service.ts';
import { connectionSettings } from './settings.ts';
import { seal } from './tokens.ts';

/** Connecting a provider: by OAuth (initiate, callback, pending fields, finalize) or with a token the user holds. */

function providerMetadata(entry: CatalogProvider, config: Pick<Config, 'baseUrl'>) {
  const d = entry.definition;
  return { name: d.label, logoUrl: d.logoUrl ?? `${config.baseUrl}${logoPath(d.id)}`, description: d.description };
}

/**
 * Starts an authorization: a single-use `state` bound to the account and a PKCE verifier, kept server-side
 * for 10 minutes (only the state's hash is stored; the verifier is sealed). Answers where to send the user.
 */
export async function initiateConnection(ctx: ServiceContext, input: InitiateConnection): Promise<InitiateResponse> {
  requireScope(ctx, 'connections');
  const config = ctx.deps.config;
  const entry = catalogProvider(config, input.providerId);
  const def = requireOAuth(entry.definition, 'body.providerId');
  requireCredentials(config, def, 'body.providerId');
  const redirectUrl = await checkRedirectUrl(ctx, input.redirectUrl, 'body.redirectUrl');
  const params = readProviderParams(def, input.providerParams ?? {});

  const state = newId('oauthState');
  const stateHash = sha256Hex(state);
  const codeVerifier = newCodeVerifier();
  const now = Date.now();
  await repo.insertOAuthState(ctx.db, {
    stateHash,
    accountId: ctx.accountId,
    providerId: def.id,
    codeVerifierEnc: ctx.deps.keyRing.encrypt(codeVerifier, stateHash),
    redirectUrl,
    params: { ...params },
    expiresAt: new Date(now + AUTHORIZATION_TTL_MS),
  });
  // The provider's URL is given only by `beginAuthorization`, to the browser that opens this one.
  return { authorizationUrl: startUrl(config, state), providerMetadata: providerMetadata(entry, config) };
}

/**
 * `GET /connections/authorize?state=` (public, opened by the user's browser): binds the state to this browser,
 * once, and answers the provider's authorization URL and the cookie to set. A state already opened, used,
 * expired or unknown is refused: nothing is sent to the provider.
 */
export async function beginAuthorization(
  ctx: PublicContext,
  state: string,
): Promise<{ providerUrl: string; cookie: { name: string; value: string; maxAgeSeconds: number } }> {
  const stateHash = sha256Hex(state);
  const binding = newBinding();
  const now = new Date();
  const row = await repo.bindOAuthState(ctx.db, stateHash, binding.hash, now);
  if (!row) {
    const old = await repo.findOAuthState(ctx.db, stateHash);
    if (!old) throw new BadRequestError('Unknown authorization state; start again with POST /connections/initiate');
    throw new BadRequestError(
      old.usedAt
        ? 'This authorization was already completed; start again to reconnect'
        : old.expiresAt <= now
          ? 'This authorization expired; start again'
          : 'This authorization URL was already opened in a browser; it works once. Start again with POST /connections/initiate',
    );
  }
  const config = ctx.deps.config;
  const def = providerCatalog(config).get(row.providerId)?.definition;
  const creds = providerCredentials(config, row.providerId);
  if (!def || !creds || !hasOAuth(def)) throw new BadRequestError(`Provider ${row.providerId} is not available`);
  const params = row.params as unknown as StateParams;
  const providerUrl = authorizationUrl(def, creds, {
    state,
    redirectUri: callbackUrl(config),
    codeVerifier: ctx.deps.keyRing.decrypt(row.codeVerifierEnc, stateHash),
    scopes: params.scopes,
    vars: params.vars,
    extra: params.extra,
  });
  const maxAgeSeconds = Math.max(1, Math.ceil((row.expiresAt.getTime() - now.getTime()) / 1000));
  return { providerUrl, cookie: { name: bindingCookieName(stateHash), value: binding.nonce, maxAgeSeconds } };
}

export function initiateFromCatalog(ctx: ServiceContext, input: FromCatalogInitiate): Promise<InitiateResponse> {
  return initiateConnection(ctx, { providerId: input.catalogEntryId, redirectUrl: input.redirectUrl });
}

// ---- callback, pending and finalize ----

function withParams(target: string, params: Record<string, string>): string {
  const url = new URL(target);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.toString();
}

/** Who the user is: discovery (connection variables), then user info. Network only, no writes. */
async function identify(
  deps: Deps,
  def: OAuthProviderDefinition,
  tokens: Pick<TokenSet, 'accessToken' | 'raw'>,
  vars: Record<string, string>,
): Promise<{ user: UserInfo; vars: Record<string, string> }> {
  const settings = connectionSettings(deps.config);
  const all = { ...vars, ...(await discoverVars(def, tokens.accessToken, vars, settings)) };
  return { user: await fetchUserInfo(def, tokens, all, settings), vars: all };
}

/**
 * Creates the connection, or updates the one it replaces: the same provider user, or when the provider
 * allows one connection per account (`allowMultipleConnections: false`) the account's connection of that
 * provider. Serialized per account and provider, so two callbacks cannot create two.
 */
async function upsertConnection(
  tx: Executor,
  deps: Deps,
  accountId: string,
  def: ProviderDefinition,
  tokens: Pick<TokenSet, 'accessToken' | 'refreshToken' | 'expiresAt' | 'scopes'>,
  identity: { user: UserInfo; vars: Record<string, string> },
  requestedScopes: string[],
  authType: AuthType = 'oauth',
): Promise<ConnectionRow> {
  await repo.lockAccountProvider(tx, accountId, def.id);
  const { user } = identity;
  const existing = await repo.findReplaceable(
    tx,
    accountId,
    def.id,
    user.providerUserId,
    !def.allowMultipleConnections,
  );
  const id = existing?.id ?? newId('connection');
  const fields = {
    providerUserId: user.providerUserId,
    scopes: tokens.scopes ?? requestedScopes,
    status: 'active' as const,
    expiresAt: tokens.expiresAt,
    canRefresh: tokens.refreshToken !== undefined,
    authType,
    metadata: {
      displayName: user.displayName,
      ...(user.email ? { email: user.email } : {}),
      ...(user.avatar ? { avatar: user.avatar } : {}),
    },
    vars: identity.vars,
    accessTokenEnc: seal(deps, id, tokens.accessToken),
    refreshTokenEnc: tokens.refreshToken ? seal(deps, id, tokens.refreshToken) : null,
    refreshFailures: 0,
    lastError: null,
  };
  const updated = existing ? await repo.updateConnection(tx, accountId, id, fields) : undefined;
  const row = updated ?? (await repo.insertConnection(tx, { id, accountId, providerId: def.id, ...fields }));
  await connectionEvent(deps, tx, { before: row, after: row, event: 'created', reconnected: updated !== undefined });
  return row;
}

interface PendingPayload {
  tokens: { accessToken: string; refreshToken?: string; expiresAt: string | null; scopes?: string[]; raw: unknown };
  vars: Record<string, string>;
  requestedScopes: string[];
}

function describeFailure(err: unknown): { error: string; description: string } {
  if (err instanceof TokenEndpointError) {
    return { error: err.kind === 'invalid_grant' ? 'invalid_grant' : 'server_error', description: err.message };
  }
  if (err instanceof AppError) return { error: 'server_error', description: err.message };
  return { error: 'server_error', description: 'The connection could not be completed' };
}

/**
 * `GET /connections/callback` (public): consumes the state (single use), exchanges the code with the PKCE
 * verifier, reads who the user is, stores the tokens sealed and answers where to redirect the browser:
 * `redirectUrl` with `connectionId`, with `pendingId` when the provider still needs fields, or with
 * `error` and `error_description`. Only a state we never issued is a 400 (there is nowhere safe to go).
 */
export async function completeAuthorization(
  ctx: PublicContext,
  q: CallbackQuery,
  cookies: Readonly<Record<string, string | undefined>>,
): Promise<string> {
  if (!q.state) throw new BadRequestError('Missing state: this URL is for the provider to call after authorization');
  const deps = ctx.deps;
  const stateHash = sha256Hex(q.state);
  const now = new Date();
  const state = await repo.consumeOAuthState(ctx.db, stateHash, now);
  if (!state) {
    const old = await repo.findOAuthState(ctx.db, stateHash);
    if (!old) throw new BadRequestError('Unknown authorization state; start again with POST /connections/initiate');
    return withParams(old.redirectUrl, {
      error: 'invalid_request',
      error_description: old.usedAt
        ? 'This authorization was already completed; start again to reconnect'
        : 'This authorization expired; start again',
    });
  }
  const back = (params: Record<string, string>) => withParams(state.redirectUrl, params);
  // The state is spent either way: a callback from another browser must not leave it for a later one.
  if (!bindingMatches(stateHash, state.browserBindingHash, cookies)) {
    ctx.log.warn({ providerId: state.providerId }, 'connection callback refused: not the browser that started it');
    return back({
      error: 'access_denied',
      error_description:
        'This authorization was not started in this browser (its authorizationUrl was opened elsewhere, or not at all): no connection was made; start again from this browser',
    });
  }
  if (q.error) {
    return back({ error: q.error, error_description: q.error_description ?? 'The provider refused the authorization' });
  }
  if (!q.code) return back({ error: 'invalid_request', error_description: 'The provider sent no authorization code' });
  const def = providerCatalog(deps.config).get(state.providerId)?.definition;
  const creds = providerCredentials(deps.config, state.providerId);
  if (!def || !creds || !hasOAuth(def)) {
    return back({ error: 'server_error', error_description: `Provider ${state.providerId} is not available` });
  }
  const params = state.params as unknown as StateParams;
  try {
    const codeVerifier = deps.keyRing.decrypt(state.codeVerifierEnc, stateHash);
    const tokens = await exchangeCode(
      def,
      creds,
      { code: q.code, redirectUri: callbackUrl(deps.config), codeVerifier, vars: params.vars },
      connectionSettings(deps.config),
    );
    const vars = { ...params.vars, ...tokens.vars };
    if (def.finalizeFields.some((f) => !f.optional && !vars[f.name])) {
      const pendingId = newId('pendingConnection');
      const idHash = sha256Hex(pendingId);
      const payload: PendingPayload = {
        tokens: {
          accessToken: tokens.accessToken,
          ...(tokens.refreshToken ? { refreshToken: tokens.refreshToken } : {}),
          expiresAt: tokens.expiresAt?.toISOString() ?? null,
          ...(tokens.scopes ? { scopes: tokens.scopes } : {}),
          raw: tokens.raw,
        },
        vars,
        requestedScopes: params.scopes,
      };
      await repo.insertPending(ctx.db, {
        idHash,
        accountId: state.accountId,
        providerId: def.id,
        payloadEnc: deps.keyRing.encrypt(JSON.stringify(payload), idHash),
        redirectUrl: state.redirectUrl,
        expiresAt: new Date(now.getTime() + AUTHORIZATION_TTL_MS),
      });
      return back({ pendingId });
    }
    const identity = await identify(deps, def, tokens, vars);
    const row = await ctx.db.transaction((tx) =>
      upsertConnection(tx, deps, state.accountId, def, tokens, identity, params.scopes),
    );
    connectionsChanged(deps, state.accountId);
    ctx.log.info({ connectionId: row.id, providerId: def.id, accountId: state.accountId }, 'connection authorized');
    return back({ connectionId: row.id });
  } catch (err) {
    const { error, description } = describeFailure(err);
    ctx.log.warn({ providerId: def.id, error, description }, 'connection callback failed');
    return back({ error, error_description: redactSecrets(description) });
  }
}

async function openPending(ctx: PublicContext, pendingId: string) {
  const idHash = sha256Hex(pendingId);
  const row = await repo.findPending(ctx.db, idHash, new Date());
  const entry = row && providerCatalog(ctx.deps.config).get(row.providerId);
  if (!row || !entry) throw new NotFoundError('Pending connection not found, expired or already finalized');
  const payload = JSON.parse(ctx.deps.keyRing.decrypt(row.payloadEnc, idHash)) as PendingPayload;
  return { row, idHash, entry, def: entry.definition, payload };
}

/** `GET /connections/pending/:pendingId/fields` (public: the id is the secret). */
export async function getPendingFields(ctx: PublicContext, pendingId: string): Promise<PendingFields> {
  const { row, entry, def, payload } = await openPending(ctx, pendingId);
  return {
    pendingId,
    providerId: def.id,
    providerMetadata: providerMetadata(entry, ctx.deps.config),
    fields: def.finalizeFields
      .filter((f) => !f.optional && !payload.vars[f.name])
      .map((f) => ({
        name: f.name,
        label: f.label,
        ...(f.description ? { description: f.description } : {}),
        ...(f.placeholder ? { placeholder: f.placeholder } : {}),
        pattern: f.pattern,
      })),
    expiresAt: row.expiresAt.toISOString(),
  };
}

/**
 * `POST /connections/pending/:pendingId/finalize` (public, single use). Fields are checked and the provider
 * asked who the user is before the pending connection is claimed, so a typo can be corrected; the claim and
 * the connection are then written in one transaction: two racing calls create one connection.
 */
export async function finalizePending(
  ctx: PublicContext,
  pendingId: string,
  body: FinalizeBody,
): Promise<FinalizeResponse> {
  const { idHash, def, payload } = await openPending(ctx, pendingId);
  const { vars: given, problems } = checkFields(def, body.fields, 'body.fields');
  const vars = { ...given, ...payload.vars };
  requireFields(def.finalizeFields, vars, problems, 'body.fields', 'is required');
  if (problems.length) invalid(problems);
  const tokens = {
    accessToken: payload.tokens.accessToken,
    refreshToken: payload.tokens.refreshToken,
    expiresAt: payload.tokens.expiresAt ? new Date(payload.tokens.expiresAt) : null,
    scopes: payload.tokens.scopes,
    raw: payload.tokens.raw,
  };
  const identity = await identify(ctx.deps, requireOAuth(def, 'pendingId'), tokens, vars);
  const result = await ctx.db.transaction(async (tx) => {
    const claimed = await repo.consumePending(tx, idHash, new Date());
    if (!claimed) return undefined;
    const row = await upsertConnection(tx, ctx.deps, claimed.accountId, def, tokens, identity, payload.requestedScopes);
    return { row, redirectUrl: claimed.redirectUrl };
  });
  if (!result) throw new NotFoundError('Pending connection not found, expired or already finalized');
  connectionsChanged(ctx.deps, result.row.accountId);
  return { connectionId: result.row.id, redirectUrl: withParams(result.redirectUrl, { connectionId: result.row.id }) };
}

// ---- token connections (api_key) ----

/**
 * `POST /connections/from-catalog`: a connection made of a token the user already holds (an API key, a
 * personal access token). A provider with an `apiKey` block takes its fields (a site, an e-mail address),
 * sends the token as the block says and asks its `whoami`; another provider takes the token as a Bearer
 * token and asks its OAuth user-info endpoint. A token the provider refuses is a 422 naming the provider's
 * answer; a provider that cannot be reached a 502 (504 when it does not answer in time). The token is
 * sealed like OAuth tokens and cannot be refreshed: a later 401 on a tool call makes the connection
 * `revoked`.
 */
export async function createFromCatalog(ctx: ServiceContext, input: FromCatalogCreate): Promise<Connection> {
  requireScope(ctx, 'connections');
  const def = catalogProvider(ctx.deps.config, input.catalogEntryId).definition;
  const apiKey = def.apiKey;
  const fields = apiKey?.fields ?? def.finalizeFields;
  const { vars, problems } = checkFields(def, input.fields ?? {}, 'body.fields', { fields });
  requireFields(fields, vars, problems, 'body.fields', `is required by ${def.label}`);
  const token = input.bearerToken.trim();
  if (!/^[\x21-\x7e]+$/.test(token)) {
    problems.push({ field: 'body.bearerToken', message: 'must be printable ASCII without spaces' });
  }
  if (problems.length) invalid(problems);
  const tokens = { accessToken: token, refreshToken: undefined, expiresAt: null, scopes: undefined };
  const refused = (why: string) =>
    invalid([{ field: 'body.bearerToken', message: `was refused by ${def.label} (${why})` }]);
  let identity: { user: UserInfo; vars: Record<string, string> };
  if (apiKey) {
    try {
      identity = await checkApiKey(def, apiKey, token, vars, connectionSettings(ctx.deps.config));
    } catch (err) {
      if (err instanceof TokenRefusedError) refused(`${err.providerStatus}: ${err.message}`);
      throw err;
    }
  } else if (hasOAuth(def) && def.oauth.userInfo.url) {
    try {
      identity = await identify(ctx.deps, def, { ...tokens, raw: {} }, vars);
    } catch (err) {
      if (err instanceof ProviderAnswerError && (err.providerStatus === 401 || err.providerStatus === 403)) {
        refused(err.message.replace(/^.*? answered /, ''));
      }
      throw err;
    }
  } else {
    // No way to ask who it is: the token itself identifies the connection (by hash, never in clear).
    identity = { user: tokenIdentity(def, token), vars };
  }
  const row = await ctx.db.transaction((tx) =>
    upsertConnection(
      tx,
      ctx.deps,
      ctx.accountId,
      def,
      tokens,
      identity,
      apiKey ? [] : (def.oauth?.defaultScopes ?? []),
      'api_key',
    ),
  );
  connectionsChanged(ctx.deps, ctx.accountId);
  ctx.log.info({ connectionId: row.id, providerId: def.id }, 'connection made from a token');
  return toConnection(row, ctx.deps.config);
}
