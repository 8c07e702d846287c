import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { providerCredentialVariables } from '../../src/modules/providers/catalog.ts';

/**
 * A fake OAuth 2 provider with a small REST API, on loopback: authorize (auto-approves with a redirect),
 * token (authorization code with PKCE S256, refresh with rotating refresh tokens, `expires_in`), revoke,
 * user info, and `/api` endpoints (`/me`, `/items` with cursor pages, `POST /items`). Tests read what it
 * received (counters, tokens used) and queue faults per endpoint: any status (5xx, 429 with `Retry-After`,
 * `invalid_grant`), slow answers, refused tokens.
 */

export type FakeEndpoint = 'authorize' | 'token' | 'refresh' | 'revoke' | 'userinfo' | 'api';

export interface FakeFault {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** Wait this long before answering (a status is optional: a slow success). */
  delayMs?: number;
}

export interface FakeUser {
  id: string;
  login: string;
  name?: string;
  email?: string;
  avatar_url?: string;
}

export interface FakeApiRequest {
  method: string;
  path: string;
  token: string;
  body: unknown;
  /** The W3C `traceparent` the call carried, if any. */
  traceparent?: string | undefined;
}

interface TokenInfo {
  user: FakeUser;
  expiresAt: number;
  revoked: boolean;
  scope: string;
}

