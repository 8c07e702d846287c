import { describe, expect, it } from 'vitest';
import { call, createUser, fakeLlmSuite, type TestHarness, type TestUser } from '../../test/harness.ts';
import { PageClient } from '../../test/web-client.ts';
import { activity } from '../db/schema/index.ts';
import { newId } from '../lib/ids.ts';

describe('/account/activity', () => {
  let h: TestHarness;
  fakeLlmSuite((s) => ({ h } = s));

  const row = (u: TestUser, extra: Partial<typeof activity.$inferInsert> & { status: string }) => ({
    id: newId('activity'),
    accountId: u.account.id,
    kind: 'tool-call',
    via: 'agent-chat',
    actorKind: 'session',
    mode: 'read',
    durationMs: 42,
    ...extra,
  });

  it('shows the rows with who, what and status, a failed call with its error, filtered from a connection or agent link', async () => {
    const u = await createUser(h.app);
    const agent = (
      await call(h.app, 'POST', '/api/v1/agents', { token: u.sessionToken, body: { name: 'Helper' } })
    ).json() as { id: string };
    await h.database.db.insert(activity).values([
      row(u, {
        status: 'ok',
        tool: 'acme_get_item',
        agentId: agent.id,
        agentName: 'Helper',
        connectionId: 'conn_one',
        providerId: 'acme',
        argsSummary: '{"id":"item-1"}',
        resultSummary: '{"id":"item-1","title":"First"}',
        createdAt: new Date(Date.now() - 1000),
      }),
      row(u, {
        status: 'error',
        tool: 'acme_create_item',
        mode: 'write',
        connectionId: 'conn_two',
        providerId: 'acme',
        argsSummary: '{"title":"<b>x</b>"}',
        error: 'Acme refused the request (422): title is too long',
      }),
    ]);
    const browser = new PageClient(h.app);
    expect((await browser.get('/account/activity')).headers.location).toBe('/signin?return_to=%2Faccount%2Factivity');
    expect((await browser.signIn(u.account.email, u.password)).statusCode).toBe(303);

    const page = await browser.get('/account/activity');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<a href="/account/activity">Activity</a>');
    expect(page.body).toContain('2 entries; page 1 of 1.');
    expect(page.body).toContain('<code>acme_get_item</code> <span class="muted small">(read)</span>');
    expect(page.body).toContain('Agent Helper');
    expect(page.body).toContain(
      '<div class="small error" role="note"><strong>Error:</strong> Acme refused the request (422): title is too long</div>',
    );
    expect(page.body).toContain('<td>Failed</td>');
    // Arguments are shown as text, never as markup.
    expect(page.body).toContain('&lt;b&gt;x&lt;/b&gt;');
    expect(page.body).not.toContain('<b>x</b>');

    const one = await browser.get('/account/activity?connectionId=conn_two');
    expect(one.body).toContain('1 entry match; page 1 of 1.');
    expect(one.body).toContain('acme_create_item');
    expect(one.body).not.toContain('acme_get_item');
    const failed = await browser.get('/account/activity?status=error&tool=&from=&to=');
    expect(failed.body).toContain('1 entry match');

    // The agent's page links to its activity, which holds its rows only.
    const agentPage = await browser.get(`/account/agents/${agent.id}`);
    expect(agentPage.body).toContain(`<a href="/account/activity?agentId=${agent.id}">Activity of this agent</a>`);
    const ofAgent = await browser.get(`/account/activity?agentId=${agent.id}`);
    expect(ofAgent.body).toContain('1 entry match');
    expect(ofAgent.body).toContain('acme_get_item');

    const bad = await browser.get('/account/activity?status=maybe');
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('The filter was not applied');

    // Another account's browser sees none of it.
    const other = await createUser(h.app);
    const theirs = new PageClient(h.app);
    await theirs.signIn(other.account.email, other.password);
    const empty = await theirs.get('/account/activity');
    expect(empty.body).toContain('No activity here.');
    expect(empty.body).not.toContain('acme_');
  });
});
