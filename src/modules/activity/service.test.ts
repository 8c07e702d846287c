import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import {
  acmeProvider,
  type FakeOAuthProvider,
  providersDirEnv,
  startFakeOAuthProvider,
} from '../../../test/fakes/oauth-provider.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { JOB_CATALOG } from '../../composition.ts';
import { activity } from '../../db/schema/index.ts';
import type { JobContext } from '../../jobs/definition.ts';
import { newId } from '../../lib/ids.ts';
import { connectAcme, execute } from '../connections/test-support.ts';

/** A GitHub-shaped token the model passes as an argument: it must never be stored or shown. */
const SECRET = `ghp_${'S3cr3t'.repeat(7)}`;

interface Row {
  id: string;
  kind: string;
  via: string;
  actor: { kind: string; name: string; tokenId: string | null; clientId: string | null };
  agentId: string | null;
  agentName: string | null;
  connectionId: string | null;
  providerId: string | null;
  tool: string | null;
  mode: string | null;
  status: string;
  durationMs: number | null;
  credits: number;
  arguments: string | null;
  result: string | null;
  error: string | null;
  createdAt: string;
}

describe('activity log', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  let acme: FakeOAuthProvider;

  beforeAll(async () => {
    llm = await startFakeLlm();
    acme = await startFakeOAuthProvider();
    h = await createHarness({
      ...providersDirEnv([{ fake: acme, definition: acmeProvider(acme.url) }]),
      LLM_BASE_URL: llm.url,
      LLM_MODELS: 'fake-model=1000000/2000000',
      ACTIVITY_RETENTION_DAYS: '10',
    });
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
    await acme?.close();
  });
  beforeEach(() => {
    llm.reset();
    acme.reset();
  });

  const list = async (u: TestUser, query = '') => {
    const res = await call(h.app, 'GET', `/api/v1/activity${query}`, { token: u.sessionToken });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { data: Row[]; pagination: { page: number; limit: number; total: number; hasMore: boolean } };
  };

  /** An agent chat, through a PAT, whose model calls a tool that works and one that fails (with a secret). */
  const conversation = async (u: TestUser) => {
    const connectionId = await connectAcme(h.app, u);
    const agent = (
      await call(h.app, 'POST', '/api/v1/agents', { token: u.sessionToken, body: { name: 'Helper' } })
    ).json() as { id: string };
    const pat = await u.pat(['agents-all']);
    llm.enqueue(
      {
        toolCalls: [
          { name: 'acme_get_item', arguments: { id: 'item-1' } },
          { name: 'acme_get_item', arguments: { id: SECRET } },
        ],
      },
      { content: 'Item 1 is there; the other is not.' },
    );
    const res = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
      token: pat,
      body: { messages: [{ role: 'user', content: 'Check item 1 and the other one' }] },
    });
    expect(res.statusCode, res.body).toBe(200);
    const providerToken = acme.apiRequests[0]?.token ?? '';
    expect(providerToken.length).toBeGreaterThan(8);
    return { connectionId, agentId: agent.id, pat, providerToken };
  };

  it('records each tool call of an agent chat and the run, with who, what, status and duration; nothing secret', async () => {
    const u = await createUser(h.app);
    const { connectionId, agentId, pat, providerToken } = await conversation(u);

    const page = await list(u, '?kind=tool-call');
    expect(page.pagination).toEqual({ page: 1, limit: 20, total: 2, hasMore: false });
    const byStatus = Object.fromEntries(page.data.map((r) => [r.status, r]));
    const common = {
      kind: 'tool-call',
      via: 'agent-chat',
      agentId,
      agentName: 'Helper',
      connectionId,
      providerId: 'acme',
      tool: 'acme_get_item',
      mode: 'read',
      credits: 0,
      actor: { kind: 'pat', name: 'Agent Helper', tokenId: expect.stringMatching(/^tok_/), clientId: null },
    };
    expect(byStatus.ok).toMatchObject({ ...common, arguments: '{"id":"item-1"}', error: null });
    expect(byStatus.ok?.result).toContain('item-1');
    expect(byStatus.error).toMatchObject({ ...common, result: null });
    expect(byStatus.error?.error).toContain('Item not found');
    expect(byStatus.error?.arguments).toBe('{"id":"[REDACTED]"}');
    for (const r of page.data) {
      expect(r.durationMs).toBeGreaterThanOrEqual(0);
      expect(Date.parse(r.createdAt)).toBeGreaterThan(Date.now() - 60_000);
    }

    const runs = await list(u, '?kind=agent-run');
    expect(runs.data).toHaveLength(1);
    expect(runs.data[0]).toMatchObject({ via: 'agent-chat', agentId, status: 'ok', tool: null });
    expect(runs.data[0]?.credits).toBeGreaterThan(0);
    expect(runs.data[0]?.result).toContain('Item 1 is there');

    // The secret argument, the provider's token and the caller's PAT are in no answer and no stored row.
    const stored = JSON.stringify(
      await h.database.db.select().from(activity).where(eq(activity.accountId, u.account.id)),
    );
    const answered = JSON.stringify([page, runs]);
    for (const secret of [SECRET, providerToken, pat]) {
      expect(stored).not.toContain(secret);
      expect(answered).not.toContain(secret);
    }

    const one = await call(h.app, 'GET', `/api/v1/activity/${byStatus.error?.id}`, { token: u.sessionToken });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual(byStatus.error);
  });

  it('another account sees none of it: an empty list and 404 for a row', async () => {
    const u = await createUser(h.app);
    await conversation(u);
    const mine = await list(u);
    expect(mine.data.map((r) => r.kind).sort()).toEqual(['agent-run', 'connection', 'tool-call', 'tool-call']);
    const other = await createUser(h.app);
    expect(await list(other)).toEqual({ data: [], pagination: { page: 1, limit: 20, total: 0, hasMore: false } });
    const res = await call(h.app, 'GET', `/api/v1/activity/${mine.data[0]?.id}`, { token: other.sessionToken });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ error: 'NotFoundError' });
    expect((await call(h.app, 'GET', '/api/v1/activity/act_nope', { token: u.sessionToken })).statusCode).toBe(404);
  });

  it('filters by status, tool, connection, agent, kind and time; pages; needs the account scope', async () => {
    const u = await createUser(h.app);
    const { connectionId, agentId } = await conversation(u);
    const ids = async (q: string) => (await list(u, q)).data.map((r) => `${r.kind}:${r.status}`).sort();
    expect(await ids('?status=error')).toEqual(['tool-call:error']);
    expect(await ids('?tool=acme_get_item')).toEqual(['tool-call:error', 'tool-call:ok']);
    expect(await ids(`?connectionId=${connectionId}`)).toEqual(['connection:ok', 'tool-call:error', 'tool-call:ok']);
    expect(await ids('?connectionId=conn_other')).toEqual([]);
    expect(await ids(`?agentId=${agentId}`)).toEqual(['agent-run:ok', 'tool-call:error', 'tool-call:ok']);
    expect(await ids('?tool=acme_list_items')).toEqual([]);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const past = new Date(Date.now() - 3_600_000).toISOString();
    expect(await ids(`?from=${future}`)).toEqual([]);
    expect(await ids(`?from=${past}&to=${future}`)).toHaveLength(4);
    expect(await ids(`?to=${past}`)).toEqual([]);
    const paged = await list(u, '?limit=3&page=2');
    expect(paged.pagination).toEqual({ page: 2, limit: 3, total: 4, hasMore: false });
    expect(paged.data).toHaveLength(1);

    for (const bad of ['?status=maybe', '?limit=0', '?limit=101', '?from=yesterday', '?page=0']) {
      const res = await call(h.app, 'GET', `/api/v1/activity${bad}`, { token: u.sessionToken });
      expect(res.statusCode, bad).toBe(422);
    }
    const noAccount = await u.pat(['connections']);
    expect((await call(h.app, 'GET', '/api/v1/activity', { token: noAccount })).statusCode).toBe(403);
  });

  it('records a write tool refused for a read-only permission, and a direct call with the token named', async () => {
    const u = await createUser(h.app);
    const connectionId = await connectAcme(h.app, u);
    const readOnly = await u.pat(['connections'], { provider_permissions: { acme: 'read' } });
    const refused = await execute(h.app, readOnly, connectionId, 'create_item', { title: 'Nope' });
    expect(refused.statusCode).toBe(403);
    expect(acme.apiRequests.filter((r) => r.method === 'POST')).toEqual([]);
    const ran = await execute(h.app, readOnly, connectionId, 'list_items', {});
    expect(ran.statusCode).toBe(200);

    const page = await list(u, '?kind=tool-call');
    expect(page.data.map((r) => [r.tool, r.status])).toEqual([
      ['list_items', 'ok'],
      ['create_item', 'refused'],
    ]);
    expect(page.data[1]).toMatchObject({
      kind: 'tool-call',
      via: 'api',
      mode: 'write',
      connectionId,
      providerId: 'acme',
      arguments: '{"title":"Nope"}',
      actor: { kind: 'pat', name: 'Token test token' },
    });
    expect(page.data[1]?.error).toContain('may only run read tools');
  });

  it('records connection events: created, and revoked when the user disconnects, named as the caller', async () => {
    const u = await createUser(h.app);
    const connectionId = await connectAcme(h.app, u);
    const del = await call(h.app, 'DELETE', `/api/v1/connections/${connectionId}`, { token: u.sessionToken });
    expect(del.statusCode).toBe(204);
    const page = await list(u, '?kind=connection');
    expect(page.data.map((r) => [r.tool, r.status, r.connectionId, r.providerId])).toEqual([
      ['revoked', 'ok', connectionId, 'acme'],
      ['created', 'ok', connectionId, 'acme'],
    ]);
    expect(page.data[0]).toMatchObject({ via: 'api', actor: { kind: 'session', name: 'You (signed in)' } });
  });

  it("the writer's batch stores every field as given, the defaults where one is left out, and NUL or a lone surrogate as U+FFFD", async () => {
    const u = await createUser(h.app);
    const at = new Date('2026-11-29T15:00:00.123Z');
    const full = {
      id: newId('activity'),
      accountId: u.account.id,
      kind: 'tool-call',
      via: 'mcp',
      actorKind: 'pat',
      tokenId: 'pat_1',
      clientId: 'client_1',
      agentId: 'agt_1',
      agentName: 'Helper',
      connectionId: 'conn_1',
      providerId: 'acme',
      tool: 'acme_get_item',
      mode: 'read',
      status: 'error',
      durationMs: 42,
      credits: 7,
      argsSummary: '{"id":"a\u0000b"}',
      resultSummary: 'half \ud800 a pair',
      error: 'bad \u0000 byte',
      createdAt: at,
    };
    const bare = {
      id: newId('activity'),
      accountId: u.account.id,
      kind: 'agent-run',
      via: 'api',
      actorKind: 'session',
      status: 'ok',
    };
    const writer = h.app.deps.areas.activityWriter;
    expect(await Promise.all([writer.add(full), writer.add(bare)])).toEqual([true, true]);
    const [stored] = await h.database.db.select().from(activity).where(eq(activity.id, full.id));
    expect(stored).toEqual({
      ...full,
      argsSummary: '{"id":"a\ufffdb"}',
      resultSummary: 'half \ufffd a pair',
      error: 'bad \ufffd byte',
    });
    const [defaults] = await h.database.db.select().from(activity).where(eq(activity.id, bare.id));
    expect(defaults).toMatchObject({ ...bare, credits: 0, durationMs: null, tool: null, error: null });
    expect(Math.abs((defaults?.createdAt.getTime() ?? 0) - Date.now())).toBeLessThan(60_000);
  });

  it('the activity.purge job deletes rows past ACTIVITY_RETENTION_DAYS and keeps the rest', async () => {
    const u = await createUser(h.app);
    const day = 86_400_000;
    const row = (ageDays: number) => ({
      id: newId('activity'),
      accountId: u.account.id,
      kind: 'tool-call',
      via: 'api',
      actorKind: 'session',
      status: 'ok',
      tool: `t${ageDays}`,
      createdAt: new Date(Date.now() - ageDays * day),
    });
    await h.database.db.insert(activity).values([row(11), row(9), row(0)]);
    await JOB_CATALOG['activity.purge'].run(h.app.deps, {}, {} as JobContext);
    expect((await list(u)).data.map((r) => r.tool)).toEqual(['t0', 't9']);
  });

  guardTests(
    () => h,
    [
      { method: 'GET', url: '/api/v1/activity', scopes: ['account'] },
      {
        method: 'GET',
        url: '/api/v1/activity/act_x',
        scopes: ['account'],
        ownedUrl: async (owner) => {
          const id = newId('activity');
          await h.database.db.insert(activity).values({
            id,
            accountId: owner.account.id,
            kind: 'tool-call',
            via: 'api',
            actorKind: 'session',
            status: 'ok',
          });
          return `/api/v1/activity/${id}`;
        },
      },
    ],
  );
});
