import type { Config } from '../../config.ts';
import type { Actor } from '../../context.ts';
import { ForbiddenError } from '../../lib/errors.ts';
import { ALL_SCOPES, type Scope } from '../scopes.ts';

/**
 * Who may hold what. SPEC §4/§5: `agents-all` is for white-label customers only; the connections list and get
 * are for the first-party app (sessions, PATs) and white-label customers. Every other client is third-party.
 */
export const CLIENT_ROLES = ['third-party', 'whitelabel-customer'] as const;
export type ClientRole = (typeof CLIENT_ROLES)[number];

/** OpenID Connect scopes; the rest are scopes of our two resource servers. */
export const OIDC_SCOPES = ['openid', 'profile', 'email'] as const satisfies readonly Scope[];
export const MCP_SCOPES = ['universal-mcp-read', 'universal-mcp-read-write'] as const satisfies readonly Scope[];
/** Scopes of the REST API resource. */
export const API_SCOPES = ALL_SCOPES.filter(
  (s) => !(OIDC_SCOPES as readonly string[]).includes(s) && !(MCP_SCOPES as readonly string[]).includes(s),
);

/**
 * Client metadata property (ours, not RFC 7591) holding every scope a client may be granted. oidc-provider's
 * own `scope` metadata may only name OpenID Connect scopes, so the resource scopes travel here.
 */
export const ALLOWED_SCOPES_PROPERTY = 'switchboard_allowed_scopes';

/** The scopes a client of these roles may ever be granted. */
export function scopesForRoles(roles: readonly string[]): Scope[] {
  const whitelabel = roles.includes('whitelabel-customer');
  return ALL_SCOPES.filter((s) => s !== 'agents-all' || whitelabel);
}

/** The scopes a client may be granted now: what it was allowed, cut to what its roles permit. */
export function effectiveClientScopes(allowed: readonly string[], roles: readonly string[]): Scope[] {
  const permitted = new Set<string>(scopesForRoles(roles));
  return ALL_SCOPES.filter((s) => allowed.includes(s) && permitted.has(s));
}

/** True for the first-party app's own tokens (sessions, PATs, the CLI) and for white-label customers' apps. */
export function isFirstPartyOrWhitelabel(actor: Actor): boolean {
  if (actor.kind !== 'oauth') return true;
  return actor.clientRoles?.includes('whitelabel-customer') ?? false;
}

/** For the connections list and get (SPEC §4): 403 for third-party apps. */
export function requireFirstPartyOrWhitelabel(actor: Actor): void {
  if (!isFirstPartyOrWhitelabel(actor)) {
    throw new ForbiddenError('This endpoint is open to the Switchboard app and white-label customers only');
  }
}

/** The two protected resources (RFC 8707 / RFC 9728): the MCP endpoint and the REST API. */
export interface ResourceServer {
  id: string;
  name: string;
  scopes: readonly Scope[];
}

export function resourceServers(config: Config): { mcp: ResourceServer; api: ResourceServer } {
  return {
    mcp: { id: `${config.baseUrl}/mcp`, name: 'Switchboard MCP', scopes: MCP_SCOPES },
    api: { id: `${config.baseUrl}/api/v1`, name: 'Switchboard API', scopes: API_SCOPES },
  };
}

/** The resource a request path belongs to, for the audience check. */
export function resourceForPath(config: Config, path: string): ResourceServer {
  const rs = resourceServers(config);
  return path === '/mcp' || path.startsWith('/mcp/') || path.startsWith('/mcp?') ? rs.mcp : rs.api;
}

/** Our resource for an RFC 8707 indicator (a trailing slash tolerated), or undefined. */
export function findResource(config: Config, indicator: string): ResourceServer | undefined {
  const want = indicator.replace(/\/+$/, '');
  return Object.values(resourceServers(config)).find((r) => r.id === want);
}

