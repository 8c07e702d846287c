import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { authClients } from '../../src/db/schema/index.ts';
import type { App } from '../../src/http/types.ts';
import { createHarness, createUser, type TestHarness, testConfig } from '../harness.ts';
import { authorizeInBrowser, Browser, decodeJwt, freePort, MemoryOAuthClient, pkcePair } from './oauth-helpers.ts';

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, MCP 2025-11-25): an MCP client
 * names itself by the https URL of a JSON document it serves. The documents here come from an https server on
 * loopback with a self-signed certificate: the app trusts that certificate through a setting no environment
 * variable reaches, and the loopback address through SSRF_ALLOW_HOSTS, so production keeps https-only.
 */

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

describe('Client ID Metadata Documents', () => {
  let h: TestHarness;
  let app: App;
  let base: string;
  let docs: Server;
  let docsOrigin: string;
  const routes = new Map<string, Handler>();
  let hits = new Map<string, number>();

  /** Serves `body` (JSON unless a string) at `path` of the document server; answers its URL. */
  const serve = (path: string, body: unknown, headers: Record<string, string> = {}): string => {
    routes.set(path, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', ...headers });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    });
    return `${docsOrigin}${path}`;
  };
  const doc = (url: string, extra: Record<string, unknown> = {}) => ({
    client_id: url,
    client_name: 'Acme Agent',
    redirect_uris: ['http://127.0.0.1:9/callback'],
    token_endpoint_auth_method: 'none',
    ...extra,
  });
  const authorizeUrl = (clientId: string, redirectUri = 'http://127.0.0.1:9/callback') => {
    const { challenge } = pkcePair();
    const u = new URL('/oauth/authorize', base);
    u.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'universal-mcp-read',
      resource: `${base}/mcp`,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's1',
    }).toString();
    return u.href;
  };
  /** An authorization request that must be refused on our own page: 400, no redirect anywhere. */
  const refusedAtAuthorize = async (clientId: string, redirectUri?: string) => {
    const res = await fetch(authorizeUrl(clientId, redirectUri), { redirect: 'manual' });
    expect(res.headers.get('location')).toBeNull();
    expect(res.status).toBe(400);
    return res.text();
  };
  const token = (form: Record<string, string>) =>
    fetch(`${base}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-cimd-'));
    execFileSync('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ]);
    const cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
    docs = createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
      const path = new URL(req.url ?? '/', 'https://x').pathname;
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const handler = routes.get(path);
      if (handler) return handler(req, res);
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => docs.listen(0, '127.0.0.1', resolve));
    const docsPort = (docs.address() as AddressInfo).port;
    docsOrigin = `https://127.0.0.1:${docsPort}`;

    h = await createHarness();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const config = testConfig(mkdtempSync(join(tmpdir(), 'sb-cimd-app-')), {
      BASE_URL: base,
      SSRF_ALLOW_HOSTS: `127.0.0.1:${docsPort}`,
      OAUTH_CLIENT_METADATA_TIMEOUT_MS: '1000',
    });
    app = await buildApp({
      config: { ...config, oauth: { ...config.oauth, clientMetadataCa: cert } },
      database: h.database,
      keyRing: h.keyRing,
    });
    await app.listen({ port, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await app?.close();
    await h?.close();
    docs?.closeAllConnections();
    await new Promise((resolve) => docs?.close(resolve));
  });

  it('the authorization server metadata advertises client_id_metadata_document_supported', async () => {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const meta = (await (await fetch(`${base}${path}`)).json()) as Record<string, unknown>;
      expect(meta.client_id_metadata_document_supported).toBe(true);
    }
  });

  it("the MCP SDK client identifies itself by its document's URL: consent shows the host, tokens work", async () => {
    hits = new Map();
    const url = serve('/clients/sdk.json', {
      client_id: `${docsOrigin}/clients/sdk.json`,
      client_name: 'CIMD Test Client',
      redirect_uris: ['http://127.0.0.1:9/mcp-callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
    const user = await createUser(app);
    const provider = new MemoryOAuthClient('CIMD Test Client', url);
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    const mcp = new Client({ name: 'cimd-test', version: '1.0.0' });
    await expect(mcp.connect(transport)).rejects.toThrow(/Unauthorized/);
    // No registration: the URL is the client id.
    expect(provider.info?.client_id).toBe(url);
    const authUrl = provider.authorizationUrl;
    expect(authUrl?.searchParams.get('client_id')).toBe(url);
    expect(authUrl?.searchParams.get('code_challenge_method')).toBe('S256');

    const { redirect, consentPage } = await authorizeInBrowser(new Browser(base), authUrl?.href ?? '', {
      email: user.account.email,
      password: user.password,
    });
    // The host is what the person can trust; the name is the document's own claim.
    expect(consentPage).toContain(`127.0.0.1:${new URL(docsOrigin).port}`);
    expect(consentPage).toContain('CIMD Test Client');
    expect(consentPage).toMatch(/name is given by the app itself/);
    // Its redirect URI is on loopback: any local program could present this client id.
    expect(consentPage).toContain('any program running here could be the one asking');
    const code = new URL(redirect).searchParams.get('code') ?? '';
    expect(code).not.toBe('');
    await transport.finishAuth(code);
    const access = provider.saved?.access_token ?? '';
    expect(decodeJwt(access).payload).toMatchObject({ client_id: url, aud: `${base}/mcp`, sub: user.account.id });

    const client = new Client({ name: 'cimd-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['list-connections', 'use-agent']);
    await client.close();

    // The refresh grant names the client by its URL too; the document was fetched once (cached).
    const refreshed = await token({
      grant_type: 'refresh_token',
      refresh_token: provider.saved?.refresh_token ?? '',
      client_id: url,
    });
    expect(refreshed.status).toBe(200);
    expect(hits.get('/clients/sdk.json')).toBe(1);
    // The authorized-apps page names it with its host.
    const apps = await fetch(`${base}/account/apps`, { headers: { cookie: `sb_session=${user.sessionToken}` } });
    expect(await apps.text()).toContain(`CIMD Test Client (127.0.0.1:${new URL(docsOrigin).port})`);
    const [row] = await h.database.db.select().from(authClients).where(eq(authClients.id, url));
    expect(row).toMatchObject({
      name: 'CIMD Test Client',
      type: 'public',
      registeredVia: 'metadata-document',
      accountId: null,
      redirectUris: ['http://127.0.0.1:9/mcp-callback'],
    });
  });

  it('a redirect_uri the document does not list is refused on our page, never redirected to', async () => {
    const url = `${docsOrigin}/clients/redirect.json`;
    serve('/clients/redirect.json', doc(url));
    const page = await refusedAtAuthorize(url, 'https://evil.example/steal');
    expect(page).toContain('redirect_uri');
    expect(page).not.toContain('evil.example/steal"');
  });

  it('a document whose client_id is not its URL is refused (invalid_client, at authorize and token)', async () => {
    const url = serve('/clients/other.json', doc(`${docsOrigin}/clients/someone-else.json`));
    expect(await refusedAtAuthorize(url)).toContain('client_id in the metadata document must be its own URL');
    const res = await token({
      grant_type: 'authorization_code',
      code: 'x',
      client_id: url,
      code_verifier: 'y'.repeat(43),
    });
    expect({ status: res.status, body: await res.json() }).toMatchObject({
      status: 400,
      body: {
        error: 'invalid_client',
        error_description: expect.stringContaining('client_id in the metadata document must be its own URL'),
      },
    });
  });

  it('an oversized, slow or non-JSON document, or one asking for a shared secret, is refused with its reason', async () => {
    const big = `${docsOrigin}/clients/big.json`;
    serve('/clients/big.json', doc(big, { padding: 'x'.repeat(6000) }));
    expect(await refusedAtAuthorize(big)).toContain('larger than 5120 bytes');

    routes.set('/clients/slow.json', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{');
    });
    expect(await refusedAtAuthorize(`${docsOrigin}/clients/slow.json`)).toContain('took too long');

    const notJson = await refusedAtAuthorize(serve('/clients/html.json', '<html>hello</html>'));
    expect(notJson).toContain('not JSON: serve the client metadata as a JSON object');
    // Whoever is signing in learns that the app, not they, must fix it.
    expect(notJson).toContain('until its publisher fixes the document');

    const secret = `${docsOrigin}/clients/secret.json`;
    serve('/clients/secret.json', doc(secret, { token_endpoint_auth_method: 'client_secret_basic' }));
    expect(await refusedAtAuthorize(secret)).toContain('token_endpoint_auth_method');

    const missing = `${docsOrigin}/clients/no-redirects.json`;
    serve('/clients/no-redirects.json', { client_id: missing, client_name: 'x' });
    expect(await refusedAtAuthorize(missing)).toContain('redirect_uris');

    expect(await refusedAtAuthorize(`${docsOrigin}/clients/absent.json`)).toContain(
      'the fetch answered HTTP 404: serve the document at exactly this URL with status 200',
    );
  });

  it('URLs the draft or the SSRF guard forbid are refused before any fetch', async () => {
    hits = new Map();
    // A private address that is not allow-listed, and loopback on another port.
    expect(await refusedAtAuthorize('https://10.1.2.3/client.json')).toContain('not a public address');
    expect(await refusedAtAuthorize('https://127.0.0.1:1/client.json')).toContain('not a public address');
    // No path, a fragment, http: not client metadata document URLs at all.
    for (const bad of [`${docsOrigin}`, `${docsOrigin}/`, `${docsOrigin}/c.json#x`, `http://127.0.0.1:9/c.json`]) {
      expect(await refusedAtAuthorize(bad)).toMatch(/client/);
    }
    expect(hits.size).toBe(0);
  });

  it('a metadata-document client is public: PKCE with S256 is required', async () => {
    const url = `${docsOrigin}/clients/pkce.json`;
    serve('/clients/pkce.json', doc(url));
    for (const change of [{ code_challenge: null }, { code_challenge_method: 'plain' }]) {
      const u = new URL(authorizeUrl(url));
      for (const [k, v] of Object.entries(change)) {
        if (v === null) u.searchParams.delete(k);
        else u.searchParams.set(k, v);
      }
      const res = await fetch(u, { redirect: 'manual' });
      expect(res.status).toBe(303);
      const back = new URL(res.headers.get('location') ?? '');
      expect(`${back.origin}${back.pathname}`).toBe('http://127.0.0.1:9/callback');
      expect(back.searchParams.get('error')).toBe('invalid_request');
      expect(back.searchParams.get('error_description')).toMatch(/code_challenge/);
    }
  });

  it('Cache-Control max-age is kept within bounds: no-store still caches for the minimum', async () => {
    hits = new Map();
    const url = `${docsOrigin}/clients/no-store.json`;
    serve('/clients/no-store.json', doc(url), { 'cache-control': 'no-store, max-age=0' });
    const browser = new Browser(base);
    for (let i = 0; i < 2; i++) {
      const step = await browser.follow(authorizeUrl(url));
      expect('page' in step && step.page).toContain('/login"');
    }
    expect(hits.get('/clients/no-store.json')).toBe(1);
  });
});
