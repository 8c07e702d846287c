import type { Config } from '../../config.ts';
import type { Db } from '../../db/client.ts';
import type { AuthClientRow } from '../../db/schema/index.ts';
import { jsonBodyProblem } from '../../lib/json.ts';
import type { Logger } from '../../lib/logger.ts';
import { SafeFetchError, safeFetch } from '../../lib/safe-fetch.ts';
import { hasNul, NUL_MESSAGE } from '../../lib/text.ts';
import { TtlCache } from '../../lib/ttl-cache.ts';
import { ALL_SCOPES } from '../scopes.ts';
import { effectiveClientScopes } from './policy.ts';
import { redirectUriProblem } from './redirect-uris.ts';
import { upsertMetadataDocumentClient } from './repo.ts';

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP authorization 2025-11-25): a
 * client whose `client_id` is an https URL is described by the JSON document served there. We fetch it through
 * the SSRF guard (5 KB, OAUTH_CLIENT_METADATA_TIMEOUT_MS, no redirects), validate it, keep it in this instance's
 * memory for its Cache-Control max-age held between one minute and one hour (so a changed document is seen
 * within an hour at most), and record the client in `auth_clients` (registered_via `metadata-document`, no
 * owner) so grants, tokens and the authorized-apps page treat it like any other third-party app. Only public
 * clients (`token_endpoint_auth_method: none`, PKCE S256 as for every client) are accepted.
 */

export const METADATA_DOCUMENT_MAX_BYTES = 5 * 1024;
/** Bounds on how long a fetched document is trusted, seconds: its Cache-Control max-age is held within them. */
export const METADATA_DOCUMENT_CACHE_SECONDS = { min: 60, max: 3600 } as const;
/** A document that could not be used is not fetched again for this long (bounds the fetches one URL causes). */
const FAILURE_CACHE_MS = 30_000;
const MAX_REDIRECT_URIS = 20;
const MAX_NAME_LENGTH = 200;
const ALLOWED_GRANT_TYPES: readonly string[] = ['authorization_code', 'refresh_token'];

/** Why a metadata document (or its URL) cannot identify a client; becomes an OAuth invalid_client. */
export class MetadataDocumentError extends Error {}

/** Whether a client_id is meant as a metadata document URL (then it must pass `clientIdUrlProblem`). */
export function isMetadataDocumentId(id: string): boolean {
  return /^https:\/\//i.test(id);
}

/** What makes an https client_id unusable as a document URL (draft §3), or undefined. */
export function clientIdUrlProblem(id: string): string | undefined {
  const what = 'a client_id URL';
  let url: URL;
  try {
    url = new URL(id);
  } catch {
    return `${what} must be a valid https URL`;
  }
  if (id.includes('#')) return `${what} must not contain a fragment`;
  if (url.username || url.password) return `${what} must not contain a user name or password`;
  if (url.pathname === '/' || url.pathname === '') return `${what} must have a path (e.g. /client.json)`;
  if (/(^|\/)(\.|%2e){1,2}(\/|$)/i.test(id.slice(id.indexOf('//') + 2).split('?')[0] ?? '')) {
    return `${what} must not contain . or .. path segments`;
  }
  if (url.href !== id) return `${what} must be written in its normal form: ${url.href}`;
  return undefined;
}

function fail(id: string, reason: string): MetadataDocumentError {
  return new MetadataDocumentError(
    `client metadata document ${id}: ${reason}. The app cannot be authorized until its publisher fixes the document`,
  );
}

/** The client a valid document describes, as an `auth_clients` row; throws what is wrong with it. */
export function clientFromDocument(id: string, doc: unknown): Omit<AuthClientRow, 'createdAt' | 'updatedAt'> {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw fail(id, 'is not a JSON object');
  const problem = jsonBodyProblem(doc) ?? (hasNul(doc) ? NUL_MESSAGE : undefined);
  if (problem) throw fail(id, problem);
  const d = doc as Record<string, unknown>;
  if (d.client_id !== id) {
    throw fail(
      id,
      `the client_id in the metadata document must be its own URL exactly (it says ${JSON.stringify(d.client_id)})`,
    );
  }
  const method = d.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') {
    throw fail(
      id,
      `token_endpoint_auth_method ${JSON.stringify(method)} is not accepted: a client identified by a metadata document ` +
        'is a public client ("none", with PKCE); shared secrets are never allowed',
    );
  }
  if ('client_secret' in d || 'client_secret_expires_at' in d) throw fail(id, 'must not contain client_secret');
  const uris = d.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || !uris.every((u) => typeof u === 'string')) {
    throw fail(id, 'redirect_uris must be a non-empty array of strings');
  }
  if (uris.length > MAX_REDIRECT_URIS) throw fail(id, `redirect_uris may list at most ${MAX_REDIRECT_URIS} URIs`);
  const applicationType = d.application_type === 'native' ? 'native' : 'web';
  for (const uri of uris as string[]) {
    const bad = redirectUriProblem(uri, { allowCustomScheme: applicationType === 'native' });
    if (bad) throw fail(id, `redirect_uris: ${bad}`);
  }
  for (const [field, allowed] of [
    ['grant_types', ALLOWED_GRANT_TYPES],
    ['response_types', ['code'] as readonly string[]],
  ] as const) {
    const value = d[field];
    if (value === undefined) continue;
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && allowed.includes(v))) {
      throw fail(id, `${field} may hold only ${allowed.join(', ')}`);
    }
  }
  if (d.client_name !== undefined && typeof d.client_name !== 'string') throw fail(id, 'client_name must be a string');
  if (d.scope !== undefined && typeof d.scope !== 'string') throw fail(id, 'scope must be a string');
  const asked = typeof d.scope === 'string' ? d.scope.split(' ').filter(Boolean) : [...ALL_SCOPES];
  const host = new URL(id).host;
  const name = typeof d.client_name === 'string' && d.client_name.trim() ? d.client_name.trim() : host;
  return {
    id,
    accountId: null,
    name: name.slice(0, MAX_NAME_LENGTH),
    type: 'public',
    roles: ['third-party'],
    redirectUris: [...new Set(uris as string[])],
    allowedScopes: effectiveClientScopes(asked, ['third-party']),
    branding: {},
    secretCiphertext: null,
    metadata: { application_type: applicationType },
    registeredVia: 'metadata-document',
  };
}

