import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auth, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { connections } from '../../src/db/schema/index.ts';
import type { App } from '../../src/http/types.ts';
import { authorize } from '../../src/modules/connections/test-support.ts';
import { openAccessToken } from '../../src/modules/connections/tokens.ts';
import { type FakeLlm, startFakeLlm } from '../fakes/llm-upstream.ts';
import { type FakeOAuthProvider, fakeProvidersEnv, startFakeOAuthProvider } from '../fakes/oauth-provider.ts';
import { createHarness, createUser, type TestHarness, type TestUser, testConfig } from '../harness.ts';
import { authorizeInBrowser, Browser, decodeJwt, freePort, MemoryOAuthClient } from './oauth-helpers.ts';

/**
 * An MCP client that knows only `{BASE_URL}/mcp`: the SDK's own discovery from the 401, registration, PKCE,
 * sign-in and consent, then tokens the MCP endpoint accepts, used on the user's real connections (the fake
 * Acme provider) and the agent (the scripted fake LLM).
 */
describe('MCP client discovery and authorization (MCP SDK)', () => {
  let h: TestHarness;
  let app: App;
  let base: string;
  let llm: FakeLlm;
  let acme: FakeOAuthProvider;

  beforeAll(async () => {
    llm = await startFakeLlm();
    acme = await startFakeOAuthProvider();
    h = await createHarness();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    app = await buildApp({
      config: testConfig(mkdtempSync(join(tmpdir(), 'sb-mcp-oauth-')), {
        BASE_URL: base,
        LLM_BASE_URL: llm.url,
        LLM_MODELS: 'fake-model',
        ...fakeProvidersEnv(acme),
      }),
      database: h.database,
      keyRing: h.keyRing,
    });
    await app.listen({ port, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await app?.close();
    await h?.close();
    await llm?.close();
    await acme?.close();
  });

  /** Connects Acme for the user through the real connect flow; answers the provider token it holds. */
  const connectAcme = async (user: TestUser) => {
    const back = await authorize(app, user.sessionToken, {
      providerId: 'acme',
      redirectUrl: `${base}/app/connections`,
    });
    const id = back.searchParams.get('connectionId') ?? '';
    const [row] = await h.database.db.select().from(connections).where(eq(connections.id, id));
    if (!row) throw new Error(`no connection in ${back}`);
    return openAccessToken(app.deps, row);
  };

  it('POST /mcp without a token answers 401 pointing at the protected-resource metadata', async () => {
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: '1', method: 'tools/list', params: {} }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource", scope="universal-mcp-read universal-mcp-read-write"`,
    );
    const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(res);
    expect(resourceMetadataUrl?.href).toBe(`${base}/.well-known/oauth-protected-resource`);
    expect(scope).toBe('universal-mcp-read universal-mcp-read-write');

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

  it("the SDK's auth() goes from the 401 through registration, PKCE and consent to a token that lists and calls the tools", async () => {
    const user = await createUser(app);
    const acmeToken = await connectAcme(user);
    const provider = new MemoryOAuthClient('MCP Test Client');
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
    // The challenge's scope: what listing and calling the tools needs.
    expect(url?.searchParams.get('scope')).toBe('universal-mcp-read universal-mcp-read-write');

    const { redirect } = await authorizeInBrowser(new Browser(base), url?.href ?? '', {
      email: user.account.email,
      password: user.password,
    });
    const code = new URL(redirect).searchParams.get('code') ?? '';
    await transport.finishAuth(code);
    const access = provider.saved?.access_token ?? '';
    expect(decodeJwt(access).payload).toMatchObject({
      aud: `${base}/mcp`,
      scope: 'universal-mcp-read universal-mcp-read-write',
      sub: user.account.id,
    });
    expect(provider.saved?.refresh_token).toBeTruthy();

    // The same client, connected with that token: tools/list, list-connections and use-agent on the user's
    // real Acme connection.
    const client = new Client({ name: 'mcp-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['list-connections', 'use-agent']);
    const listed = await client.callTool({ name: 'list-connections', arguments: {} });
    expect(listed).toEqual({
      content: [{ type: 'text', text: '1 connected service:\n- Acme (acme): Ada Lovelace <ada@acme.test>' }],
      _meta: {
        active: [
          {
            serviceId: 'acme',
            serviceLabel: 'Acme',
            connectedUserAccount: { email: 'ada@acme.test', displayName: 'Ada Lovelace' },
          },
        ],
      },
    });
    acme.reset();
    llm.enqueue({ toolCalls: [{ name: 'acme_get_item', arguments: { id: 'item-4' } }] }, { content: 'It is Item 4.' });
    const answer = (await client.callTool({
      name: 'use-agent',
      arguments: { prompt: 'What is Acme item 4?' },
    })) as CallToolResult;
    expect(answer.isError).toBeFalsy();
    expect(answer.content).toEqual([{ type: 'text', text: 'It is Item 4.' }]);
    expect(acme.apiRequests).toEqual([{ method: 'GET', path: '/items/item-4', token: acmeToken, body: undefined }]);
    expect(llm.requests.at(-1)?.messages.at(-1)?.content).toBe(
      '<tool_output tool="acme_get_item" trust="untrusted">\n{"id":"item-4","title":"Item 4"}\n</tool_output>',
    );
    await client.close();

    // The token is for the MCP endpoint only: the REST API refuses it.
    const rest = await fetch(`${base}/api/v1/accounts/me`, { headers: { authorization: `Bearer ${access}` } });
    expect(rest.status).toBe(401);

    // The SDK refreshes with the rotating refresh token.
    const before = provider.saved?.refresh_token;
    expect(await auth(provider, { serverUrl: `${base}/mcp` })).toBe('AUTHORIZED');
    expect(provider.saved?.refresh_token).not.toBe(before);
  });

  it('a token of universal-mcp-read alone lists the tools; tools/call is 403 insufficient_scope and runs nothing', async () => {
    const user = await createUser(app);
    await connectAcme(user);
    // A client that asks for less than the challenge says.
    const provider = new MemoryOAuthClient('MCP Test Client');
    expect(await auth(provider, { serverUrl: `${base}/mcp`, scope: 'universal-mcp-read' })).toBe('REDIRECT');
    expect(provider.authorizationUrl?.searchParams.get('scope')).toBe('universal-mcp-read');
    const { redirect } = await authorizeInBrowser(new Browser(base), provider.authorizationUrl?.href ?? '', {
      email: user.account.email,
      password: user.password,
    });
    const code = new URL(redirect).searchParams.get('code') ?? '';
    expect(await auth(provider, { serverUrl: `${base}/mcp`, authorizationCode: code })).toBe('AUTHORIZED');
    const access = provider.saved?.access_token ?? '';
    expect(decodeJwt(access).payload).toMatchObject({ scope: 'universal-mcp-read', sub: user.account.id });

    const client = new Client({ name: 'mcp-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
    expect((await client.listTools()).tools).toHaveLength(2);
    const llmCalls = llm.requests.length;
    acme.reset();
    // The SDK tries to step up (a refresh, which cannot widen the grant) and gives up with the 403.
    await expect(
      client.callTool({ name: 'use-agent', arguments: { prompt: 'What is Acme item 1?' } }),
    ).rejects.toMatchObject({ code: 403 });
    await client.close();

    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${provider.saved?.access_token ?? ''}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: '1',
        method: 'tools/call',
        params: { name: 'list-connections', arguments: {} },
      }),
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource", error="insufficient_scope", scope="universal-mcp-read-write"`,
    );
    expect(await res.json()).toEqual({
      error: 'ForbiddenError',
      message: 'Missing required scope: universal-mcp-read-write',
      statusCode: 403,
    });
    expect(llm.requests.length).toBe(llmCalls);
    expect(acme.apiRequests).toEqual([]);
  });
});
