import type { ConnectionRow } from '../../db/schema/index.ts';
import { BadGatewayError } from '../../lib/errors.ts';
import { sha256Hex } from '../../lib/ids.ts';
import { REDACTED } from '../../lib/redact.ts';
import type { ApiKeySettings, AuthType, OAuthSettings, ProviderDefinition } from '../providers/index.ts';
import { type BuiltRequest, fillUrl, providerErrorMessage } from '../providers/index.ts';
import { providerMessage, sendOnce } from './http.ts';
import { readIdentity, readVars, type UserInfo } from './provider-oauth.ts';
import type { ConnectionSettings } from './settings.ts';

/**
 * How a connection's token reaches the provider, for both kinds of connection: OAuth tokens as
 * `Authorization: Bearer`, a pasted token (`api_key`) as the provider file's `apiKey.auth` says. Tool calls and
 * the "who am I" check both come through `withCredential`, so a token is sent one way for a connection.
 */

type Connectable = Pick<ConnectionRow, 'authType' | 'vars'>;

/** The request with the connection's credential added; custom credential headers are marked for redirects. */
export function withCredential(
  def: Pick<ProviderDefinition, 'apiKey'> & { oauth?: Pick<OAuthSettings, 'apiAuth'> | undefined },
  connection: Connectable,
  req: BuiltRequest,
  token: string,
): BuiltRequest {
  const auth = connection.authType === 'api_key' ? def.apiKey?.auth : def.oauth?.apiAuth;
  if (!auth) return { ...req, headers: { ...req.headers, authorization: `Bearer ${token}` } };
  switch (auth.type) {
    case 'bearer':
      return { ...req, headers: { ...req.headers, authorization: `${auth.scheme} ${token}` } };
    case 'basic': {
      // With a username field the token is the password; without, the token is the user name.
      const pair =
        auth.username !== undefined
          ? `${connection.vars[auth.username] ?? ''}:${token}`
          : `${token}:${auth.password ?? ''}`;
      const basic = Buffer.from(pair, 'utf8').toString('base64');
      return { ...req, headers: { ...req.headers, authorization: `Basic ${basic}` } };
    }
    case 'query': {
      const url = new URL(req.url);
      for (const [param, field] of Object.entries(auth.fields)) {
        url.searchParams.set(param, connection.vars[field] ?? '');
      }
      url.searchParams.set(auth.name, token);
      return { ...req, url: url.toString() };
    }
    case 'header': {
      const name = auth.name.toLowerCase();
      return {
        ...req,
        headers: { ...req.headers, [name]: token },
        credentialHeaders: [...(req.credentialHeaders ?? []), name],
      };
    }
  }
}

/** The provider as a connection's tool calls see it: a token connection may have its own base URL. */
export function apiOf(
  def: ProviderDefinition,
  authType: AuthType,
): Pick<ProviderDefinition, 'api' | 'label' | 'apiKey'> {
  const baseUrl = authType === 'api_key' ? def.apiKey?.baseUrl : undefined;
  return baseUrl ? { ...def, api: { ...def.api, baseUrl } } : def;
}

/** The provider refused the token (or the site, or the e-mail address given with it): the user can fix it. */
export class TokenRefusedError extends Error {
  constructor(
    message: string,
    readonly providerStatus: number,
  ) {
    super(message);
    this.name = 'TokenRefusedError';
  }
}

const lowerKeys = (h: Record<string, string>) =>
  Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));

/**
 * The provider's "who am I" for a pasted token: who it belongs to and the variables the answer holds.
 * A 4xx answer (other than 408 and 429) or a 2xx the provider marks as failed (Slack's `ok: false`, GraphQL
 * `errors`) is a TokenRefusedError carrying the provider's words; no answer is a 502 (504 on timeout), any
 * other answer a 502.
 */
export async function checkApiKey(
  def: ProviderDefinition,
  apiKey: ApiKeySettings,
  token: string,
  vars: Record<string, string>,
  settings: Pick<ConnectionSettings, 'tokenTimeoutMs' | 'maxResponseBytes'>,
): Promise<{ user: UserInfo; vars: Record<string, string> }> {
  const w = apiKey.whoami;
  const headers: Record<string, string> = { accept: 'application/json', ...lowerKeys(w.headers) };
  let body: string | undefined;
  if (w.body !== undefined) {
    body = JSON.stringify(w.body);
    headers['content-type'] = 'application/json';
  }
  const req = withCredential(
    def,
    { authType: 'api_key', vars },
    { method: w.method, url: fillUrl(w.url, vars), headers, body },
    token,
  );
  const answer = await sendOnce(req, {
    timeoutMs: settings.tokenTimeoutMs,
    maxBytes: settings.maxResponseBytes,
    label: def.label,
  });
  const words = () => cut(providerMessage(def, answer.body), token);
  if (answer.status >= 200 && answer.status < 300) {
    const failure = providerErrorMessage(def, answer.body);
    if (failure) throw new TokenRefusedError(cut(failure, token), answer.status);
    const user = w.fields ? readIdentity(def, answer.body, w.fields) : tokenIdentity(def, token);
    return { user, vars: { ...vars, ...readVars(answer.body, w.vars) } };
  }
  if (answer.status >= 400 && answer.status < 500 && answer.status !== 408 && answer.status !== 429) {
    throw new TokenRefusedError(words(), answer.status);
  }
  throw new BadGatewayError(`${def.label} answered ${answer.status} when asked who the token belongs to: ${words()}`);
}

/** Who a token is when nothing says who it belongs to: a hash of it (never the token in clear). */
export function tokenIdentity(def: Pick<ProviderDefinition, 'label'>, token: string): UserInfo {
  return { providerUserId: `token-${sha256Hex(token).slice(0, 16)}`, displayName: `${def.label} token` };
}

function cut(text: string, token: string): string {
  return token.length >= 8 ? text.split(token).join(REDACTED) : text;
}