export interface FakeOAuthProvider {
  url: string;
  clientId: string;
  clientSecret: string;
  /** Requests served per endpoint (`refresh` counts refresh_token grants only; `token` code exchanges). */
  counts: Record<FakeEndpoint, number>;
  /** Access tokens presented to /api, in order. */
  apiTokens: string[];
  /** Paths of /api requests, with their query. */
  apiPaths: string[];
  /** Every /api request: method, path with query, the bearer presented and the JSON body (if any). */
  apiRequests: FakeApiRequest[];
  /** Tokens revoked through /revoke. */
  revokedTokens: string[];
  /** Every request, with the host it was sent to (the Host header): per-connection hosts are checked by it. */
  requests: Array<{ host: string; method: string; path: string }>;
  /** Fields added to every token answer (Salesforce's `instance_url`). */
  tokenExtras: Record<string, unknown>;
  /** What `GET /api/sites` lists: the sites a grant reaches (Atlassian's accessible resources). */
  sites: Array<{ id: string; url: string }>;
  /** The user the next authorization signs in as. */
  user: FakeUser;
  /** `expires_in` of issued access tokens (seconds). */
  expiresIn: number;
  /** Issue a new refresh token on each refresh (the old one then answers invalid_grant). */
  rotateRefreshTokens: boolean;
  /** Answer refreshes without a refresh_token field (the old refresh token stays valid). */
  omitRefreshToken: boolean;
  /** Refuse access tokens past their expiry at /api (401), as real providers do. */
  enforceExpiry: boolean;
  /** Queue faults for the next requests of an endpoint (each fault serves one request). */
  fail(endpoint: FakeEndpoint, ...faults: FakeFault[]): void;
  /** Every token issued so far becomes invalid: refresh answers invalid_grant, /api 401. */
  revokeEverything(): void;
  /** Access tokens issued so far are refused at /api (401); refresh tokens still work. */
  invalidateAccessTokens(): void;
  reset(): void;
  close(): Promise<void>;
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const ITEMS = Array.from({ length: 12 }, (_, i) => ({
  id: `item-${i + 1}`,
  title: `Item ${i + 1}`,
  secret_field: 'not kept by the tool',
}));
const PAGE_SIZE = 5;

export async function startFakeOAuthProvider(
  opts: { clientId?: string; clientSecret?: string } = {},
): Promise<FakeOAuthProvider> {
  const queues = new Map<FakeEndpoint, FakeFault[]>();
  const codes = new Map<string, { redirectUri: string; challenge?: string; user: FakeUser; scope: string }>();
  const accessTokens = new Map<string, TokenInfo>();
  const refreshTokens = new Map<string, { user: FakeUser; scope: string; valid: boolean }>();
  const created: Array<{ id: string; title: string }> = [];
  let serial = 0;
  const fresh = (kind: string) => `acme_${kind}_${++serial}_${randomBytes(8).toString('hex')}`;

  const fake: FakeOAuthProvider = {
    url: '',
    clientId: opts.clientId ?? 'acme-client-id',
    clientSecret: opts.clientSecret ?? 'acme-client-secret',
    counts: { authorize: 0, token: 0, refresh: 0, revoke: 0, userinfo: 0, api: 0 },
    apiTokens: [],
    apiPaths: [],
    apiRequests: [],
    revokedTokens: [],
    requests: [],
    tokenExtras: {},
    sites: [],
    user: {
      id: 'u-1001',
      login: 'ada',
      name: 'Ada Lovelace',
      email: 'ada@acme.test',
      avatar_url: 'https://acme.test/ada.png',
    },
    expiresIn: 3600,
    rotateRefreshTokens: true,
    omitRefreshToken: false,
    enforceExpiry: false,
    fail(endpoint, ...faults) {
      queues.set(endpoint, [...(queues.get(endpoint) ?? []), ...faults]);
    },
    revokeEverything() {
      for (const t of accessTokens.values()) t.revoked = true;
      for (const t of refreshTokens.values()) t.valid = false;
    },
    invalidateAccessTokens() {
      for (const t of accessTokens.values()) t.revoked = true;
    },
    reset() {
      queues.clear();
      for (const k of Object.keys(fake.counts)) fake.counts[k as FakeEndpoint] = 0;
      fake.apiTokens.length = 0;
      fake.apiPaths.length = 0;
      fake.apiRequests.length = 0;
      fake.revokedTokens.length = 0;
      fake.requests.length = 0;
      fake.tokenExtras = {};
      fake.sites = [];
      fake.expiresIn = 3600;
      fake.rotateRefreshTokens = true;
      fake.omitRefreshToken = false;
      fake.enforceExpiry = false;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  /** Applies the next queued fault of an endpoint; true when it answered. */
  async function faulted(endpoint: FakeEndpoint, res: ServerResponse): Promise<boolean> {
    const fault = queues.get(endpoint)?.shift();
    if (!fault) return false;
    if (fault.delayMs) await sleep(fault.delayMs);
    if (fault.status === undefined) return false;
    json(
      res,
      fault.status,
      fault.body ?? { error: 'fake_fault', message: `fake fault ${fault.status}` },
      fault.headers,
    );
    return true;
  }

  function clientOk(req: IncomingMessage, form: URLSearchParams): boolean {
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
    if (basic?.[1]) {
      const [id, secret] = Buffer.from(basic[1], 'base64').toString('utf8').split(':').map(decodeURIComponent);
      return id === fake.clientId && secret === fake.clientSecret;
    }
    return form.get('client_id') === fake.clientId && form.get('client_secret') === fake.clientSecret;
  }

  function issue(user: FakeUser, scope: string, withRefresh: boolean) {
    const access = fresh('at');
    accessTokens.set(access, { user, expiresAt: Date.now() + fake.expiresIn * 1000, revoked: false, scope });
    const body: Record<string, unknown> = {
      ...fake.tokenExtras,
      access_token: access,
      token_type: 'Bearer',
      expires_in: fake.expiresIn,
      scope,
    };
    if (withRefresh) {
      const refresh = fresh('rt');
      refreshTokens.set(refresh, { user, scope, valid: true });
      body.refresh_token = refresh;
    }
    return body;
  }

  function bearer(req: IncomingMessage): { token: string; info: TokenInfo } | undefined {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const info = token ? accessTokens.get(token) : undefined;
    if (!token || !info || info.revoked) return undefined;
    if (fake.enforceExpiry && info.expiresAt <= Date.now()) return undefined;
    return { token, info };
  }

  async function api(req: IncomingMessage, res: ServerResponse, url: URL, path: string): Promise<void> {
    fake.counts.api++;
    fake.apiPaths.push(`${path}${url.search}`);
    const auth = bearer(req);
    const presented = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    fake.apiTokens.push(presented);
    const text = req.method === 'GET' ? '' : await readBody(req);
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    fake.apiRequests.push({
      method: req.method ?? '',
      path: `${path}${url.search}`,
      token: presented,
      body,
      traceparent: typeof req.headers.traceparent === 'string' ? req.headers.traceparent : undefined,
    });
    if (await faulted('api', res)) return;
    if (!auth) return json(res, 401, { message: 'Bad credentials' });
    if (req.method === 'GET' && path === '/me') return json(res, 200, { ...auth.info.user, plan: 'pro' });
    if (req.method === 'GET' && path === '/sites') return json(res, 200, fake.sites);
    if (req.method === 'GET' && path === '/items') {
      const start = Number(url.searchParams.get('cursor') ?? '0');
      const limit = Math.min(Number(url.searchParams.get('limit') ?? PAGE_SIZE), PAGE_SIZE);
      const all = [...ITEMS, ...created];
      const page = all.slice(start, start + limit);
      const next = start + limit < all.length ? String(start + limit) : null;
      return json(res, 200, { items: page, next_cursor: next, total: all.length });
    }
    const one = /^\/items\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && one) {
      const item = [...ITEMS, ...created].find((i) => i.id === decodeURIComponent(one[1] ?? ''));
      return item ? json(res, 200, item) : json(res, 404, { message: 'Item not found' });
    }
    if (req.method === 'POST' && path === '/items') {
      const { title } = (body ?? {}) as { title?: string };
      if (!title) return json(res, 422, { message: 'title is required' });
      const item = { id: `item-new-${created.length + 1}`, title };
      created.push(item);
      return json(res, 201, item);
    }
    return json(res, 404, { message: 'Not found' });
  }

  const server: Server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://fake');
      fake.requests.push({ host: req.headers.host ?? '', method: req.method ?? '', path: url.pathname });
      // `/w/<workspace>/...` serves the same endpoints for the provider with a finalize field.
      const path = url.pathname.replace(/^\/w\/[a-z0-9-]+/, '');

      if (req.method === 'GET' && path === '/authorize') {
        fake.counts.authorize++;
        const redirectUri = url.searchParams.get('redirect_uri') ?? '';
        const target = new URL(redirectUri);
        const state = url.searchParams.get('state');
        if (state) target.searchParams.set('state', state);
        const fault = queues.get('authorize')?.shift();
        if (fault || url.searchParams.get('client_id') !== fake.clientId) {
          target.searchParams.set('error', 'access_denied');
          target.searchParams.set('error_description', 'The user denied access');
        } else {
          const code = fresh('code');
          const challenge = url.searchParams.get('code_challenge') ?? undefined;
          codes.set(code, {
            redirectUri,
            challenge,
            user: { ...fake.user },
            scope: url.searchParams.get('scope') ?? '',
          });
          target.searchParams.set('code', code);
        }
        res.writeHead(302, { location: target.toString() });
        return res.end();
      }

      if (req.method === 'POST' && path === '/token') {
        const form = new URLSearchParams(await readBody(req));
        const grant = form.get('grant_type');
        const endpoint: FakeEndpoint = grant === 'refresh_token' ? 'refresh' : 'token';
        fake.counts[endpoint]++;
        if (await faulted(endpoint, res)) return;
        if (!clientOk(req, form)) return json(res, 401, { error: 'invalid_client' });
        if (grant === 'authorization_code') {
          const code = form.get('code') ?? '';
          const entry = codes.get(code);
          codes.delete(code);
          if (!entry || entry.redirectUri !== form.get('redirect_uri')) {
            return json(res, 400, { error: 'invalid_grant', error_description: 'bad code or redirect_uri' });
          }
          if (entry.challenge) {
            const verifier = form.get('code_verifier') ?? '';
            const computed = createHash('sha256').update(verifier).digest('base64url');
            if (computed !== entry.challenge) {
              return json(res, 400, { error: 'invalid_grant', error_description: 'PKCE verification failed' });
            }
          }
          return json(res, 200, issue(entry.user, entry.scope, true));
        }
        if (grant === 'refresh_token') {
          const rt = form.get('refresh_token') ?? '';
          const entry = refreshTokens.get(rt);
          if (!entry?.valid) {
            return json(res, 400, { error: 'invalid_grant', error_description: 'refresh token revoked or unknown' });
          }
          // A rotating provider retires the old refresh token; one that sends none keeps it valid.
          const rotate = fake.rotateRefreshTokens && !fake.omitRefreshToken;
          if (rotate) entry.valid = false;
          const body = issue(entry.user, entry.scope, rotate);
          return json(res, 200, body);
        }
        return json(res, 400, { error: 'unsupported_grant_type' });
      }

      if (req.method === 'POST' && path === '/revoke') {
        fake.counts.revoke++;
        const form = new URLSearchParams(await readBody(req));
        if (await faulted('revoke', res)) return;
        if (!clientOk(req, form)) return json(res, 401, { error: 'invalid_client' });
        const token = form.get('token') ?? '';
        fake.revokedTokens.push(token);
        const at = accessTokens.get(token);
        if (at) at.revoked = true;
        const rt = refreshTokens.get(token);
        if (rt) rt.valid = false;
        res.writeHead(200);
        return res.end();
      }

      if (req.method === 'GET' && path === '/userinfo') {
        fake.counts.userinfo++;
        if (await faulted('userinfo', res)) return;
        const auth = bearer(req);
        if (!auth) return json(res, 401, { message: 'Bad credentials' });
        return json(res, 200, auth.info.user);
      }

      if (path.startsWith('/api/')) return await api(req, res, url, path.slice(4));
      return json(res, 404, { message: 'Not found' });
    } catch (err) {
      json(res, 500, { message: (err as Error).message });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

/** The fake's provider file: `acme` (one connection per account), four tools (three read, one write). */
export function acmeProvider(url: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'acme',
    label: 'Acme',
    description: 'A fake provider for the tests: items, a profile and OAuth with PKCE.',
    category: 'testing',
    authType: 'oauth',
    allowMultipleConnections: false,
    oauth: {
      authorizationUrl: `${url}/authorize`,
      tokenUrl: `${url}/token`,
      revocationUrl: `${url}/revoke`,
      userInfo: {
        url: `${url}/userinfo`,
        fields: { providerUserId: 'id', email: 'email', displayName: ['name', 'login'], avatar: 'avatar_url' },
      },
      defaultScopes: ['items.read', 'items.write'],
      pkce: true,
      refreshBufferSeconds: 60,
    },
    api: { baseUrl: `${url}/api` },
    tools: [
      {
        name: 'list_items',
        description: 'List the items of the connected Acme account, oldest first, with ids and titles.',
        mode: 'read',
        parameters: {
          type: 'object',
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: 5, description: 'Items per page.', default: 5 },
          },
          required: [],
        },
        request: {
          method: 'GET',
          path: '/items',
          query: { limit: '{{limit}}' },
          pagination: { style: 'cursor', cursorPath: 'next_cursor', param: 'cursor', maxPages: 3 },
        },
        response: { listPath: 'items', fields: ['id', 'title'], keep: ['total'] },
      },
      {
        name: 'get_item',
        description: 'Get one Acme item by its id (from list_items), with its title.',
        mode: 'read',
        parameters: {
          type: 'object',
          properties: { id: { type: 'string', minLength: 1, description: 'The item id, e.g. item-1.' } },
          required: ['id'],
        },
        request: { method: 'GET', path: '/items/{id}' },
        response: { fields: ['id', 'title'] },
      },
      {
        name: 'create_item',
        description: 'Create an Acme item with a title; answers the new item with its id.',
        mode: 'write',
        parameters: {
          type: 'object',
          properties: { title: { type: 'string', minLength: 1, maxLength: 200, description: 'The title.' } },
          required: ['title'],
        },
        request: { method: 'POST', path: '/items', body: { title: '{{title}}' } },
      },
      {
        name: 'whoami',
        description: 'The profile of the connected Acme user: id, login, name, e-mail and plan.',
        mode: 'read',
        parameters: { type: 'object', properties: {}, required: [] },
        request: { method: 'GET', path: '/me' },
      },
    ],
    ...overrides,
  };
}

