import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/types.ts';
import { createHarness, createUser, type TestHarness, type TestUser } from '../harness.ts';
import { authorizeInBrowser, Browser, decodeJwt, listeningApp, pkcePair } from './oauth-helpers.ts';

/**
 * Which scopes an authorization asks for, by the resource it names (RFC 8707): the defaults of a request without
 * `scope` (as the MCP conformance suite's authorization-code scenario sends it), shown on the consent screen, and
 * the refusal of a request mixing scopes of the MCP endpoint and of the REST API (a token serves one resource).
 */
describe('OAuth scopes by resource', () => {
  let h: TestHarness;
  let app: App;
  let base: string;
  const redirectUri = 'http://127.0.0.1:9/callback';

  beforeAll(async () => {
    h = await createHarness();
    ({ app, base } = await listeningApp(h));
  });
  afterAll(() => h.close());

  const register = (metadata: Partial<client.ClientMetadata> = {}) =>
    client.dynamicClientRegistration(
      new URL(base),
      {
        client_name: 'Scoped App',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        ...metadata,
      },
      client.None(),
      { execute: [client.allowInsecureRequests] },
    );

  /** The whole flow with `params` as the authorization request's (no `scope` unless given). */
  async function authorize(config: client.Configuration, user: TestUser, params: Record<string, string>) {
    const { verifier, challenge } = pkcePair();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
      ...params,
    });
    const result = await authorizeInBrowser(new Browser(base), url.href, {
      email: user.account.email,
      password: user.password,
    });
    const back = new URL(result.redirect);
    const tokens = back.searchParams.has('code')
      ? await client.authorizationCodeGrant(config, back, {
          pkceCodeVerifier: verifier,
          expectedState: state,
          ...(params.nonce ? { expectedNonce: params.nonce } : {}),
        })
      : undefined;
    return { ...result, back, tokens };
  }

  /** The scopes listed on a consent page, in order. */
  const consentScopes = (page = '') => [...page.matchAll(/<code class="muted">([a-z-]+)<\/code>/g)].map((m) => m[1]);

  it('no scope with resource /mcp: consent shows the MCP scopes and the token has them', async () => {
    // As MCP clients register: no scope at all.
    const config = await register();
    const user = await createUser(app);
    const res = await authorize(config, user, { resource: `${base}/mcp` });
    expect(res.back.searchParams.get('error')).toBeNull();
    expect(res.sawConsent).toBe(true);
    expect(consentScopes(res.consentPage)).toEqual(['universal-mcp-read', 'universal-mcp-read-write']);
    expect(res.tokens?.scope).toBe('universal-mcp-read universal-mcp-read-write');
    expect(decodeJwt(res.tokens?.access_token ?? '').payload).toMatchObject({
      aud: `${base}/mcp`,
      scope: 'universal-mcp-read universal-mcp-read-write',
    });
    const list = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${res.tokens?.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'x-response-format': 'json',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(list.status).toBe(200);
  });

  it('no scope and no resource: the scopes the client registered, for the resource they belong to', async () => {
    const user = await createUser(app);
    const rest = await authorize(await register({ scope: 'account llm-all' }), user, {});
    expect(consentScopes(rest.consentPage)).toEqual(['llm-all', 'account']);
    expect(rest.tokens?.scope?.split(' ').sort()).toEqual(['account', 'llm-all']);
    expect(decodeJwt(rest.tokens?.access_token ?? '').payload.aud).toBe(`${base}/api/v1`);

    const mcp = await authorize(await register({ scope: 'universal-mcp-read' }), user, {});
    expect(consentScopes(mcp.consentPage)).toEqual(['universal-mcp-read']);
    expect(mcp.tokens?.scope).toBe('universal-mcp-read');
    expect(decodeJwt(mcp.tokens?.access_token ?? '').payload.aud).toBe(`${base}/mcp`);
  });

  it('no scope for a resource the client may hold nothing of is invalid_scope, saying why', async () => {
    const user = await createUser(app);
    const res = await authorize(await register({ scope: 'account' }), user, { resource: `${base}/mcp` });
    expect(res.sawConsent).toBe(false);
    expect(res.back.searchParams.get('error')).toBe('invalid_scope');
    expect(res.back.searchParams.get('error_description')).toBe(
      `no scope asked for, and this client may be granted none of the scopes of ${base}/mcp ` +
        '(universal-mcp-read universal-mcp-read-write)',
    );
  });

  it('MCP and REST scopes in one request are invalid_scope naming which resource each belongs to', async () => {
    const config = await register();
    const user = await createUser(app);
    const mixed = await authorize(config, user, { scope: 'universal-mcp-read universal-mcp-read-write account' });
    expect(mixed.sawConsent).toBe(false);
    expect(mixed.tokens).toBeUndefined();
    expect(mixed.back.searchParams.get('error')).toBe('invalid_scope');
    expect(mixed.back.searchParams.get('error_description')).toBe(
      `universal-mcp-read universal-mcp-read-write: scopes of ${base}/mcp, not of ${base}/api/v1 that this request ` +
        'is for; a token serves one resource: ask for each in its own authorization, naming it in `resource`',
    );

    const named = await authorize(config, user, { scope: 'universal-mcp-read account', resource: `${base}/mcp` });
    expect(named.back.searchParams.get('error')).toBe('invalid_scope');
    expect(named.back.searchParams.get('error_description')).toBe(
      `account: a scope of ${base}/api/v1, not of ${base}/mcp that this request ` +
        'is for; a token serves one resource: ask for each in its own authorization, naming it in `resource`',
    );

    // Each resource with its own scopes (and OpenID Connect scopes beside either) is issued as asked.
    const ok = await authorize(config, user, {
      scope: 'openid universal-mcp-read universal-mcp-read-write',
      resource: `${base}/mcp`,
      nonce: 'n-1',
    });
    expect(ok.back.searchParams.get('error')).toBeNull();
    // The access token's scope is its resource's; openid gave the ID token.
    expect(ok.tokens?.scope).toBe('universal-mcp-read universal-mcp-read-write');
    expect(ok.tokens?.id_token).toBeTruthy();
  });
});
