import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_REDIRECT, authorize, execute } from '../../src/modules/connections/test-support.ts';
import { loadProviderCatalog, providerCredentialVariables } from '../../src/modules/providers/catalog.ts';
import type { ProviderDefinition, ToolDefinition } from '../../src/modules/providers/definition.ts';
import { exampleValue } from '../catalog/examples.ts';
import { type AnyProviderFake, startAnyProviderFake } from '../fakes/any-provider.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../harness.ts';

/**
 * Every generated provider, end to end through the real service: its file pointed at one generic fake
 * (test/fakes/any-provider.ts), the user connects (initiate, the fake's approval, the callback's code
 * exchange and user-info request), then runs the provider's first read tool through
 * `POST /providers/:id/tools/:tool/execute`. The fake sees the request the engine built: method, host, path
 * and the connection's access token.
 */

/**
 * Providers whose connection needs what the generic fake does not play yet: a discovery request (DocuSign's
 * account server, Mailchimp's data center, Xero's tenant), a host given before authorization (Okta). Their
 * requests are built and checked in catalog.unit.test.ts and test/catalog/generated.test.ts.
 */
const needsMore = (d: ProviderDefinition) =>
  !d.oauth || d.oauth.discovery !== undefined || d.finalizeFields.length > 0 || d.api.baseUrl.startsWith('{');

const generated = loadProviderCatalog({ dirs: [], env: {} })
  .providers.map((p) => p.definition)
  .filter((d) => d.origin === 'generated' && !needsMore(d));

/** The first read tool that is not the provider's "who am I" request (the fake answers that one itself). */
const firstRead = (def: ProviderDefinition): ToolDefinition => {
  const identity = new Set([def.oauth?.userInfo.url, def.apiKey?.whoami.url].filter(Boolean));
  const tool = def.tools.find(
    (t) =>
      t.mode === 'read' &&
      !identity.has(`${(t.request.baseUrl ?? def.api.baseUrl).replace(/\/$/, '')}${t.request.path}`),
  );
  if (!tool) throw new Error(`${def.id} has no read tool`);
  return tool;
};

describe('generated providers connect and run a read tool end to end', () => {
  let fake: AnyProviderFake;
  let h: TestHarness;
  let user: TestUser;
  let dir: string;

  beforeAll(async () => {
    fake = await startAnyProviderFake();
    dir = mkdtempSync(join(tmpdir(), 'sb-any-providers-'));
    const env: Record<string, string> = { PROVIDERS_DIR: dir };
    for (const def of generated) {
      writeFileSync(join(dir, `${def.id}.json`), JSON.stringify(fake.pointAt(def)));
      const vars = providerCredentialVariables(def.id);
      env[vars.clientId] = `client-${def.id}`;
      env[vars.clientSecret] = `secret-${def.id}`;
    }
    h = await createHarness(env);
    user = await createUser(h.app);
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('covers every generated provider', () => {
    expect(generated.length).toBeGreaterThanOrEqual(20);
  });

  it.each(generated.map((d) => [d.id, d] as const))('%s', async (_id, def) => {
    const back = await authorize(h.app, user.sessionToken, { providerId: def.id, redirectUrl: APP_REDIRECT });
    const connectionId = back.searchParams.get('connectionId');
    expect(String(connectionId), back.toString()).toMatch(/^conn_/);
    const conn = await call(h.app, 'GET', `/api/v1/connections/${connectionId}`, { token: user.sessionToken });
    expect(conn.statusCode).toBe(200);
    expect(conn.json()).toMatchObject({ providerId: def.id, providerUserId: `user-${def.id}`, status: 'active' });

    const tool = firstRead(def);
    const args = exampleValue(tool.parameters) as Record<string, unknown>;
    const before = fake.apiRequests.length;
    const run = await execute(h.app, user.sessionToken, connectionId as string, tool.name, args, def.id);
    expect(run.statusCode, run.body).toBe(200);
    expect(run.json()).toMatchObject({ providerId: def.id, toolName: tool.name, connectionId });

    const seen = fake.apiRequests.slice(before);
    expect(seen.length).toBeGreaterThanOrEqual(1);
    const first = seen[0];
    const base = new URL(tool.request.baseUrl ?? def.api.baseUrl);
    expect(first?.method).toBe(tool.request.method);
    expect(first?.host).toBe(base.host);
    // The tool's path with the example arguments in place, under the API's base path.
    const path = tool.request.path.replace(/\{\+?(\w+)\}/g, (_m, name: string) =>
      encodeURIComponent(String(args[name])).replace(/%2F/g, '/'),
    );
    expect(first?.path.split('?')[0]).toBe(`${base.pathname.replace(/\/$/, '')}${path}`);
    expect(first?.authorization).toMatch(/^Bearer fake-access-/);
  });
  // Token connections of every provider with an `apiKey` block: catalog-api-keys.test.ts.
});
