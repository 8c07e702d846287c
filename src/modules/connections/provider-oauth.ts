import { createHash, randomBytes } from 'node:crypto';
import { BadGatewayError } from '../../lib/errors.ts';
import type {
  ClientCredentials,
  OAuthProviderDefinition,
  OAuthSettings,
  ProviderDefinition,
} from '../providers/index.ts';
import { type BuiltRequest, fillUrl, getPath, URL_PLACEHOLDER } from '../providers/index.ts';
import { type ProviderAnswer, providerMessage, sendOnce } from './http.ts';
import type { ConnectionSettings } from './settings.ts';

/**
 * Our side of OAuth with a provider, as its catalog file describes it: the authorization URL, the code
 * exchange, the refresh, who the user is, discovery of connection variables, and revocation.
 */

type Settings = Pick<ConnectionSettings, 'tokenTimeoutMs' | 'maxResponseBytes'>;

export interface TokenSet {
  accessToken: string;
  refreshToken: string | undefined;
  expiresAt: Date | null;
  /** Granted scopes when the provider says; undefined when it does not. */
  scopes: string[] | undefined;
  /** Connection variables read from the token answer (`tokenResponse.vars`). */
  vars: Record<string, string>;
  /** The token answer, for user-info fields read from it (providers without a user-info URL). */
  raw: unknown;
}

/** Why a token request failed: the provider judged the grant dead, refused otherwise, or did not answer. */
export class TokenEndpointError extends Error {
  constructor(
    readonly kind: 'invalid_grant' | 'refused' | 'unavailable',
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'TokenEndpointError';
  }
}

export interface UserInfo {
  providerUserId: string;
  displayName: string;
  email?: string | undefined;
  avatar?: string | undefined;
}

export function newCodeVerifier(): string {
  return randomBytes(32).toString('base64url');
}

export function codeChallengeOf(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

export interface AuthorizationRequest {
  state: string;
  redirectUri: string;
  codeVerifier: string;
  scopes: string[];
  vars: Record<string, string>;
  /** Extra authorization parameters the caller may set (`login_hint`, `prompt`). */
  extra: Record<string, string>;
}

export function authorizationUrl(
  def: OAuthProviderDefinition,
  creds: ClientCredentials,
  req: AuthorizationRequest,
): string {
  const o = def.oauth;
  const url = new URL(fillUrl(o.authorizationUrl, req.vars));
  const params: Record<string, string> = {
    ...o.authorizationParams,
    ...req.extra,
    response_type: 'code',
    client_id: creds.clientId,
    redirect_uri: req.redirectUri,
    state: req.state,
  };
  if (req.scopes.length) params[o.scopeParam] = req.scopes.join(o.scopeSeparator);
  if (o.pkce) {
    params.code_challenge = codeChallengeOf(req.codeVerifier);
    params.code_challenge_method = 'S256';
  }
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.toString();
}

function basicAuth(creds: ClientCredentials): string {
  // RFC 6749 §2.3.1: both parts form-encoded before base64.
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(creds.clientId)}:${enc(creds.clientSecret)}`).toString('base64')}`;
}

function encodeBody(format: 'form' | 'json', fields: Record<string, string>): { body: string; type: string } {
  return format === 'json'
    ? { body: JSON.stringify(fields), type: 'application/json' }
    : { body: new URLSearchParams(fields).toString(), type: 'application/x-www-form-urlencoded' };
}

function tokenBody(answer: ProviderAnswer): Record<string, unknown> {
  if (answer.body && typeof answer.body === 'object' && !Array.isArray(answer.body)) {
    return answer.body as Record<string, unknown>;
  }
  // Some token endpoints answer form-encoded text (GitHub without an Accept header).
  if (typeof answer.body === 'string' && answer.body.includes('=')) {
    return Object.fromEntries(new URLSearchParams(answer.body));
  }
  return {};
}

const stringAt = (body: unknown, path: string | readonly string[]): string | undefined => {
  const v = getPath(body, path);
  if (typeof v === 'string' && v !== '') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
};

