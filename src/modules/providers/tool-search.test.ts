import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiKeyFake,
  apiKeyProvidersEnv,
  keyholeProvider,
  startApiKeyFake,
} from '../../../test/fakes/api-key-provider.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { providerCatalog } from './catalog.ts';

/** `GET /api/v1/providers/tools/search` (issue 41 item 3): the agent's tool search as an API. */
describe('GET /api/v1/providers/tools/search', () => {
  let h: TestHarness;
  let fake: ApiKeyFake;
  let user: TestUser;
  const TOKEN = 'kh_live_4f2a9c8e1b7d6a5f3e2c1b0a';
  const URL_ = '/api/v1/providers/tools/search';

  beforeAll(async () => {
    fake = await startApiKeyFake();
    fake.tokens.set(TOKEN, { email: 'ada@example.com', id: 'kh-ada', name: 'Ada Lovelace' });
    const keyhole = keyholeProvider(fake.url);
    const tools = keyhole.tools as Array<Record<string, unknown>>;
    h = await createHarness(
      apiKeyProvidersEnv([
        {
          ...keyhole,
          tools: [
            ...tools,
            {
              ...tools[0],
              name: 'create_item',
              description: 'Create an item in the connected Keyhole workspace with a title.',
              examples: ['jot down that the ferns need watering'],
              mode: 'write',
              parameters: {
                type: 'object',
                properties: { title: { type: 'string', description: 'The title' } },
                required: ['title'],
              },
              request: { method: 'POST', path: '/items', body: { title: '{{title}}' } },
            },
          ],
        },
      ]),
    );
    user = await createUser(h.app);
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
  });

  const search = (query: string, token = user.sessionToken) => call(h.app, 'GET', `${URL_}?${query}`, { token });
  const names = (res: { json(): unknown }) =>
    (res.json() as Array<{ providerId: string; name: string }>).map((t) => `${t.providerId}/${t.name}`);

  it('is in /openapi.json with its scope, query parameters and hit schema', async () => {
    const doc = (await call(h.app, 'GET', '/openapi.json')).json() as {
      paths: Record<string, { get?: Record<string, unknown> }>;
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    const op = doc.paths['/api/v1/providers/tools/search']?.get as {
      security: unknown;
      parameters: Array<{ name: string; in: string }>;
    };
    expect(op.security).toEqual([{ bearerAuth: ['connections'] }]);
    expect(
      op.parameters
        .filter((p) => p.in === 'query')
        .map((p) => p.name)
        .sort(),
    ).toEqual(['connected', 'limit', 'q']);
    expect(Object.keys(doc.components.schemas.ToolSearchHit?.properties ?? {}).sort()).toEqual(
      ['description', 'mode', 'name', 'parameters', 'providerId', 'providerLabel', 'score'].sort(),
    );
  });

  it('answers 401 without a token and 403 to a token without the connections scope', async () => {
    expect((await call(h.app, 'GET', `${URL_}?q=email`)).statusCode).toBe(401);
    const res = await search('q=email', await user.pat(['account']));
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({
      error: 'ForbiddenError',
      message: 'Missing required scope: connections',
      statusCode: 403,
    });
  });

  it('ranks the whole catalog: each hit names its provider, with the tool as GET /providers/:id/tools shows it', async () => {
    const res = await search(`q=${encodeURIComponent('latest messages in #eng on slack')}&limit=3`);
    expect(res.statusCode).toBe(200);
    const hits = res.json() as Array<Record<string, unknown>>;
    expect(hits).toHaveLength(3);
    // Slack's tools only; the channel's history among them (search_messages, as right, may come first).
    expect(hits.map((x) => x.providerId)).toEqual(['slack', 'slack', 'slack']);
    const history = hits.find((x) => x.name === 'get_channel_history');
    expect(history).toMatchObject({ providerId: 'slack', providerLabel: 'Slack', name: 'get_channel_history' });
    expect(Object.keys(history ?? {}).sort()).toEqual(
      ['description', 'mode', 'name', 'parameters', 'providerId', 'providerLabel', 'score'].sort(),
    );
    const slack = providerCatalog(h.config)
      .get('slack')
      ?.definition.tools.find((t) => t.name === 'get_channel_history');
    expect(history).toMatchObject({ description: slack?.description, parameters: slack?.parameters, mode: 'read' });
    const scores = hits.map((x) => x.score as number);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
  });

  it('prefers the action asked and a provider the request names', async () => {
    // Gmail archives by label, Outlook by moving the message: either is right.
    const archive = names(await search(`q=${encodeURIComponent('archive this email')}&limit=3`));
    expect(
      archive.some((n) => ['gmail/modify_message_labels', 'outlook/move_message'].includes(n)),
      String(archive),
    ).toBe(true);
    // Gmail's tools only; the archiving one among the first three (list_labels and trash_message, as near in
    // words, have been among them since the re-ranking by meaning).
    const inGmail = names(await search(`q=${encodeURIComponent('archive this email in gmail')}&limit=3`));
    expect(
      inGmail.every((n) => n.startsWith('gmail/')),
      String(inGmail),
    ).toBe(true);
    expect(inGmail).toContain('gmail/modify_message_labels');
    expect(names(await search(`q=${encodeURIComponent('search tweets about the launch')}&limit=1`))).toEqual([
      'x/search_recent_posts',
    ]);
    // Either calendar's events (no calendar is named).
    const tomorrow = names(await search(`q=${encodeURIComponent("what's on my calendar tomorrow")}&limit=3`));
    expect(
      tomorrow.some((n) =>
        [
          'google-calendar/list_events',
          'outlook-calendar/list_calendar_events',
          'outlook-calendar/list_events_in_range',
        ].includes(n),
      ),
      String(tomorrow),
    ).toBe(true);
  });

  it("finds a tool by its examples (requests in users' words), which the hit does not show", async () => {
    const res = await search(`q=${encodeURIComponent('jot down: water the ferns')}&limit=3`);
    expect(res.statusCode).toBe(200);
    const hits = res.json() as Array<Record<string, unknown>>;
    expect(hits[0]).toMatchObject({ providerId: 'keyhole', name: 'create_item' });
    expect(hits[0]).not.toHaveProperty('examples');
  });

  it('answers at most limit hits (default 10), and an empty list when no word of the request matches', async () => {
    expect((await search('q=list').then((r) => r.json())) as unknown[]).toHaveLength(10);
    expect((await search('q=list&limit=50').then((r) => r.json())) as unknown[]).toHaveLength(50);
    const none = await search(`q=${encodeURIComponent('the of and zzqxv')}`);
    expect(none.statusCode).toBe(200);
    expect(none.json()).toEqual([]);
  });

  it('answers 422 ValidationError for a missing or too long q, a limit outside 1-50, a connected not true/false', async () => {
    for (const q of [
      '',
      'q=',
      'q=%20%20',
      `q=${'a'.repeat(501)}`,
      'q=x&limit=0',
      'q=x&limit=51',
      'q=x&limit=2.5',
      'q=x&connected=yes',
    ]) {
      const res = await search(q);
      expect(res.statusCode, q).toBe(422);
      expect(res.json(), q).toMatchObject({ error: 'ValidationError', statusCode: 422 });
    }
  });

  it('with connected=true searches only your active connections, and only the tools your permission lets you run', async () => {
    const other = await createUser(h.app);
    expect((await search('q=item&connected=true', other.sessionToken)).json()).toEqual([]);
    const connect = await call(h.app, 'POST', '/api/v1/connections/from-catalog', {
      token: other.sessionToken,
      body: {
        catalogEntryId: 'keyhole',
        bearerToken: TOKEN,
        fields: { workspace: 'acme', email: 'ada@example.com' },
      },
    });
    expect(connect.statusCode, connect.body).toBe(201);

    expect(names(await search('q=item&connected=true', other.sessionToken)).sort()).toEqual([
      'keyhole/create_item',
      'keyhole/list_items',
    ]);
    expect(names(await search(`q=${encodeURIComponent('create an item')}&connected=true`, other.sessionToken))[0]).toBe(
      'keyhole/create_item',
    );
    // A request for another provider's tools finds nothing among your connections.
    expect((await search('q=slack%20message&connected=true', other.sessionToken)).json()).toEqual([]);
    // Read permission on keyhole: its write tool is left out.
    const reader = await other.pat(['connections'], { provider_permissions: { keyhole: 'read' } });
    expect(names(await search('q=item&connected=true', reader))).toEqual(['keyhole/list_items']);
    // Someone else's connections are not yours.
    expect((await search('q=item&connected=true')).json()).toEqual([]);
  });
});
