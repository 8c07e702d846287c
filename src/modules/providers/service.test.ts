import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { loadProviderCatalog, SHIPPED_PROVIDERS_DIR } from './catalog.ts';

const shipped = loadProviderCatalog({ dirs: [], env: {} });

describe('providers API', () => {
  let h: TestHarness;
  let user: TestUser;
  let extraDir: string;

  beforeAll(async () => {
    // One more provider from PROVIDERS_DIR, without a logo of its own.
    extraDir = mkdtempSync(join(tmpdir(), 'sb-providers-api-'));
    const github = JSON.parse(readFileSync(join(SHIPPED_PROVIDERS_DIR, 'github.json'), 'utf8'));
    writeFileSync(
      join(extraDir, 'acme-tracker.json'),
      JSON.stringify({ ...github, id: 'acme-tracker', label: 'Acme Tracker', category: 'testing', popular: false }),
    );
    h = await createHarness({
      PROVIDERS_DIR: extraDir,
      PROVIDER_GITHUB_CLIENT_ID: 'gh-client',
      PROVIDER_GITHUB_CLIENT_SECRET: 'gh-secret',
      PROVIDER_SLACK_CLIENT_ID: 'only-an-id',
    });
    user = await createUser(h.app);
  });
  afterAll(async () => {
    await h.close();
    rmSync(extraDir, { recursive: true, force: true });
  });

  const githubProvider = {
    id: 'github',
    label: 'GitHub',
    description: 'Repositories, issues, pull requests, code search and notifications on GitHub.',
    logoUrl: 'http://localhost:8080/providers/logos/github.svg',
    category: 'developer-tools',
    popular: true,
    authType: 'oauth',
    allowMultipleConnections: true,
    authTypes: ['oauth', 'api_key'],
    configured: true,
    apiKey: {
      label: 'Personal access token',
      help: 'A fine-grained token (or a classic one) with access to the repositories the tools should reach.',
      docsUrl: 'https://github.com/settings/personal-access-tokens',
      fields: [],
    },
  };

  describe('GET /api/v1/providers (public)', () => {
    it('answers 200 with every provider, configured or not, without a token', async () => {
      const res = await call(h.app, 'GET', '/api/v1/providers');
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const body = res.json() as Array<Record<string, unknown>>;
      expect(body).toHaveLength(shipped.providers.length + 1);
      expect(body.find((p) => p.id === 'github')).toEqual(githubProvider);
      // Slack takes a bot token: connectable without its OAuth client.
      expect(body.find((p) => p.id === 'slack')).toMatchObject({
        id: 'slack',
        authTypes: ['api_key'],
        configured: true,
      });
      // Zoom takes no token: nothing to connect it with until the operator sets its OAuth client.
      expect(body.find((p) => p.id === 'zoom')).toMatchObject({ id: 'zoom', authTypes: [], configured: false });
      // A copy of GitHub's file without an OAuth client of its own: its token is the way in.
      expect(body.find((p) => p.id === 'acme-tracker')).toEqual({
        ...githubProvider,
        id: 'acme-tracker',
        label: 'Acme Tracker',
        category: 'testing',
        popular: false,
        logoUrl: 'http://localhost:8080/providers/logos/acme-tracker.svg',
        authTypes: ['api_key'],
        configured: true,
      });
      // What a user types before authorization (per-connection hosts); absent when there is nothing to type.
      expect(body.find((p) => p.id === 'zendesk')?.connectFields).toEqual([
        expect.objectContaining({ name: 'subdomain', pattern: '^[a-z0-9][a-z0-9-]{0,62}$' }),
      ]);
      expect(body.find((p) => p.id === 'salesforce')?.connectFields).toEqual([
        expect.objectContaining({ name: 'loginDomain', default: 'login' }),
      ]);
      expect(body.find((p) => p.id === 'jira')?.connectFields).toEqual([
        expect.objectContaining({ name: 'site', optional: true }),
      ]);
      for (const p of body) {
        const keys = [
          ...Object.keys(githubProvider).filter((k) => k !== 'apiKey' || p.apiKey !== undefined),
          ...(p.connectFields ? ['connectFields'] : []),
        ];
        expect(Object.keys(p).sort()).toEqual(keys.sort());
        // `api_key` only for a vendor without OAuth (Trello, SendGrid), whose only way in is the token.
        const def = shipped.get(p.id as string)?.definition;
        if (def) expect(p.authType).toBe(def.oauth ? 'oauth' : 'api_key');
        if (p.authType === 'api_key') expect(p.authTypes).toEqual(['api_key']);
        expect(p.configured).toBe((p.authTypes as string[]).length > 0);
      }
    });

    it('filters by category and by every word of q, case-insensitively', async () => {
      const storage = await call(h.app, 'GET', '/api/v1/providers?category=storage');
      expect(storage.statusCode).toBe(200);
      const storageIds = (storage.json() as Array<{ id: string; category: string }>).map((p) => p.id).sort();
      const expected = shipped.providers
        .filter((p) => p.definition.category === 'storage')
        .map((p) => p.definition.id)
        .sort();
      expect(storageIds).toEqual(expected);
      expect(storageIds).toEqual(expect.arrayContaining(['box', 'dropbox']));

      const q = await call(h.app, 'GET', '/api/v1/providers?q=MICROSOFT%20ToDo');
      expect((q.json() as Array<{ id: string }>).map((p) => p.id)).toEqual(['microsoft-todo']);
      const both = await call(h.app, 'GET', '/api/v1/providers?q=github&category=developer-tools');
      expect((both.json() as Array<{ id: string }>).map((p) => p.id)).toEqual(['github']);
      const none = await call(h.app, 'GET', '/api/v1/providers?q=github&category=storage');
      expect(none.statusCode).toBe(200);
      expect(none.json()).toEqual([]);
      const tooLong = await call(h.app, 'GET', `/api/v1/providers?q=${'x'.repeat(201)}`);
      expect(tooLong.statusCode).toBe(422);
      expect(tooLong.json().error).toBe('ValidationError');
    });

    it('answers the same with a token, and ignores a bad one', async () => {
      const plain = (await call(h.app, 'GET', '/api/v1/providers')).json();
      const withToken = await call(h.app, 'GET', '/api/v1/providers', { token: user.sessionToken });
      expect(withToken.statusCode).toBe(200);
      expect(withToken.json()).toEqual(plain);
      const badToken = await call(h.app, 'GET', '/api/v1/providers', { token: 'pat_nonsense' });
      expect(badToken.statusCode).toBe(200);
    });
  });

  describe('GET /api/v1/providers/:providerId', () => {
    it('answers 200 with the provider', async () => {
      const res = await call(h.app, 'GET', '/api/v1/providers/github', { token: user.sessionToken });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual(githubProvider);
    });

    it('answers a PAT of any scope', async () => {
      const pat = await user.pat(['llm-all']);
      const res = await call(h.app, 'GET', '/api/v1/providers/google-calendar', { token: pat });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ id: 'google-calendar', label: 'Google Calendar', configured: false });
    });

    it('answers 404 NotFoundError for an unknown provider', async () => {
      const res = await call(h.app, 'GET', '/api/v1/providers/myspace', { token: user.sessionToken });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'NotFoundError', message: 'Provider myspace not found', statusCode: 404 });
    });

    it('answers 401 UnauthorizedError without a token', async () => {
      const res = await call(h.app, 'GET', '/api/v1/providers/github');
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({
        error: 'UnauthorizedError',
        message: 'Missing bearer token (Authorization: Bearer <token>)',
        statusCode: 401,
      });
    });
  });

  describe('GET /api/v1/providers/:providerId/tools', () => {
    const expectedTools = (id: string) =>
      shipped.get(id)?.definition.tools.map((t) => ({
        name: t.name,
        description: t.description,
        parameters: t.parameters,
        mode: t.mode,
      }));

    it('answers 200 with name, description, JSON Schema parameters and mode of each tool', async () => {
      const res = await call(h.app, 'GET', '/api/v1/providers/notion/tools', { token: user.sessionToken });
      expect(res.statusCode).toBe(200);
      const tools = res.json() as Array<Record<string, unknown>>;
      expect(tools).toEqual(expectedTools('notion'));
      expect(tools.length).toBeGreaterThanOrEqual(4);
      expect(tools[0]).toEqual({
        name: 'search',
        description: expect.stringMatching(/^Search the pages and databases/),
        parameters: {
          type: 'object',
          properties: expect.objectContaining({
            query: { type: 'string', description: 'Words to look for in titles.' },
          }),
          required: [],
          additionalProperties: false,
        },
        mode: 'read',
      });
    });

    it('answers 404 NotFoundError for a well-formed connectionId that is not one of yours', async () => {
      const res = await call(h.app, 'GET', '/api/v1/providers/github/tools?connectionId=conn_AbC123_-xyz789Q', {
        token: user.sessionToken,
      });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({
        error: 'NotFoundError',
        message: 'Connection conn_AbC123_-xyz789Q not found',
        statusCode: 404,
      });
    });

    it('answers 422 ValidationError for a malformed connectionId', async () => {
      const res = await call(h.app, 'GET', '/api/v1/providers/github/tools?connectionId=github-1', {
        token: user.sessionToken,
      });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toEqual({
        error: 'ValidationError',
        message: 'Validation failed: query.connectionId: must be a connection id (conn_...)',
        statusCode: 422,
        details: [{ field: 'query.connectionId', message: 'must be a connection id (conn_...)' }],
      });
    });

    it('answers 404 NotFoundError for an unknown provider', async () => {
      const res = await call(h.app, 'GET', '/api/v1/providers/myspace/tools', { token: user.sessionToken });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'NotFoundError', message: 'Provider myspace not found', statusCode: 404 });
    });

    it('answers 401 UnauthorizedError without a token', async () => {
      const res = await call(h.app, 'GET', '/api/v1/providers/github/tools');
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({
        error: 'UnauthorizedError',
        message: 'Missing bearer token (Authorization: Bearer <token>)',
        statusCode: 401,
      });
    });
  });

  guardTests(
    () => h,
    [
      { method: 'GET', url: '/api/v1/providers/github', scopes: [] },
      { method: 'GET', url: '/api/v1/providers/github/tools', scopes: [] },
      { method: 'GET', url: '/api/v1/providers/tools/search?q=create%20an%20issue', scopes: ['connections'] },
    ],
  );

  describe('GET /providers/logos/:file (public)', () => {
    it('serves the shipped SVG, cacheable and inert', async () => {
      const res = await call(h.app, 'GET', '/providers/logos/github.svg');
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('image/svg+xml; charset=utf-8');
      expect(res.headers['cache-control']).toBe('public, max-age=86400');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['content-security-policy']).toBe("default-src 'none'; style-src 'unsafe-inline'; sandbox");
      expect(res.body).toBe(readFileSync(join(SHIPPED_PROVIDERS_DIR, 'logos', 'github.svg'), 'utf8'));
    });

    it('serves a monogram for a provider that brings no logo', async () => {
      const res = await call(h.app, 'GET', '/providers/logos/acme-tracker.svg');
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('image/svg+xml; charset=utf-8');
      expect(res.body).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
      expect(res.body).toContain('>AT</text>');
      // A generated provider without a shipped logo: its initials.
      const sheets = await call(h.app, 'GET', '/providers/logos/google-sheets.svg');
      expect(sheets.statusCode).toBe(200);
      expect(sheets.body).toContain('>GS</text>');
      expect(sheets.body).not.toMatch(/<script|on\w+=|href=/i);
    });

    it('answers 404 NotFoundError for unknown providers and other file names', async () => {
      for (const file of ['myspace.svg', 'github.png', 'github', '..%2Fgithub.json', '%2E%2E%2Fpackage.json']) {
        const res = await call(h.app, 'GET', `/providers/logos/${file}`);
        expect(res.statusCode, file).toBe(404);
        expect(res.json().error).toBe('NotFoundError');
      }
    });
  });

  it('lists the provider routes in the OpenAPI document', async () => {
    const doc = (await call(h.app, 'GET', '/openapi.json')).json() as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/providers',
        '/api/v1/providers/{providerId}',
        '/api/v1/providers/{providerId}/tools',
      ]),
    );
  });

  it('refuses to start with a bad provider file, naming file and field', async () => {
    const bad = mkdtempSync(join(tmpdir(), 'sb-providers-bad-'));
    mkdirSync(join(bad, 'logos'));
    writeFileSync(join(bad, 'broken.json'), JSON.stringify({ id: 'broken', label: 'Broken', authType: 'apikey' }));
    try {
      await expect(h.extraApp({ PROVIDERS_DIR: bad })).rejects.toThrow(
        `${join(bad, 'broken.json')}: authType: Invalid option: expected one of "oauth"|"api_key"`,
      );
    } finally {
      rmSync(bad, { recursive: true, force: true });
    }
  });
});
