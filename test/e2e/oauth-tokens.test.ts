import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import { SignJWT } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientAllowWhitelabel, keysRotate } from '../../src/access/oauth/cli-commands.ts';
import { isFirstPartyOrWhitelabel } from '../../src/access/oauth/policy.ts';
import { buildApp, loggerOptions } from '../../src/app.ts';
import { rowsOf } from '../../src/db/rows.ts';
import type { App } from '../../src/http/types.ts';
import { createHarness, createUser, publicContext, type TestHarness, type TestUser, testConfig } from '../harness.ts';
import { decodeJwt, freePort, listeningApp, obtainTokens } from './oauth-helpers.ts';

/**
 * Access tokens at the resource server: confidential clients, role limits on scopes, expiry, audience,
 * forged signatures, key rotation, rate limits of the OAuth endpoints, and no token in the logs.
 */
describe('OAuth tokens, clients and keys', () => {
  let h: TestHarness;
  let app: App;
  let base: string;
  const redirectUri = 'https://app.example.test/callback';

  beforeAll(async () => {
    h = await createHarness();
    ({ app, base } = await listeningApp(h));
  });
  afterAll(() => h.close());

  const login = (u: TestUser) => ({ email: u.account.email, password: u.password });
  const get = (path: string, token: string) =>
    fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });

  async function apiClient(owner: TestUser, body: Record<string, unknown> = {}) {
    const res = await fetch(`${base}/api/v1/auth-clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.sessionToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Partner App', type: 'confidential', redirectUris: [redirectUri], ...body }),
    });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; clientSecret?: string };
  }

  const discover = (clientId: string, auth: client.ClientAuth) =>
    client.discovery(new URL(base), clientId, undefined, auth, { execute: [client.allowInsecureRequests] });

  it('a confidential client authenticates with client_secret_basic or _post; a rotated secret stops working', async () => {
    const owner = await createUser(app);
    const user = await createUser(app);
    const c = await apiClient(owner, {
      branding: { description: 'Syncs your calendar', brandColor: '#aa3300' },
    });
    const secret = c.clientSecret ?? '';
    const basic = await discover(c.id, client.ClientSecretBasic(secret));
    const { tokens, consentPage } = await obtainTokens(base, basic, login(user), {
      redirect_uri: redirectUri,
      scope: 'account',
    });
    expect(consentPage).toContain('Partner App');
    expect(consentPage).toContain('Syncs your calendar');
    expect(consentPage).toContain('background:#aa3300');
    expect(consentPage).toContain('https://app.example.test');
    expect((await get('/api/v1/accounts/me', tokens.access_token)).status).toBe(200);

    const post = await discover(c.id, client.ClientSecretPost(secret));
    const refreshed = await client.refreshTokenGrant(post, tokens.refresh_token as string);
    expect(refreshed.access_token).toBeTruthy();

    const tokenWith = (id: string, secretValue: string, refresh: string) =>
      fetch(`${base}/api/v1/auth/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${id}:${secretValue}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refresh }).toString(),
      });
    const wrong = await tokenWith(c.id, 'not-the-secret', refreshed.refresh_token as string);
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_client' });

    const rotated = await fetch(`${base}/api/v1/auth-clients/${c.id}/secret`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${owner.sessionToken}` },
    });
    const { clientSecret } = (await rotated.json()) as { clientSecret: string };
    const stale = await tokenWith(c.id, secret, refreshed.refresh_token as string);
    expect(stale.status).toBe(401);
    expect(await stale.json()).toMatchObject({ error: 'invalid_client' });
    const fresh = await discover(c.id, client.ClientSecretBasic(clientSecret));
    expect((await client.refreshTokenGrant(fresh, refreshed.refresh_token as string)).access_token).toBeTruthy();

    // Deleting the client ends every token it holds.
    await fetch(`${base}/api/v1/auth-clients/${c.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${owner.sessionToken}` },
    });
    expect((await get('/api/v1/accounts/me', tokens.access_token)).status).toBe(401);
  });

  it('agents-all only for whitelabel-customer clients; a third-party app is not first-party', async () => {
    const owner = await createUser(app);
    const user = await createUser(app);
    const third = await apiClient(owner);
    const thirdCfg = await discover(third.id, client.ClientSecretBasic(third.clientSecret ?? ''));
    const t1 = await obtainTokens(base, thirdCfg, login(user), {
      redirect_uri: redirectUri,
      scope: 'agents-all account',
    });
    expect(t1.tokens.scope).toBe('account');
    expect(t1.consentPage).not.toContain('<code class="muted">agents-all</code>');
    const a1 = await app.oauth.verifyBearer(t1.tokens.access_token, { path: '/api/v1/agents' });
    expect(a1).toMatchObject({ kind: 'oauth', clientId: third.id, clientRoles: ['third-party'] });
    expect(a1 && isFirstPartyOrWhitelabel(a1)).toBe(false);

    await clientAllowWhitelabel(publicContext(app), owner.account.email, true);
    const wl = await apiClient(owner, { roles: ['whitelabel-customer'], allowedScopes: ['agents-all', 'account'] });
    const wlCfg = await discover(wl.id, client.ClientSecretBasic(wl.clientSecret ?? ''));
    const t2 = await obtainTokens(base, wlCfg, login(user), { redirect_uri: redirectUri, scope: 'agents-all account' });
    expect(t2.tokens.scope?.split(' ').sort()).toEqual(['account', 'agents-all']);
    const a2 = await app.oauth.verifyBearer(t2.tokens.access_token, { path: '/api/v1/agents' });
    expect([...(a2?.scopes ?? [])].sort()).toEqual(['account', 'agents-all']);
    expect(a2 && isFirstPartyOrWhitelabel(a2)).toBe(true);

    // Withdrawing the invitation demotes the client: its tokens lose agents-all at once.
    const msg = await clientAllowWhitelabel(publicContext(app), owner.account.email, false);
    expect(msg).toContain('1 client(s) lost it');
    const a3 = await app.oauth.verifyBearer(t2.tokens.access_token, { path: '/api/v1/agents' });
    expect([...(a3?.scopes ?? [])]).toEqual(['account']);
  });

  it('deleting the account deletes its grants and tokens; deleting a client deletes what was issued to it', async () => {
    const owner = await createUser(app);
    const user = await createUser(app);
    const c = await apiClient(owner);
    const cfg = await discover(c.id, client.ClientSecretBasic(c.clientSecret ?? ''));
    const { tokens } = await obtainTokens(base, cfg, login(user), { redirect_uri: redirectUri, scope: 'account' });
    const artifacts = async (column: 'account_id' | 'client_id', id: string) => {
      const res = await h.database.db.execute(
        sql`SELECT count(*)::int AS n FROM oauth_artifacts WHERE ${sql.identifier(column)} = ${id}`,
      );
      return Number(rowsOf<{ n: number }>(res)[0]?.n);
    };
    expect(await artifacts('account_id', user.account.id)).toBeGreaterThan(0);
    const del = await fetch(`${base}/api/v1/accounts/me`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${user.sessionToken}` },
    });
    expect(del.status).toBe(204);
    expect(await artifacts('account_id', user.account.id)).toBe(0);
    expect((await get('/api/v1/accounts/me', tokens.access_token)).status).toBe(401);
    expect(await artifacts('client_id', c.id)).toBe(0);
  });

  it('an expired access token is 401 TokenExpiredError', async () => {
    const short = await listeningApp(h, { OAUTH_ACCESS_TOKEN_TTL: '1' });
    const owner = await createUser(short.app);
    const c = await apiClient(owner);
    const cfg = await client.discovery(
      new URL(short.base),
      c.id,
      undefined,
      client.ClientSecretBasic(c.clientSecret ?? ''),
      {
        execute: [client.allowInsecureRequests],
      },
    );
    const { tokens } = await obtainTokens(short.base, cfg, login(owner), {
      redirect_uri: redirectUri,
      scope: 'account',
    });
    expect(tokens.expires_in).toBe(1);
    await new Promise((r) => setTimeout(r, 2100));
    const res = await fetch(`${short.base}/api/v1/accounts/me`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({
      error: 'TokenExpiredError',
      message: 'Access token expired; use the refresh token',
      statusCode: 401,
    });
  });

  it('a token for another resource, a forged one and an ID token are refused', async () => {
    const user = await createUser(app);
    const c = await apiClient(user, { allowedScopes: ['universal-mcp-read', 'account', 'openid'] });
    const cfg = await discover(c.id, client.ClientSecretBasic(c.clientSecret ?? ''));
    const { tokens } = await obtainTokens(base, cfg, login(user), {
      redirect_uri: redirectUri,
      scope: 'openid universal-mcp-read',
      resource: `${base}/mcp`,
    });
    expect(decodeJwt(tokens.access_token).payload.aud).toBe(`${base}/mcp`);
    const res = await get('/api/v1/accounts/me', tokens.access_token);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({
      error: 'UnauthorizedError',
      message: expect.stringContaining('issued for another resource'),
    });
    await expect(app.oauth.verifyBearer(tokens.access_token, { path: '/mcp' })).resolves.toMatchObject({
      audience: `${base}/mcp`,
      scopes: new Set(['universal-mcp-read']),
    });

    // The ID token is for the client, never a bearer.
    expect(tokens.id_token).toBeTruthy();
    expect((await get('/api/v1/accounts/me', tokens.id_token as string)).status).toBe(401);

    // Same claims, signed by a key that is not ours (and with our kid): refused.
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const { header, payload } = decodeJwt(tokens.access_token);
    const forged = await new SignJWT({ ...payload, aud: `${base}/api/v1`, scope: 'account' })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: String(header.kid) })
      .sign(privateKey);
    const refused = await get('/api/v1/accounts/me', forged);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: 'UnauthorizedError', message: 'Invalid access token' });
    const none = `${Buffer.from('{"alg":"none","typ":"at+jwt"}').toString('base64url')}.${Buffer.from(JSON.stringify({ ...payload, aud: `${base}/api/v1` })).toString('base64url')}.`;
    expect((await get('/api/v1/accounts/me', none)).status).toBe(401);
  });

  it('keys rotate: new tokens use the new key, old tokens verify until they expire, JWKS lists both', async () => {
    const other = await h.extraApp({ BASE_URL: base });
    const user = await createUser(app);
    const c = await apiClient(user);
    const cfg = await discover(c.id, client.ClientSecretBasic(c.clientSecret ?? ''));
    const before = await obtainTokens(base, cfg, login(user), { redirect_uri: redirectUri, scope: 'account' });
    const oldKid = decodeJwt(before.tokens.access_token).header.kid;

    const lines = await keysRotate(publicContext(app));
    expect(lines[0]).toMatch(/^New signing key key_\S+: running instances sign with it within a minute\.$/);
    const rotatedKid = /^New signing key (key_\S+):/.exec(lines[0] ?? '')?.[1];
    expect(lines[1]).toMatch(/^Retired key_\S+: still published and verifying for 1200 seconds\.$/);
    expect(await app.oauth.reloadIfRotated()).toBe(true);

    // On PostgreSQL the test files share one database, so other keys may be listed too: check ours.
    const jwks = (await (await fetch(`${base}/.well-known/jwks.json`)).json()) as {
      keys: { kid: string; d?: string }[];
    };
    const kids = jwks.keys.map((k) => k.kid);
    expect(kids).toContain(oldKid);
    expect(kids).toContain(rotatedKid);
    if (h.database.driver === 'pglite') expect(kids[0]).toBe(rotatedKid);
    expect(jwks.keys.every((k) => k.d === undefined)).toBe(true);

    const after = await client.refreshTokenGrant(cfg, before.tokens.refresh_token as string);
    const newKid = decodeJwt(after.access_token).header.kid;
    expect(newKid).not.toBe(oldKid);
    // On a shared PostgreSQL database another test file may rotate in between: then a newer key still.
    if (h.database.driver === 'pglite') expect(newKid).toBe(rotatedKid);
    expect((await get('/api/v1/accounts/me', after.access_token)).status).toBe(200);
    // The token signed with the retired key still verifies until it expires.
    expect((await get('/api/v1/accounts/me', before.tokens.access_token)).status).toBe(200);
    // Another instance that has not reloaded yet meets the new kid, reloads, and accepts the token.
    await expect(other.oauth.verifyBearer(after.access_token, { path: '/api/v1/accounts/me' })).resolves.toMatchObject({
      accountId: user.account.id,
    });
  });

  it('registration is limited per address (RATE_LIMIT_REGISTER), token and revoke by RATE_LIMIT_AUTH', async () => {
    const limited = await listeningApp(h, { RATE_LIMIT_REGISTER: '5', RATE_LIMIT_AUTH: '2' });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${limited.base}/api/v1/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }),
      });
      statuses.push(res.status);
      if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    expect(statuses).toEqual([201, 201, 201, 201, 201, 429]);
    const token: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${limited.base}/api/v1/auth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=refresh_token&refresh_token=nope&client_id=nope',
      });
      token.push(res.status);
      if (i === 0) expect(await res.json()).toMatchObject({ error: 'invalid_client' });
    }
    expect(token).toEqual([401, 401, 429]);
  });

  it('dynamic registration refuses http redirect URIs off loopback and fragments', async () => {
    for (const uri of ['http://example.com/cb', 'https://example.com/cb#x']) {
      const res = await fetch(`${base}/api/v1/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: [uri], token_endpoint_auth_method: 'none' }),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        error: expect.stringMatching(/^invalid_(redirect_uri|client_metadata)$/),
      });
    }
    const scoped = await fetch(`${base}/api/v1/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: 'none',
        scope: 'universal-mcp-read agents-all',
      }),
    });
    expect(scoped.status).toBe(201);
    const body = (await scoped.json()) as Record<string, unknown>;
    expect(body.scope).toBe('universal-mcp-read');
    expect(body.client_secret).toBeUndefined();
    expect(Object.keys(body)).not.toContain('switchboard_allowed_scopes');
  });

  it('no token, code or secret reaches the logs', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const port = await freePort();
    const logged = `http://127.0.0.1:${port}`;
    const config = testConfig(mkdtempSync(join(tmpdir(), 'sb-log-')), { BASE_URL: logged, LOG_LEVEL: 'trace' });
    const loud = await buildApp({
      config,
      database: h.database,
      keyRing: h.keyRing,
      logger: { ...(loggerOptions('trace') as object), stream } as never,
    });
    await loud.listen({ port, host: '127.0.0.1' });
    try {
      const user = await createUser(loud);
      const reg = await client.dynamicClientRegistration(
        new URL(logged),
        { redirect_uris: [redirectUri], token_endpoint_auth_method: 'client_secret_post' },
        undefined,
        { execute: [client.allowInsecureRequests] },
      );
      const { tokens } = await obtainTokens(logged, reg, login(user), { redirect_uri: redirectUri, scope: 'account' });
      const refreshed = await client.refreshTokenGrant(reg, tokens.refresh_token as string);
      await fetch(`${logged}/api/v1/accounts/me`, { headers: { authorization: `Bearer ${refreshed.access_token}` } });
      await client.tokenRevocation(reg, refreshed.refresh_token as string);
      const text = lines.join('');
      expect(text).toContain('"url":"/api/v1/auth/token"');
      for (const secret of [
        tokens.access_token,
        tokens.refresh_token,
        refreshed.access_token,
        refreshed.refresh_token,
        reg.clientMetadata().client_secret,
        user.sessionToken,
      ]) {
        expect(text).not.toContain(String(secret));
      }
    } finally {
      await loud.close();
    }
  });
});