/** `acme-team`: several connections per account, and a `workspace` field asked after OAuth (finalize). */
export function acmeTeamProvider(url: string): Record<string, unknown> {
  const base = acmeProvider(url);
  return {
    ...base,
    id: 'acme-team',
    label: 'Acme Team',
    allowMultipleConnections: true,
    finalizeFields: [
      { name: 'workspace', label: 'Workspace', description: 'Your workspace name', pattern: '[a-z0-9-]{2,30}' },
    ],
    oauth: {
      ...(base.oauth as Record<string, unknown>),
      userInfo: {
        url: `${url}/w/{workspace}/userinfo`,
        fields: { providerUserId: 'id', email: 'email', displayName: ['name', 'login'] },
      },
    },
    api: { baseUrl: `${url}/w/{workspace}/api` },
  };
}

/** `acme-regional`: its authorization and token URLs are built from a `workspace` the user gives before OAuth. */
export function acmeRegionalProvider(url: string): Record<string, unknown> {
  const base = acmeProvider(url);
  return {
    ...base,
    id: 'acme-regional',
    label: 'Acme Regional',
    finalizeFields: [
      { name: 'workspace', label: 'Workspace', description: 'Where your Acme lives', pattern: '[a-z0-9-]{2,30}' },
    ],
    oauth: {
      ...(base.oauth as Record<string, unknown>),
      authorizationUrl: `${url}/w/{workspace}/authorize`,
      tokenUrl: `${url}/w/{workspace}/token`,
    },
  };
}

