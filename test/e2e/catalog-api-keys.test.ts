import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenIdentity } from '../../src/modules/connections/api-key.ts';
import { execute } from '../../src/modules/connections/test-support.ts';
import { loadProviderCatalog } from '../../src/modules/providers/catalog.ts';
import type { ProviderDefinition, ToolDefinition } from '../../src/modules/providers/definition.ts';
import { exampleValue } from '../catalog/examples.ts';
import { type AnyProviderFake, startAnyProviderFake } from '../fakes/any-provider.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../harness.ts';

/**
 * Every shipped provider that takes a token (`apiKey`), end to end through the real service with no operator
 * credentials at all: its file pointed at the generic fake, the user pastes a token with the fields the file
 * asks for (`POST /connections/from-catalog`), the service asks the provider's "who am I", and the first read
 * tool runs. The fake sees the token sent as the file says: `Bearer`, Discord's `Bot`, Linear's bare
 * `Authorization`, Figma's `X-Figma-Token`, HTTP Basic with the e-mail address for Atlassian.
 */

const withKeys = loadProviderCatalog({ dirs: [], env: {} })
  .providers.map((p) => p.definition)
  .filter((d) => d.apiKey);

/** The first read tool that is not the "who am I" itself (the fake answers that one with the identity). */
const firstRead = (def: ProviderDefinition): ToolDefinition => {
  const base = def.apiKey?.baseUrl ?? def.api.baseUrl;
  const tool = def.tools.find(
    (t) =>
      t.mode === 'read' &&
      !t.request.baseUrl &&
      (def.apiKey?.whoami.body !== undefined ||
        `${base}${t.request.path}` !== def.apiKey?.whoami.url.replace(/\?.*$/, '')),
  );
  if (!tool) throw new Error(`${def.id} has no read tool`);
  return tool;
};

const TOKEN = 'pasted-token-5d41402abc4b2a76';

/** The header (name, value) a provider's file says carries the token. */
function expectedCredential(def: ProviderDefinition, fields: Record<string, string>): [string, string] {
  const auth = def.apiKey?.auth ?? { type: 'bearer', scheme: 'Bearer' };
  if (auth.type === 'bearer') return ['authorization', `${auth.scheme} ${TOKEN}`];
  if (auth.type === 'header') return [auth.name.toLowerCase(), TOKEN];
  if (auth.type === 'query') return [`?${auth.name}`, TOKEN];
  const pair = auth.username ? `${fields[auth.username]}:${TOKEN}` : `${TOKEN}:${auth.password ?? ''}`;
  return ['authorization', `Basic ${Buffer.from(pair).toString('base64')}`];
}

/** The credential a request carried: a header's value, or a query parameter's (`?name`). */
function sent(r: { headers: Record<string, unknown>; search?: string } | undefined, where: string): unknown {
  if (!where.startsWith('?')) return r?.headers[where];
  return new URLSearchParams(r?.search ?? '').get(where.slice(1));
}