/**
 * The scope of an authorization request for the resources it names (RFC 8707; oidc-provider has defaulted a missing
 * `resource`). No `scope` (the MCP conformance suite's authorization-code flow sends none): every scope of those
 * resources the client may be granted, which the consent screen then shows. A scope of another of our resources is
 * refused, never dropped: a token serves one resource, and a client that asked for MCP and REST scopes together
 * would otherwise get a token without the MCP ones and no word why. Scopes we do not know pass, as before (clients
 * add `offline_access`).
 */
export function authorizationScope(
  config: Config,
  asked: string | undefined,
  resources: readonly string[],
  clientAllowed: readonly string[],
): { scope: string } | { error: string } {
  const servers = resources.flatMap((r) => findResource(config, r) ?? []);
  const target = servers.map((r) => r.id).join(' and ');
  const accepted = new Set<string>(servers.flatMap((r) => r.scopes));
  const requested = asked?.split(' ').filter(Boolean) ?? [];
  if (requested.length === 0) {
    const scopes = ALL_SCOPES.filter((s) => accepted.has(s) && clientAllowed.includes(s));
    if (scopes.length === 0) {
      return {
        error: `no scope asked for, and this client may be granted none of the scopes of ${target} (${[...accepted].join(' ')})`,
      };
    }
    return { scope: scopes.join(' ') };
  }
  const problems = Object.values(resourceServers(config)).flatMap((other) => {
    const foreign = requested.filter((s) => !accepted.has(s) && (other.scopes as readonly string[]).includes(s));
    if (foreign.length === 0) return [];
    const what = foreign.length === 1 ? 'a scope' : 'scopes';
    return [`${foreign.join(' ')}: ${what} of ${other.id}, not of ${target} that this request is for`];
  });
  if (problems.length) {
    return {
      error: `${problems.join('; ')}; a token serves one resource: ask for each in its own authorization, naming it in \`resource\``,
    };
  }
  return { scope: requested.join(' ') };
}

/**
 * The authorization request parameter (ours, an extension like a PAT's `knowledge_base_ids`) by which an app
 * asks for some knowledge bases only: comma-separated base ids. The consent screen then offers those only.
 */
export const KNOWLEDGE_BASES_PARAM = 'knowledge_base_ids';
/** As many as a PAT may name. */
export const MAX_KNOWLEDGE_BASES = 50;
const KNOWLEDGE_BASE_ID = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * Reads `knowledge_base_ids` (comma-separated; spaces around commas tolerated, duplicates dropped): undefined
 * when absent, the ids, or what is wrong with it. Whether they are the account's is checked once it is known.
 */
export function parseKnowledgeBaseIds(value: unknown): { ids: string[] } | { error: string } | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return { error: 'knowledge_base_ids must be one comma-separated string' };
  const ids = [...new Set(value.split(',').map((s) => s.trim()))];
  if (ids.length === 1 && ids[0] === '') return { error: 'knowledge_base_ids must name at least one knowledge base' };
  if (ids.length > MAX_KNOWLEDGE_BASES) {
    return { error: `knowledge_base_ids may name at most ${MAX_KNOWLEDGE_BASES} knowledge bases` };
  }
  const bad = ids.find((id) => !KNOWLEDGE_BASE_ID.test(id));
  if (bad !== undefined)
    return {
      error: `knowledge_base_ids holds something that is not a knowledge base id: ${JSON.stringify(bad.slice(0, 100))}`,
    };
  return { ids };
}

/** Whether an id could be a knowledge base id (checked before it reaches a query). */
export function looksLikeKnowledgeBaseId(id: string): boolean {
  return KNOWLEDGE_BASE_ID.test(id);
}

/**
 * The bases a token may use: its own claim (what it was issued with) cut to its grant's limit now, so a
 * consent narrowed later applies to tokens already out. Undefined: every base of the account.
 */
export function knowledgeBaseLimit(
  claim: readonly string[] | undefined,
  grant: readonly string[] | null | undefined,
): string[] | undefined {
  if (!claim && !grant) return undefined;
  if (!claim) return [...(grant ?? [])];
  if (!grant) return [...claim];
  return claim.filter((id) => grant.includes(id));
}