/** `invalid_grant`, and the spellings some providers use for a dead refresh token. */
const DEAD_GRANT = new Set(['invalid_grant', 'bad_refresh_token', 'bad_verification_code', 'expired_token']);

async function tokenRequest(
  def: OAuthProviderDefinition,
  creds: ClientCredentials,
  vars: Record<string, string>,
  fields: Record<string, string>,
  settings: Settings,
  endpoint: string = def.oauth.tokenUrl,
): Promise<Record<string, unknown>> {
  const o = def.oauth;
  const all: Record<string, string> = { ...o.tokenParams, ...fields };
  const headers: Record<string, string> = { accept: 'application/json' };
  for (const [k, v] of Object.entries(o.tokenHeaders)) headers[k.toLowerCase()] = v;
  if (o.tokenAuthMethod === 'client_secret_basic') headers.authorization = basicAuth(creds);
  else Object.assign(all, { client_id: creds.clientId, client_secret: creds.clientSecret });
  const { body, type } = encodeBody(o.tokenRequestFormat, all);
  headers['content-type'] = type;
  let url: string;
  try {
    url = fillUrl(endpoint, vars);
  } catch (err) {
    throw new TokenEndpointError('refused', (err as Error).message);
  }
  let answer: ProviderAnswer;
  try {
    answer = await sendOnce(
      { method: 'POST', url, headers, body },
      { timeoutMs: settings.tokenTimeoutMs, maxBytes: settings.maxResponseBytes, label: def.label },
    );
  } catch (err) {
    throw new TokenEndpointError('unavailable', (err as Error).message);
  }
  const parsed = tokenBody(answer);
  const code = typeof parsed.error === 'string' ? parsed.error : undefined;
  if (answer.status >= 200 && answer.status < 300 && !code) return parsed;
  const message = `${def.label} token endpoint answered ${answer.status}${code ? ` ${code}` : ''}: ${providerMessage(def, answer.body)}`;
  if (code && DEAD_GRANT.has(code)) throw new TokenEndpointError('invalid_grant', message, code);
  if (answer.status >= 500 || answer.status === 429 || answer.status === 408) {
    throw new TokenEndpointError('unavailable', message, code);
  }
  throw new TokenEndpointError('refused', message, code);
}

/** Granted scopes: split on the provider's separator and on white space (some answer spaces, ask commas). */
function splitScopes(v: unknown, separator: string): string[] | undefined {
  if (Array.isArray(v)) return v.filter((s): s is string => typeof s === 'string' && s !== '');
  if (typeof v !== 'string') return undefined;
  return v
    .split(/\s+/)
    .flatMap((s) => s.split(separator))
    .filter(Boolean);
}

/** Reads the answer of the token endpoint where the provider file says things are. */
export function readTokenSet(def: OAuthProviderDefinition, body: Record<string, unknown>, now = Date.now()): TokenSet {
  const tr = def.oauth.tokenResponse;
  const accessToken = stringAt(body, tr.accessToken);
  if (!accessToken) throw new TokenEndpointError('refused', `${def.label} token answer holds no access token`);
  const expiresIn = Number(getPath(body, tr.expiresIn));
  const vars = readVars(body, tr.vars);
  return {
    accessToken,
    refreshToken: stringAt(body, tr.refreshToken),
    expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? new Date(now + expiresIn * 1000) : null,
    scopes: splitScopes(getPath(body, tr.scope), def.oauth.scopeSeparator),
    vars,
    raw: body,
  };
}

export async function exchangeCode(
  def: OAuthProviderDefinition,
  creds: ClientCredentials,
  input: { code: string; redirectUri: string; codeVerifier: string; vars: Record<string, string> },
  settings: Settings,
): Promise<TokenSet> {
  const fields: Record<string, string> = {
    grant_type: 'authorization_code',
    code: input.code,
    redirect_uri: input.redirectUri,
  };
  if (def.oauth.pkce) fields.code_verifier = input.codeVerifier;
  return readTokenSet(def, await tokenRequest(def, creds, input.vars, fields, settings));
}

/**
 * A refresh, at `refreshUrl` when the provider has one; the old refresh token is kept when the provider sends
 * none (not every provider rotates).
 */
