import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auth, extractWWWAuthenticateParams, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import type { App } from '../../src/http/types.ts';
import { createHarness, createUser, type TestHarness, testConfig } from '../harness.ts';
import { authorizeInBrowser, Browser, decodeJwt, freePort } from './oauth-helpers.ts';

/** What an MCP client keeps between the steps of its OAuth flow (in memory here). */
class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  readonly redirectUrl = 'http://127.0.0.1:9/mcp-callback';
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'MCP Test Client',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/**
 * An MCP client that knows only `{BASE_URL}/mcp`: the SDK's own discovery from the 401, registration, PKCE,
 * sign-in and consent, then tokens the MCP endpoint accepts.
 */
describe('MCP client discovery and authorization (MCP SDK)', () => {
  let h: TestHarness;
  let app: App;
  let base: string;

  beforeAll(async () => {
    h = await createHarness();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    app = await buildApp({
      config: testConfig(mkdtempSync(join(tmpdir(), 'sb-mcp-oauth-')), { BASE_URL: base }),
      database: h.database,
      keyRing: h.keyRing,
      // The MCP tools read no connections here: this test is about getting in.
      mcpSources: { activeConnections: async () => [], agentTools: async () => [] },
    });
    await app.listen({ port, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await app?.close();
    await h?.close();
  });

  it('POST /mcp without a token answers 401 pointing at the protected-resource metadata', async () => {
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: '1', method: 'tools/list', params: {} }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource", scope="universal-mcp-read"`,
    );
    const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(res);
    expect(resourceMetadataUrl?.href).toBe(`${base}/.well-known/oauth-protected-resource`);
    expect(scope).toBe('universal-mcp-read');

    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      expect(await (await fetch(`${base}${path}`)).json()).toEqual({
        resource: `${base}/mcp`,
        authorization_servers: [base],
        scopes_supported: ['universal-mcp-read', 'universal-mcp-read-write'],
        bearer_methods_supported: ['header'],
        resource_name: 'Switchboard MCP',
        resource_documentation: `${base}/docs`,
      });
    }
    const api = (await (await fetch(`${base}/.well-known/oauth-protected-resource/api/v1`)).json()) as Record<
      string,
      unknown
    >;
    expect(api).toMatchObject({ resource: `${base}/api/v1`, authorization_servers: [base] });

    const as = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    expect(as).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/api/v1/auth/token`,
      registration_endpoint: `${base}/api/v1/auth/register`,
      revocation_endpoint: `${base}/api/v1/auth/revoke`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
    });
    expect(as.scopes_supported).toEqual([
      'universal-mcp-read',
      'universal-mcp-read-write',
      'llm-all',
      'agents-use',
      'agents-all',
      'connections',
      'account',
      'messaging-channels',
      'openid',
      'profile',
      'email',
    ]);
    const oidc = (await (await fetch(`${base}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(oidc).toEqual(as);
  });

  it("the SDK's auth() goes from the 401 through registration, PKCE and consent to a token for the MCP endpoint", async () => {
    const user = await createUser(app);
    const provider = new MemoryProvider();
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    const mcp = new Client({ name: 'mcp-test', version: '1.0.0' });
    // The first connect meets the 401, discovers, registers and asks the user to authorize.
    await expect(mcp.connect(transport)).rejects.toThrow(/Unauthorized/);
    expect(provider.info?.client_id).toMatch(/^app_/);
    const url = provider.authorizationUrl;
    expect(url?.origin).toBe(base);
    expect(url?.pathname).toBe('/oauth/authorize');
    expect(url?.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url?.searchParams.get('resource')).toBe(`${base}/mcp`);
    expect(url?.searchParams.get('scope')).toBe('universal-mcp-read');

    const { redirect } = await authorizeInBrowser(new Browser(base), url?.href ?? '', {
      email: user.account.email,
      password: user.password,
    });
    const code = new URL(redirect).searchParams.get('code') ?? '';
    await transport.finishAuth(code);
    const access = provider.saved?.access_token ?? '';
    expect(decodeJwt(access).payload).toMatchObject({
      aud: `${base}/mcp`,
      scope: 'universal-mcp-read',
      sub: user.account.id,
    });
    expect(provider.saved?.refresh_token).toBeTruthy();

    // Connected with the token: initialize and tools/list are what universal-mcp-read allows.
    const client2 = new Client({ name: 'mcp-test', version: '1.0.0' });
    await client2.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
    const tools = await client2.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['list-connections', 'use-agent']);
    await client2.close();

    // The token is for the MCP endpoint only: the REST API refuses it.
    const rest = await fetch(`${base}/api/v1/accounts/me`, { headers: { authorization: `Bearer ${access}` } });
    expect(rest.status).toBe(401);

    // The SDK refreshes with the rotating refresh token.
    const before = provider.saved?.refresh_token;
    expect(await auth(provider, { serverUrl: `${base}/mcp` })).toBe('AUTHORIZED');
    expect(provider.saved?.refresh_token).not.toBe(before);
  });
});
