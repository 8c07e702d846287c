import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardTests } from '../../../test/guards.ts';
import {
  call,
  createHarness,
  createUser,
  publicContext,
  type TestHarness,
  type TestUser,
} from '../../../test/harness.ts';
import { rowsOf } from '../../db/rows.ts';
import { setWhitelabelAllowed } from './service.ts';

const PNG = `data:image/png;base64,${Buffer.from('\x89PNG\r\n\x1a\nfake').toString('base64')}`;

describe('auth clients API', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  const create = (u: TestUser, body: Record<string, unknown>) =>
    call(h.app, 'POST', '/api/v1/auth-clients', { token: u.sessionToken, body });
  const valid = {
    name: 'My App',
    type: 'public',
    redirectUris: ['https://app.example.com/callback', 'http://127.0.0.1:8765/cb'],
  };
  const mine = async (owner: TestUser) => (await create(owner, valid)).json().id as string;

  guardTests(
    () => h,
    [
      { method: 'POST', url: '/api/v1/auth-clients', scopes: [], sessionOnly: true, body: valid },
      { method: 'GET', url: '/api/v1/auth-clients', scopes: ['account'] },
      {
        method: 'GET',
        url: '/api/v1/auth-clients/app_x',
        scopes: ['account'],
        ownedUrl: async (o) => `/api/v1/auth-clients/${await mine(o)}`,
      },
      {
        method: 'PUT',
        url: '/api/v1/auth-clients/app_x',
        scopes: [],
        sessionOnly: true,
        body: { name: 'Renamed' },
        ownedUrl: async (o) => `/api/v1/auth-clients/${await mine(o)}`,
      },
      {
        method: 'DELETE',
        url: '/api/v1/auth-clients/app_x',
        scopes: [],
        sessionOnly: true,
        ownedUrl: async (o) => `/api/v1/auth-clients/${await mine(o)}`,
      },
      {
        method: 'PUT',
        url: '/api/v1/auth-clients/app_x/secret',
        scopes: [],
        sessionOnly: true,
        ownedUrl: async (o) =>
          `/api/v1/auth-clients/${(await create(o, { ...valid, type: 'confidential' })).json().id}/secret`,
      },
    ],
  );

  it('creates a public client without a secret and a confidential one whose secret is shown once, sealed at rest', async () => {
    const u = await createUser(h.app);
    const pub = await create(u, {
      ...valid,
      branding: { logo: PNG, description: 'Does things', brandColor: '#0b5cad' },
    });
    expect(pub.statusCode).toBe(201);
    expect(pub.json()).toMatchObject({
      clientId: expect.stringMatching(/^app_/),
      name: 'My App',
      type: 'public',
      roles: ['third-party'],
      redirectUris: valid.redirectUris,
      tokenEndpointAuthMethod: 'none',
      branding: { logo: PNG, description: 'Does things', brandColor: '#0b5cad' },
    });
    expect(pub.json().clientSecret).toBeUndefined();
    expect(pub.json().allowedScopes).not.toContain('agents-all');
    expect(pub.json().allowedScopes).toContain('universal-mcp-read');

    const conf = await create(u, { ...valid, type: 'confidential', allowedScopes: ['account'] });
    expect(conf.statusCode).toBe(201);
    const { id, clientSecret } = conf.json();
    expect(clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(conf.json()).toMatchObject({ tokenEndpointAuthMethod: 'client_secret_basic', allowedScopes: ['account'] });

    const list = await call(h.app, 'GET', '/api/v1/auth-clients?sortOrder=asc', { token: u.sessionToken });
    expect(list.statusCode).toBe(200);
    expect(list.json().pagination).toEqual({ page: 1, limit: 20, total: 2, hasMore: false });
    expect(list.body).not.toContain(clientSecret);
    expect(list.json().data.map((c: { id: string }) => c.id)).toEqual([pub.json().id, id]);

    const raw = await h.database.db.execute(sql`SELECT secret_ciphertext FROM auth_clients WHERE id = ${id}`);
    const sealed = rowsOf<{ secret_ciphertext: string }>(raw)[0]?.secret_ciphertext ?? '';
    expect(sealed).toMatch(/^v1\./);
    expect(sealed).not.toContain(clientSecret);
    expect(h.keyRing.decrypt(sealed, id)).toBe(clientSecret);
    expect(() => h.keyRing.decrypt(sealed, pub.json().id)).toThrow();
  });

  it('validates redirect URIs, branding and scopes', async () => {
    const u = await createUser(h.app);
    const bad = async (body: Record<string, unknown>, field: string) => {
      const res = await create(u, { ...valid, ...body });
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json().error).toBe('ValidationError');
      expect(
        res
          .json()
          .details.map((d: { field: string }) => d.field)
          .join(' '),
      ).toContain(field);
    };
    await bad({ redirectUris: ['http://app.example.com/cb'] }, 'body.redirectUris');
    await bad({ redirectUris: ['https://app.example.com/cb#frag'] }, 'body.redirectUris');
    await bad({ redirectUris: ['myapp://cb'] }, 'body.redirectUris');
    await bad({ redirectUris: [] }, 'body.redirectUris');
    await bad({ branding: { brandColor: 'blue' } }, 'body.branding.brandColor');
    await bad({ branding: { logo: 'https://example.com/logo.png' } }, 'body.branding.logo');
    await bad({ branding: { logo: 'data:text/html;base64,PGgxPmhpPC9oMT4=' } }, 'body.branding.logo');
    await bad(
      { branding: { logo: `data:image/png;base64,${Buffer.alloc(101 * 1024).toString('base64')}` } },
      'body.branding.logo',
    );
    await bad({ allowedScopes: ['agents-all'] }, 'body.allowedScopes');
    await bad({ allowedScopes: ['nope'] }, 'body.allowedScopes');
    await bad({ type: 'hybrid' }, 'body.type');
    for (const ok of ['http://localhost:3000/cb', 'http://[::1]:3000/cb', 'https://x.example/cb?a=1']) {
      expect((await create(u, { ...valid, redirectUris: [ok] })).statusCode).toBe(201);
    }
  });

  it('whitelabel-customer is by invitation; it alone may hold agents-all', async () => {
    const u = await createUser(h.app);
    const refused = await create(u, { ...valid, roles: ['whitelabel-customer'] });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ error: 'ForbiddenError' });

    await setWhitelabelAllowed(publicContext(h.app), u.account.email.toUpperCase(), true);
    const wl = await create(u, { ...valid, roles: ['whitelabel-customer'], allowedScopes: ['agents-all', 'account'] });
    expect(wl.statusCode).toBe(201);
    expect(wl.json().allowedScopes).toEqual(['agents-all', 'account']);

    // Downgraded to third-party: agents-all goes with the role.
    const down = await call(h.app, 'PUT', `/api/v1/auth-clients/${wl.json().id}`, {
      token: u.sessionToken,
      body: { roles: ['third-party'] },
    });
    expect(down.statusCode).toBe(200);
    expect(down.json()).toMatchObject({ roles: ['third-party'], allowedScopes: ['account'] });
  });

  it('updates, rotates the secret of a confidential client only, and deletes', async () => {
    const u = await createUser(h.app);
    const conf = (await create(u, { ...valid, type: 'confidential' })).json();
    const updated = await call(h.app, 'PUT', `/api/v1/auth-clients/${conf.id}`, {
      token: u.sessionToken,
      body: { name: 'Renamed', redirectUris: ['https://new.example/cb'], branding: { brandColor: '#fff' } },
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.json()).toMatchObject({
      name: 'Renamed',
      redirectUris: ['https://new.example/cb'],
      branding: { brandColor: '#fff' },
    });
    expect(updated.json().clientSecret).toBeUndefined();
    expect(
      (await call(h.app, 'PUT', `/api/v1/auth-clients/${conf.id}`, { token: u.sessionToken, body: { type: 'public' } }))
        .statusCode,
    ).toBe(422);

    const rotated = await call(h.app, 'PUT', `/api/v1/auth-clients/${conf.id}/secret`, { token: u.sessionToken });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json()).toEqual({ clientId: conf.id, clientSecret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    expect(rotated.json().clientSecret).not.toBe(conf.clientSecret);

    const pub = (await create(u, valid)).json();
    const noSecret = await call(h.app, 'PUT', `/api/v1/auth-clients/${pub.id}/secret`, { token: u.sessionToken });
    expect(noSecret.statusCode).toBe(400);
    expect(noSecret.json()).toMatchObject({ error: 'BadRequestError' });

    const del = await call(h.app, 'DELETE', `/api/v1/auth-clients/${conf.id}`, { token: u.sessionToken });
    expect(del.statusCode).toBe(204);
    expect((await call(h.app, 'GET', `/api/v1/auth-clients/${conf.id}`, { token: u.sessionToken })).statusCode).toBe(
      404,
    );
    expect((await call(h.app, 'DELETE', `/api/v1/auth-clients/${conf.id}`, { token: u.sessionToken })).statusCode).toBe(
      404,
    );
  });
});