export async function refreshTokens(
  def: OAuthProviderDefinition,
  creds: ClientCredentials,
  input: { refreshToken: string; vars: Record<string, string> },
  settings: Settings,
): Promise<TokenSet> {
  const body = await tokenRequest(
    def,
    creds,
    input.vars,
    { grant_type: 'refresh_token', refresh_token: input.refreshToken },
    settings,
    def.oauth.refreshUrl,
  );
  const set = readTokenSet(def, body);
  return { ...set, refreshToken: set.refreshToken ?? input.refreshToken };
}

const firstValue = (body: unknown, paths: string | string[] | undefined): string | undefined => {
  for (const p of paths === undefined ? [] : Array.isArray(paths) ? paths : [paths]) {
    const v = stringAt(body, p);
    if (v !== undefined) return v;
  }
  return undefined;
};

function withToken(template: string, token: string): string {
  return template.replace(/\{accessToken\}/g, encodeURIComponent(token));
}

/** A provider's non-2xx answer to a user-info or discovery request. */
export class ProviderAnswerError extends BadGatewayError {
  constructor(
    message: string,
    readonly providerStatus: number,
  ) {
    super(message);
    this.name = 'BadGatewayError'; // the wire name (SPEC §7 body `error`)
  }
}

/** An authenticated JSON request of the OAuth side (user info, discovery); 2xx or a 502 saying why. */
async function authorizedJson(
  def: OAuthProviderDefinition,
  req: BuiltRequest,
  token: string,
  settings: Settings,
  what: string,
): Promise<unknown> {
  // The token as the API takes it (Shopify's own header, Zoho's scheme), Bearer by default.
  const a = def.oauth.apiAuth;
  const credential: Record<string, string> =
    a?.type === 'header' ? { [a.name.toLowerCase()]: token } : { authorization: `${a?.scheme ?? 'Bearer'} ${token}` };
  const answer = await sendOnce(
    { ...req, headers: { accept: 'application/json', ...req.headers, ...credential } },
    { timeoutMs: settings.tokenTimeoutMs, maxBytes: settings.maxResponseBytes, label: def.label },
  );
  if (answer.status < 200 || answer.status >= 300) {
    throw new ProviderAnswerError(
      `${def.label} ${what} answered ${answer.status}: ${providerMessage(def, answer.body)}`,
      answer.status,
    );
  }
  return answer.body;
}

function lowerKeys(h: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
}

/** Connection variables found by the provider's discovery request (Atlassian's cloud id ...). */
export async function discoverVars(
  def: OAuthProviderDefinition,
  accessToken: string,
  vars: Record<string, string>,
  settings: Settings,
): Promise<Record<string, string>> {
  const d = def.oauth.discovery;
  if (!d) return {};
  const body = await authorizedJson(
    def,
    { method: 'GET', url: fillUrl(d.url, vars), headers: lowerKeys(d.headers) },
    accessToken,
    settings,
    'discovery',
  );
  return readVars(d.select ? selectItem(def, body, d.select, vars) : body, d.vars);
}

/** The item of a discovery answer the connection means (see `discovery.select`); a 502 naming the choices. */
function selectItem(
  def: OAuthProviderDefinition,
  body: unknown,
  select: { path: string; equals: string },
  vars: Record<string, string>,
): unknown {
  const items = Array.isArray(body) ? body : [];
  const names = [...select.equals.matchAll(URL_PLACEHOLDER)].map((m) => m[2] as string);
  if (names.some((n) => !vars[n])) return items[0];
  const wanted = select.equals.replace(URL_PLACEHOLDER, (_m, _plus: string, n: string) => vars[n] as string);
  const found = items.find((item) => stringAt(item, select.path) === wanted);
  if (found !== undefined) return found;
  const offered = items.map((item) => stringAt(item, select.path)).filter(Boolean);
  throw new BadGatewayError(
    `${def.label} did not grant access to ${wanted}${offered.length ? ` (granted: ${offered.join(', ')})` : ''}; connect again and choose it on the consent screen`,
  );
}