describe('shipped providers connect with a pasted token and run a read tool', () => {
  let fake: AnyProviderFake;
  let h: TestHarness;
  let user: TestUser;
  let dir: string;

  beforeAll(async () => {
    fake = await startAnyProviderFake();
    dir = mkdtempSync(join(tmpdir(), 'sb-key-catalog-'));
    for (const def of withKeys) writeFileSync(join(dir, `${def.id}.json`), JSON.stringify(fake.pointAt(def)));
    h = await createHarness({ PROVIDERS_DIR: dir });
    user = await createUser(h.app);
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('at least 15 providers take a token, each with a link to where the user makes one', async () => {
    expect(withKeys.length).toBeGreaterThanOrEqual(15);
    const res = await call(h.app, 'GET', '/api/v1/providers');
    const listed = res.json() as Array<{ id: string; authTypes: string[]; configured: boolean }>;
    for (const def of withKeys) {
      expect(def.apiKey?.docsUrl).toMatch(/^https:\/\//);
      expect(def.tools.length).toBeGreaterThanOrEqual(5);
      // No PROVIDER_* variable is set here: the token is the only way in, and it is enough.
      expect(listed.find((p) => p.id === def.id)).toMatchObject({ authTypes: ['api_key'], configured: true });
    }
  });

  it.each(withKeys.map((d) => [d.id, d] as const))('%s', async (_id, def) => {
    const fields: Record<string, string> = {};
    for (const f of def.apiKey?.fields ?? []) {
      expect(f.placeholder, `${def.id} ${f.name} has an example`).toBeDefined();
      expect(new RegExp(`^(?:${f.pattern})$`, 'u').test(f.placeholder ?? '')).toBe(true);
      fields[f.name] = f.placeholder ?? '';
    }
    const [header, value] = expectedCredential(def, fields);
    const whoamiBefore = fake.whoamiRequests.length;
    const res = await call(h.app, 'POST', '/api/v1/connections/from-catalog', {
      token: user.sessionToken,
      body: { catalogEntryId: def.id, bearerToken: TOKEN, fields },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({
      providerId: def.id,
      // A who-am-I naming no user (OpenAI's project keys) only checks the token: known by its hash.
      providerUserId: def.apiKey?.whoami.fields ? `user-${def.id}` : tokenIdentity(def, TOKEN).providerUserId,
      status: 'active',
      authType: 'api_key',
      canRefresh: false,
    });
    const asked = fake.whoamiRequests.slice(whoamiBefore);
    expect(asked).toHaveLength(1);
    expect(sent(asked[0], header)).toBe(value);

    const tool = firstRead(def);
    const before = fake.apiRequests.length;
    const run = await execute(
      h.app,
      user.sessionToken,
      res.json().id,
      tool.name,
      exampleValue(tool.parameters) as Record<string, unknown>,
      def.id,
    );
    expect(run.statusCode, run.body).toBe(200);
    const first = fake.apiRequests[before];
    expect(sent(first && { headers: first.headers, search: new URL(first.path, 'http://x').search }, header)).toBe(
      value,
    );
    // The token connection's base URL: the file's apiKey.baseUrl with the fields in place, else the API's.
    const base = new URL(
      (def.apiKey?.baseUrl ?? def.api.baseUrl).replace(/\{(\w+)\}/g, (_m, n: string) => fields[n] ?? ''),
    );
    expect(first?.host.toLowerCase()).toBe(base.host);
    if (header !== 'authorization') expect(first?.authorization).toBeUndefined();
  });
});

describe('a provider that takes only a token (authType api_key: Trello, Twilio, Freshdesk)', () => {
  let h: TestHarness;
  let user: TestUser;
  const tokenOnly = loadProviderCatalog({ dirs: [], env: {} })
    .providers.map((p) => p.definition)
    .filter((d) => d.authType === 'api_key');

  beforeAll(async () => {
    // Operator OAuth credentials set by mistake must not make an OAuth flow appear.
    h = await createHarness({ PROVIDER_TRELLO_CLIENT_ID: 'id', PROVIDER_TRELLO_CLIENT_SECRET: 'secret' });
    user = await createUser(h.app);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('ships Trello, Twilio and Freshdesk without an oauth block', () => {
    expect(tokenOnly.map((d) => d.id)).toEqual(expect.arrayContaining(['trello', 'twilio', 'freshdesk']));
    for (const d of tokenOnly) expect(d.oauth).toBeUndefined();
  });

  it('is listed with authType api_key, the token form only', async () => {
    const res = await call(h.app, 'GET', '/api/v1/providers/trello', { token: user.sessionToken });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      id: 'trello',
      authType: 'api_key',
      authTypes: ['api_key'],
      configured: true,
      apiKey: { label: 'Token', fields: [{ name: 'key', pattern: '^[0-9a-f]{32}$' }] },
    });
  });

  it('refuses an OAuth connect with a 422 pointing at the token form', async () => {
    for (const [path, body] of [
      ['/api/v1/connections/initiate', { providerId: 'trello', redirectUrl: 'http://localhost:3000/done' }],
      [
        '/api/v1/connections/from-catalog/initiate-oauth',
        { catalogEntryId: 'twilio', redirectUrl: 'http://localhost:3000/done' },
      ],
    ] as const) {
      const res = await call(h.app, 'POST', path, { token: user.sessionToken, body });
      expect(res.statusCode, `${path}: ${res.body}`).toBe(422);
      expect(res.json().message).toMatch(
        /has no OAuth: connect it with a token through POST \/connections\/from-catalog/,
      );
    }
  });
});
