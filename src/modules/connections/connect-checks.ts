import type { Config } from '../../config.ts';
import type { ServiceContext } from '../../context.ts';
import { type ValidationDetail, ValidationError } from '../../lib/errors.ts';
import type { FinalizeField, OAuthProviderDefinition, ProviderDefinition } from '../providers/index.ts';
import { beforeAuthorization, hasOAuth, providerCredentials, providerCredentialVariables } from '../providers/index.ts';
import * as repo from './repo.ts';

/** The checks of what a caller gives to connect a provider: redirect URL, provider params, connection fields. */

/** Extra authorization parameters a caller may pass through `providerParams`. */
const PASS_THROUGH_PARAMS = ['login_hint', 'prompt'] as const;

export function invalid(details: ValidationDetail[]): never {
  throw new ValidationError(`Validation failed: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`, details);
}

/** Same target: scheme, host and path equal (the query may differ: we add `connectionId` to it). */
function sameTarget(registered: string, url: URL): boolean {
  try {
    const r = new URL(registered);
    return r.protocol === url.protocol && r.host === url.host && r.pathname === url.pathname;
  } catch {
    return false;
  }
}

const NEVER_REDIRECT = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'blob:']);

/**
 * `redirectUrl` must be on APP_URL's origin or match a redirect URI of one of the account's auth clients
 * (a native app's own scheme included); never credentials, a fragment or a script scheme.
 */
export async function checkRedirectUrl(ctx: ServiceContext, redirectUrl: string, field: string): Promise<string> {
  const url = new URL(redirectUrl);
  const appOrigin = new URL(ctx.deps.config.appUrl).origin;
  if (!url.username && !url.password && !url.hash && !NEVER_REDIRECT.has(url.protocol)) {
    if (url.origin === appOrigin) return url.toString();
    const registered = await repo.accountRedirectUris(ctx.db, ctx.accountId);
    if (registered.some((r) => sameTarget(r, url))) return url.toString();
  }
  return invalid([
    {
      field,
      message: `must be on ${appOrigin} or one of the redirect URIs of your auth clients (no credentials or fragment)`,
    },
  ]);
}

/** The provider as an OAuth one; a 422 for a provider that takes only a token the user holds. */
export function requireOAuth(def: ProviderDefinition, field: string): OAuthProviderDefinition {
  if (hasOAuth(def)) return def;
  throw new ValidationError(
    `${def.label} has no OAuth: connect it with a token through POST /connections/from-catalog (${def.apiKey?.label ?? 'API key'})`,
    [{ field, message: `${def.label} connects only with a token the user holds (POST /connections/from-catalog)` }],
  );
}

export function requireCredentials(config: Pick<Config, 'providers'>, def: ProviderDefinition, field: string) {
  const creds = providerCredentials(config, def.id);
  if (creds) return creds;
  const vars = providerCredentialVariables(def.id);
  throw new ValidationError(
    `${def.label} is not configured on this server: set ${vars.clientId} and ${vars.clientSecret}`,
    [{ field, message: `provider not configured: set ${vars.clientId} and ${vars.clientSecret}` }],
  );
}

const anchored = (pattern: string) => new RegExp(`^(?:${pattern})$`, 'u');

/**
 * Connection-field values checked against the provider's patterns; unknown names are refused. A field with a
 * default takes it when not given; an empty value leaves an optional field (or one with a default) unset.
 */
export function checkFields(
  def: ProviderDefinition,
  given: Record<string, unknown>,
  at: string,
  opts: { allowOthers?: readonly string[]; fields?: readonly FinalizeField[] } = {},
): { vars: Record<string, string>; problems: ValidationDetail[] } {
  const vars: Record<string, string> = {};
  const problems: ValidationDetail[] = [];
  const fields = opts.fields ?? def.finalizeFields;
  for (const [name, value] of Object.entries(given)) {
    const field = fields.find((f) => f.name === name);
    // Left empty (a form's blank input): an optional field stays unset, one with a default takes it.
    if (field && value === '' && (field.optional || field.default !== undefined)) continue;
    if (!field) {
      if (opts.allowOthers?.includes(name)) continue;
      const known = [...fields.map((f) => f.name), ...(opts.allowOthers ?? [])];
      problems.push({
        field: `${at}.${name}`,
        message: `is not a parameter of ${def.label}${known.length ? ` (allowed: ${known.join(', ')})` : ''}`,
      });
    } else if (typeof value !== 'string' || !anchored(field.pattern).test(value)) {
      problems.push({ field: `${at}.${name}`, message: `must match ${field.pattern}` });
    } else {
      vars[name] = value;
    }
  }
  for (const f of fields) {
    if (f.default !== undefined && vars[f.name] === undefined && !problems.some((p) => p.field === `${at}.${f.name}`)) {
      vars[f.name] = f.default;
    }
  }
  return { vars, problems };
}

/** A problem for each field the user must give and did not. */
export function requireFields(
  fields: readonly FinalizeField[],
  vars: Record<string, string>,
  problems: ValidationDetail[],
  at: string,
  message: string,
): void {
  for (const f of fields) {
    if (!f.optional && !vars[f.name] && !problems.some((p) => p.field === `${at}.${f.name}`)) {
      problems.push({ field: `${at}.${f.name}`, message });
    }
  }
}
export interface StateParams {
  vars: Record<string, string>;
  scopes: string[];
  extra: Record<string, string>;
}

export function readProviderParams(def: ProviderDefinition, params: Record<string, string | string[]>): StateParams {
  const { vars, problems } = checkFields(def, params, 'body.providerParams', {
    allowOthers: ['scopes', ...PASS_THROUGH_PARAMS],
  });
  const extra: Record<string, string> = {};
  for (const name of PASS_THROUGH_PARAMS) {
    const v = params[name];
    if (v === undefined) continue;
    if (typeof v === 'string') extra[name] = v;
    else problems.push({ field: `body.providerParams.${name}`, message: 'must be a string' });
  }
  const requested = params.scopes;
  const more = requested === undefined ? [] : Array.isArray(requested) ? requested : requested.split(/[\s,]+/);
  const scopes = [...new Set([...(def.oauth?.defaultScopes ?? []), ...more.filter(Boolean)])];
  if (more.some((s) => !/^[\x21-\x7e]{1,200}$/.test(s))) {
    problems.push({ field: 'body.providerParams.scopes', message: 'must be provider scope names' });
  }
  const before = beforeAuthorization(def);
  requireFields(
    def.finalizeFields.filter((f) => before.has(f.name)),
    vars,
    problems,
    'body.providerParams',
    `is required by ${def.label} before authorization`,
  );
  if (problems.length) invalid(problems);
  return { vars, scopes, extra };
}