/** Who the user is at the provider: from its user-info endpoint, or from the token answer when it has none. */
export async function fetchUserInfo(
  def: OAuthProviderDefinition,
  tokens: Pick<TokenSet, 'accessToken' | 'raw'>,
  vars: Record<string, string>,
  settings: Settings,
): Promise<UserInfo> {
  const ui = def.oauth.userInfo;
  let body: unknown = tokens.raw;
  if (ui.url) {
    const headers = lowerKeys(ui.headers);
    let payload: string | undefined;
    if (ui.body !== undefined) {
      payload = JSON.stringify(ui.body);
      headers['content-type'] = 'application/json';
    }
    body = await authorizedJson(
      def,
      { method: ui.method, url: fillUrl(withToken(ui.url, tokens.accessToken), vars), headers, body: payload },
      tokens.accessToken,
      settings,
      'user info',
    );
  }
  return readIdentity(def, body, ui.fields);
}

/** Who the user is, read from an answer at the provider file's paths; a 502 when it holds no user id. */
export function readIdentity(
  def: Pick<ProviderDefinition, 'label'>,
  body: unknown,
  fields: OAuthSettings['userInfo']['fields'],
): UserInfo {
  const providerUserId = firstValue(body, fields.providerUserId);
  if (!providerUserId) throw new BadGatewayError(`${def.label} did not say who the user is (no user id)`);
  const email = firstValue(body, fields.email);
  return {
    providerUserId,
    displayName: firstValue(body, fields.displayName) ?? email ?? providerUserId,
    email,
    avatar: firstValue(body, fields.avatar),
  };
}

/** Connection variables read from an answer, each kept only when it matches its (anchored) pattern. */
export function readVars(
  body: unknown,
  sources: Record<string, { path: string; pattern?: string | undefined }>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, source] of Object.entries(sources)) {
    const v = stringAt(body, source.path);
    if (v !== undefined && (!source.pattern || new RegExp(`^(?:${source.pattern})$`, 'u').test(v))) out[name] = v;
  }
  return out;
}

/** Revokes a token at the provider as its file describes; throws when the provider refuses or fails. */
export async function revokeAtProvider(
  def: OAuthProviderDefinition,
  creds: ClientCredentials | undefined,
  tokens: { accessToken: string; refreshToken: string | undefined },
  vars: Record<string, string>,
  settings: Settings,
): Promise<boolean> {
  const o = def.oauth;
  if (!o.revocationUrl) return false;
  const r = o.revocation;
  const token = r.token === 'refresh' && tokens.refreshToken ? tokens.refreshToken : tokens.accessToken;
  const needsClient = r.auth === 'client' || r.auth === 'basic' || o.revocationUrl.includes('{clientId}');
  if (needsClient && !creds) throw new Error(`${def.label} is not configured: cannot authenticate the revocation`);
  const url = fillUrl(o.revocationUrl, { ...vars, ...(creds ? { clientId: creds.clientId } : {}) });
  const headers: Record<string, string> = { accept: 'application/json' };
  const fields: Record<string, string> = { [r.tokenParam]: token };
  if (creds && (r.auth === 'basic' || (r.auth === 'client' && o.tokenAuthMethod === 'client_secret_basic'))) {
    headers.authorization = basicAuth(creds);
  } else if (creds && r.auth === 'client') {
    Object.assign(fields, { client_id: creds.clientId, client_secret: creds.clientSecret });
  } else if (r.auth === 'bearer') {
    headers.authorization = `Bearer ${tokens.accessToken}`;
  }
  let body: string | undefined;
  if (r.format !== 'none') {
    const enc = encodeBody(r.format, fields);
    body = enc.body;
    headers['content-type'] = enc.type;
  }
  const answer = await sendOnce(
    { method: r.method, url, headers, body },
    { timeoutMs: settings.tokenTimeoutMs, maxBytes: settings.maxResponseBytes, label: def.label },
  );
  if (answer.status >= 200 && answer.status < 300) return true;
  throw new Error(`${def.label} revocation answered ${answer.status}: ${providerMessage(def, answer.body)}`);
}