/** Seconds a document may be kept: its Cache-Control max-age within METADATA_DOCUMENT_CACHE_SECONDS. */
export function cacheSeconds(cacheControl: string | undefined): number {
  const { min, max } = METADATA_DOCUMENT_CACHE_SECONDS;
  const m = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/i.exec(cacheControl ?? '');
  const asked = m?.[1] ? Number(m[1]) : min;
  return Math.max(min, Math.min(max, asked));
}

type Cached = { row: AuthClientRow } | { error: string };

/** Resolves metadata-document clients of one authorization server; see the module comment. */
export class MetadataDocuments {
  private readonly cache = new TtlCache<string, Cached>(METADATA_DOCUMENT_CACHE_SECONDS.max * 1000, 1000);
  private readonly pending = new Map<string, Promise<AuthClientRow>>();

  constructor(private readonly deps: { db: Db; config: Config; log: Logger }) {}

  /** The client `id` names, fetched (or from the cache); throws MetadataDocumentError. */
  async find(id: string): Promise<AuthClientRow> {
    const urlProblem = clientIdUrlProblem(id);
    if (urlProblem) throw new MetadataDocumentError(urlProblem);
    const hit = this.cache.get(id);
    if (hit) {
      if ('error' in hit) throw new MetadataDocumentError(hit.error);
      return hit.row;
    }
    let loading = this.pending.get(id);
    if (!loading) {
      loading = this.load(id).finally(() => this.pending.delete(id));
      this.pending.set(id, loading);
    }
    return loading;
  }

  private async load(id: string): Promise<AuthClientRow> {
    try {
      const { doc, seconds } = await this.fetchDocument(id);
      const row = await this.record(clientFromDocument(id, doc));
      this.cache.set(id, { row }, Date.now() + seconds * 1000);
      return row;
    } catch (err) {
      if (!(err instanceof MetadataDocumentError)) throw err;
      this.deps.log.info({ clientId: id, reason: err.message }, 'client metadata document refused');
      this.cache.set(id, { error: err.message }, Date.now() + FAILURE_CACHE_MS);
      throw err;
    }
  }

  private async fetchDocument(id: string): Promise<{ doc: unknown; seconds: number }> {
    const { config } = this.deps;
    let res: Awaited<ReturnType<typeof safeFetch>>;
    try {
      res = await safeFetch(id, {
        headers: { accept: 'application/json' },
        maxBytes: METADATA_DOCUMENT_MAX_BYTES,
        timeoutMs: config.oauth.clientMetadataTimeoutMs,
        maxRedirects: 0,
        allowHosts: config.ssrfAllowHosts,
        ...(config.oauth.clientMetadataCa ? { ca: config.oauth.clientMetadataCa } : {}),
      });
    } catch (err) {
      if (!(err instanceof SafeFetchError)) throw err;
      const reason =
        err.reason === 'redirects'
          ? 'must be served at its URL, not redirected'
          : err.reason === 'timeout'
            ? `took too long to answer (more than ${config.oauth.clientMetadataTimeoutMs} ms, OAUTH_CLIENT_METADATA_TIMEOUT_MS)`
            : err.message;
      throw fail(id, reason);
    }
    if (res.status !== 200) {
      throw fail(id, `the fetch answered HTTP ${res.status}: serve the document at exactly this URL with status 200`);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw fail(id, 'is not JSON: serve the client metadata as a JSON object');
    }
    return { doc, seconds: cacheSeconds(res.headers['cache-control']) };
  }

  /** Writes the client as the document describes it now: every instance's grants and tokens join this row. */
  private async record(client: Omit<AuthClientRow, 'createdAt' | 'updatedAt'>): Promise<AuthClientRow> {
    const row = await upsertMetadataDocumentClient(this.deps.db, client);
    if (!row) throw new MetadataDocumentError(`client_id ${client.id} is taken by another client`);
    return row;
  }
}