/** A PROVIDERS_DIR holding the fake's providers, and the environment a harness needs to use them. */
export function fakeProvidersEnv(fake: FakeOAuthProvider, extra: Record<string, string> = {}): Record<string, string> {
  return providersDirEnv(
    [
      { fake, definition: acmeProvider(fake.url) },
      { fake, definition: acmeTeamProvider(fake.url) },
    ],
    extra,
  );
}

/**
 * A PROVIDERS_DIR with these provider files, each backed by its fake (whose client credentials are set as
 * `PROVIDER_<ID>_CLIENT_ID` and `_CLIENT_SECRET`): several fakes give several independent services.
 */
export function providersDirEnv(
  providers: Array<{ fake: FakeOAuthProvider; definition: Record<string, unknown> }>,
  extra: Record<string, string> = {},
): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-providers-'));
  mkdirSync(dir, { recursive: true });
  const env: Record<string, string> = { PROVIDERS_DIR: dir };
  for (const { fake, definition } of providers) {
    const id = String(definition.id);
    writeFileSync(join(dir, `${id}.json`), JSON.stringify(definition, null, 2));
    const vars = providerCredentialVariables(id);
    env[vars.clientId] = fake.clientId;
    env[vars.clientSecret] = fake.clientSecret;
  }
  return { ...env, ...extra };
}
