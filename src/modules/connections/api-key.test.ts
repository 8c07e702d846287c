import { createServer as httpServer } from 'node:http';
import { createServer } from 'node:net';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type ApiKeyFake,
  apiKeyProvidersEnv,
  keyholeProvider,
  startApiKeyFake,
} from '../../../test/fakes/api-key-provider.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { connections } from '../../db/schema/index.ts';
import { sha256Hex } from '../../lib/ids.ts';
import type { ProviderDefinition } from '../providers/definition.ts';
import { withCredential } from './api-key.ts';
import { sendOnce } from './http.ts';
import { execute } from './test-support.ts';

/** A loopback port nothing listens on: the provider "cannot be reached". */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as { port: number };
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

describe('token connections (api_key)', () => {
  let h: TestHarness;
  let fake: ApiKeyFake;
  const TOKEN = 'kh_live_4f2a9c8e1b7d6a5f3e2c1b0a';
  const basic = (email: string, token: string) => `Basic ${Buffer.from(`${email}:${token}`).toString('base64')}`;

  beforeAll(async () => {
    fake = await startApiKeyFake();
    const down = keyholeProvider(`http://127.0.0.1:${await closedPort()}`);
    // A vendor whose tokens name no user (an API key of a project): the who-am-I only checks the token.
    const anon = keyholeProvider(fake.url) as { apiKey: { whoami: Record<string, unknown> } };
    const anonKey = { ...anon.apiKey, whoami: { url: `${fake.url}/w/{workspace}/api/items` } };
    h = await createHarness(
      apiKeyProvidersEnv([
        keyholeProvider(fake.url),
        { ...down, id: 'keyhole-down', label: 'Keyhole Down' },
        { ...anon, id: 'keyhole-anon', label: 'Keyhole Anon', apiKey: anonKey },
      ]),
    );
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => {
    fake.tokens.clear();
    fake.tokens.set(TOKEN, { email: 'ada@example.com', id: 'kh-ada', name: 'Ada Lovelace' });
    fake.requests.length = 0;
    fake.failWith = undefined;
  });

  const rowOf = async (id: string) => (await h.database.db.select().from(connections).where(eq(connections.id, id)))[0];
  const connect = (u: TestUser, body: Record<string, unknown>) =>
    call(h.app, 'POST', '/api/v1/connections/from-catalog', { token: u.sessionToken, body });
  const keyhole = (
    token = TOKEN,
    fields: Record<string, string> = { workspace: 'acme', email: 'ada@example.com' },
  ) => ({
    catalogEntryId: 'keyhole',
    bearerToken: token,
    fields,
  });

  it('GET /providers says a token connects it, with no operator credentials, and what to give', async () => {
    const res = await call(h.app, 'GET', '/api/v1/providers?q=keyhole');
    expect(res.statusCode).toBe(200);
    const p = (res.json() as Array<Record<string, unknown>>).find((x) => x.id === 'keyhole');
    expect(p).toMatchObject({
      authType: 'oauth',
      authTypes: ['api_key'],
      configured: true,
      apiKey: {
        label: 'API token',
        help: 'Profile > Security > API tokens.',
        docsUrl: 'https://keyhole.example/settings/tokens',
        fields: [
          {
            name: 'workspace',
            label: 'Workspace',
            description: 'The name in your Keyhole address.',
            placeholder: 'acme',
            pattern: '[a-z0-9][a-z0-9-]{0,30}',
          },
          { name: 'email', label: 'E-mail address', pattern: '[^\\s@:]+@[A-Za-z0-9.-]+' },
        ],
      },
    });
  });

  it('connects with a token the provider accepts (201), sealed at rest, and tool calls send it as the file says', async () => {
    const u = await createUser(h.app);
    const res = await connect(u, keyhole());
    expect(res.statusCode, res.body).toBe(201);
    const c = res.json();
    expect(c).toMatchObject({
      providerId: 'keyhole',
      providerUserId: 'kh-ada',
      status: 'active',
      expiresAt: null,
      canRefresh: false,
      authType: 'api_key',
      scopes: [],
      metadata: { displayName: 'Ada Lovelace', email: 'ada@example.com', providerName: 'Keyhole' },
    });
    // The who-am-I call went to the workspace's address with HTTP Basic (e-mail address, token).
    expect(fake.requests).toEqual([
      { method: 'GET', path: '/w/acme/api/me', authorization: basic('ada@example.com', TOKEN) },
    ]);
    const row = await rowOf(c.id);
    expect(row?.accessTokenEnc).not.toContain(TOKEN);
    expect(h.keyRing.decrypt(row?.accessTokenEnc ?? '', c.id)).toBe(TOKEN);
    expect(row?.refreshTokenEnc).toBeNull();
    expect(row?.vars).toEqual({ workspace: 'acme', email: 'ada@example.com' });

    const run = await execute(h.app, u.sessionToken, c.id, 'list_items', {}, 'keyhole');
    expect(run.statusCode, run.body).toBe(200);
    expect(run.json().result).toEqual({ items: [{ id: 'k-1', title: 'Item of acme' }] });
    expect(fake.requests.at(-1)).toEqual({
      method: 'GET',
      path: '/w/acme/api/items',
      authorization: basic('ada@example.com', TOKEN),
    });
  });

  it('a token the provider refuses is 422 naming its answer, and nothing is stored', async () => {
    const u = await createUser(h.app);
    const res = await connect(u, keyhole('kh_live_not_a_real_token_000'));
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      error: 'ValidationError',
      message:
        'Validation failed: body.bearerToken: was refused by Keyhole (401: Token invalid or revoked for this e-mail)',
      statusCode: 422,
      details: [
        {
          field: 'body.bearerToken',
          message: 'was refused by Keyhole (401: Token invalid or revoked for this e-mail)',
        },
      ],
    });
    // The right token with another person's e-mail address: refused too.
    const wrongEmail = await connect(u, keyhole(TOKEN, { workspace: 'acme', email: 'eve@example.com' }));
    expect(wrongEmail.statusCode).toBe(422);
    expect(await h.database.db.select().from(connections).where(eq(connections.accountId, u.account.id))).toEqual([]);
  });

  it('fields are checked before the provider is asked: missing, malformed or unknown ones are 422', async () => {
    const u = await createUser(h.app);
    const res = await connect(u, keyhole(TOKEN, { workspace: 'Acme/../x', colour: 'red' }));
    expect(res.statusCode).toBe(422);
    expect(res.json().details).toEqual([
      { field: 'body.fields.workspace', message: 'must match [a-z0-9][a-z0-9-]{0,30}' },
      { field: 'body.fields.colour', message: 'is not a parameter of Keyhole (allowed: workspace, email)' },
      { field: 'body.fields.email', message: 'is required by Keyhole' },
    ]);
    expect(fake.requests).toEqual([]);
  });

  it('a provider that cannot be reached is 502, one that fails 502 with its words; nothing is stored', async () => {
    const u = await createUser(h.app);
    const down = await connect(u, { ...keyhole(), catalogEntryId: 'keyhole-down' });
    expect(down.statusCode).toBe(502);
    expect(down.json()).toEqual({
      error: 'BadGatewayError',
      message: 'Keyhole Down could not be reached',
      statusCode: 502,
    });
    fake.failWith = 503;
    const failing = await connect(u, keyhole());
    expect(failing.statusCode).toBe(502);
    expect(failing.json().message).toBe(
      'Keyhole answered 503 when asked who the token belongs to: Keyhole is down for maintenance',
    );
    expect(await h.database.db.select().from(connections).where(eq(connections.accountId, u.account.id))).toEqual([]);
  });

  it('a token revoked at the provider later: the next tool call turns the connection revoked', async () => {
    const u = await createUser(h.app);
    const c = (await connect(u, keyhole())).json();
    fake.revoke(TOKEN);
    const run = await execute(h.app, u.sessionToken, c.id, 'list_items', {}, 'keyhole');
    expect(run.statusCode).toBe(502);
    expect(run.json().message).toBe(
      `Keyhole refused the token of connection ${c.id} (401); the connection is now revoked: reconnect it`,
    );
    const after = await call(h.app, 'GET', `/api/v1/connections/${c.id}`, { token: u.sessionToken });
    expect(after.json()).toMatchObject({
      status: 'revoked',
      canRefresh: false,
      lastError: 'Keyhole refused the token (401)',
    });
    // No longer offered to agents and MCP clients.
    const active = await call(h.app, 'GET', '/api/v1/connections?status=active', { token: u.sessionToken });
    expect(active.json().data).toEqual([]);
    // Connecting again with a new token makes the same connection active.
    fake.tokens.set('kh_live_new_token_after_revoke', { email: 'ada@example.com', id: 'kh-ada', name: 'Ada Lovelace' });
    const again = await connect(u, keyhole('kh_live_new_token_after_revoke'));
    expect(again.statusCode).toBe(201);
    expect(again.json()).toMatchObject({ id: c.id, status: 'active', lastError: null });
  });

  it('a who-am-I naming no user only checks the token: the connection is known by a hash of the token', async () => {
    const u = await createUser(h.app);
    const res = await connect(u, { ...keyhole(), catalogEntryId: 'keyhole-anon' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({
      providerId: 'keyhole-anon',
      providerUserId: `token-${sha256Hex(TOKEN).slice(0, 16)}`,
      status: 'active',
      authType: 'api_key',
      metadata: { displayName: 'Keyhole Anon token', providerName: 'Keyhole Anon' },
    });
    expect(fake.requests).toEqual([
      { method: 'GET', path: '/w/acme/api/items', authorization: basic('ada@example.com', TOKEN) },
    ]);
    // Another token is another connection; a token the provider refuses is still a 422, and stores nothing.
    fake.tokens.set('kh_live_second_project_token', { email: 'ada@example.com', id: 'kh-ada', name: 'Ada Lovelace' });
    const second = await connect(u, { ...keyhole('kh_live_second_project_token'), catalogEntryId: 'keyhole-anon' });
    expect(second.statusCode).toBe(201);
    expect(second.json().id).not.toBe(res.json().id);
    const refused = await connect(u, { ...keyhole('kh_live_not_a_real_token_000'), catalogEntryId: 'keyhole-anon' });
    expect(refused.statusCode).toBe(422);
    const rows = await h.database.db.select().from(connections).where(eq(connections.accountId, u.account.id));
    expect(rows).toHaveLength(2);
  });

  it("another account's token connection is 404, to read and to run tools on", async () => {
    const owner = await createUser(h.app);
    const other = await createUser(h.app);
    const c = (await connect(owner, keyhole())).json();
    const get = await call(h.app, 'GET', `/api/v1/connections/${c.id}`, { token: other.sessionToken });
    expect(get.statusCode).toBe(404);
    const run = await execute(h.app, other.sessionToken, c.id, 'list_items', {}, 'keyhole');
    expect(run.statusCode).toBe(404);
    expect(run.json().message).toBe(`Connection ${c.id} not found`);
  });

  it('deleting a token connection does not call the OAuth revocation (the token was not granted to us)', async () => {
    const u = await createUser(h.app);
    const c = (await connect(u, keyhole())).json();
    const before = fake.requests.length;
    const del = await call(h.app, 'DELETE', `/api/v1/connections/${c.id}`, { token: u.sessionToken });
    expect(del.statusCode).toBe(204);
    await h.app.deps.background.drain();
    expect(fake.requests.length).toBe(before);
  });
});

describe('a credential in a header of its own', () => {
  it('is sent to the API and dropped when a redirect leads to another origin, as Authorization is', async () => {
    const seen: Array<Record<string, string | string[] | undefined>> = [];
    const other = httpServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const otherUrl = `http://127.0.0.1:${(other.address() as { port: number }).port}`;
    const api = httpServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(302, { location: `${otherUrl}/elsewhere` });
      res.end();
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    try {
      const def = { apiKey: { auth: { type: 'header' as const, name: 'X-Figma-Token' } } } as Pick<
        ProviderDefinition,
        'apiKey'
      >;
      const req = withCredential(
        def,
        { authType: 'api_key', vars: {} },
        { method: 'GET', url: `http://127.0.0.1:${(api.address() as { port: number }).port}/v1/me`, headers: {} },
        'figd_secret_token_123',
      );
      const answer = await sendOnce(req, { timeoutMs: 5000, maxBytes: 10_000, label: 'Figma' });
      expect(answer.status).toBe(200);
      expect(seen[0]?.['x-figma-token']).toBe('figd_secret_token_123');
      expect(seen[1]?.['x-figma-token']).toBeUndefined();
      expect(seen).toHaveLength(2);
    } finally {
      await new Promise<void>((resolve) => api.close(() => resolve()));
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });
});
