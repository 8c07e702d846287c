import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { FakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, createUser, fakeLlmSuite, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { creditTransactions } from '../../db/schema/index.ts';

const MODELS = 'fake-model=1000000/2000000';

describe('skills API, agent links and the skills group', () => {
  let h: TestHarness;
  let llm: FakeLlm;

  fakeLlmSuite((s) => ({ h, llm } = s), { LLM_MODELS: MODELS });

  const as = (u: TestUser) => ({ token: u.sessionToken });
  const report = {
    name: 'Weekly report',
    description: 'Write the weekly status report',
    prompt: 'Write three sections: Done, Next, Risks. One line each item.',
  };
  const makeSkill = async (u: TestUser, body: Record<string, unknown> = {}) => {
    const res = await call(h.app, 'POST', '/api/v1/skills', { ...as(u), body: { ...report, ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string; name: string };
  };
  const makeAgent = async (u: TestUser, body: Record<string, unknown> = {}) => {
    const res = await call(h.app, 'POST', '/api/v1/agents', { ...as(u), body: { name: 'Helper', ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string };
  };

  it('creates, lists, reads, updates and deletes a skill', async () => {
    const u = await createUser(h.app);
    const res = await call(h.app, 'POST', '/api/v1/skills', { ...as(u), body: { name: ' Triage ', prompt: 'Sort.' } });
    expect(res.statusCode, res.body).toBe(201);
    const skill = res.json();
    expect(skill).toEqual({
      id: expect.stringMatching(/^skl_/),
      accountId: u.account.id,
      name: 'Triage',
      description: '',
      prompt: 'Sort.',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    await makeSkill(u);
    const list = await call(h.app, 'GET', '/api/v1/skills?sortBy=name&sortOrder=desc', as(u));
    expect(list.json().data.map((s: { name: string }) => s.name)).toEqual(['Weekly report', 'Triage']);
    expect(list.json().pagination).toEqual({ page: 1, limit: 20, total: 2, hasMore: false });
    expect((await call(h.app, 'GET', `/api/v1/skills/${skill.id}`, as(u))).json()).toEqual(skill);
    const updated = await call(h.app, 'PUT', `/api/v1/skills/${skill.id}`, {
      ...as(u),
      body: { prompt: 'Sort by urgency.' },
    });
    expect(updated.json()).toMatchObject({ name: 'Triage', prompt: 'Sort by urgency.' });
    const clash = await call(h.app, 'PUT', `/api/v1/skills/${skill.id}`, { ...as(u), body: { name: 'Weekly report' } });
    expect(clash.statusCode).toBe(409);
    expect(clash.json().message).toBe('A skill named "Weekly report" already exists');
    for (const body of [{ name: '', prompt: 'x' }, { name: 'x' }, { name: 'x', prompt: 'y', extra: 1 }]) {
      expect((await call(h.app, 'POST', '/api/v1/skills', { ...as(u), body })).statusCode).toBe(422);
    }
    expect((await call(h.app, 'DELETE', `/api/v1/skills/${skill.id}`, as(u))).statusCode).toBe(204);
    expect((await call(h.app, 'GET', `/api/v1/skills/${skill.id}`, as(u))).statusCode).toBe(404);
    const use = await u.pat(['agents-use']);
    expect((await call(h.app, 'GET', '/api/v1/skills', { token: use })).statusCode).toBe(403);
  });

  it('generate-prompt answers a skill drafted by the default model, billed to the caller', async () => {
    const u = await createUser(h.app);
    llm.enqueue(
      { content: 'no json here' },
      {
        content: JSON.stringify({
          name: 'Meeting notes',
          description: 'Summarise a meeting transcript',
          prompt: 'You summarise meetings: decisions, owners, dates.',
        }),
      },
    );
    const res = await call(h.app, 'POST', '/api/v1/skills/generate-prompt', {
      ...as(u),
      body: { description: 'Turn meeting transcripts into notes' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      name: 'Meeting notes',
      description: 'Summarise a meeting transcript',
      prompt: 'You summarise meetings: decisions, owners, dates.',
    });
    expect(llm.requests).toHaveLength(2);
    expect(llm.requests[0]?.model).toBe('fake-model');
    expect(llm.requests[0]?.messages[1]?.content).toBe('Turn meeting transcripts into notes');
    expect(llm.requests[1]?.messages.at(-1)?.content).toMatch(/^The answer was not the JSON object asked for/);
    // Nothing is stored; the calls are billed.
    expect((await call(h.app, 'GET', '/api/v1/skills', as(u))).json().data).toEqual([]);
    await h.app.deps.background.drain();
    const charges = await h.database.db
      .select()
      .from(creditTransactions)
      .where(and(eq(creditTransactions.accountId, u.account.id), eq(creditTransactions.type, 'llm')));
    expect(charges.map((c) => c.description)).toEqual(['Skills: prompt generation', 'Skills: prompt generation']);
    expect(charges.every((c) => c.amount < 0)).toBe(true);
    // The answer tells both calls' cost and the balance after them, which the account shows (issue 46).
    const spent = -charges.reduce((a, c) => a + c.amount, 0);
    expect(res.headers['x-credits-consumed']).toBe(String(spent));
    expect(res.headers['x-credits-remaining']).toBe(String(100_000 - spent));
    expect((await call(h.app, 'GET', '/api/v1/accounts/me', as(u))).json().creditBalance).toBe(100_000 - spent);
    const empty = await call(h.app, 'POST', '/api/v1/skills/generate-prompt', { ...as(u), body: { description: ' ' } });
    expect(empty.statusCode).toBe(422);
  });

  it('links and unlinks skills; the agent sees an index and loads a skill with skill-load', async () => {
    const u = await createUser(h.app);
    const agent = await makeAgent(u, { enabledBuiltInTools: ['skills'], personality: 'Be brief.' });
    const skill = await makeSkill(u);
    const other = await makeSkill(u, { name: 'Unlinked', description: 'never shown' });
    const available = await call(h.app, 'GET', `/api/v1/agents/${agent.id}/skills/available`, as(u));
    expect(available.json().data.map((s: { name: string }) => s.name)).toEqual(['Unlinked', 'Weekly report']);
    const linked = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/skills`, {
      ...as(u),
      body: { skillId: skill.id },
    });
    expect(linked.statusCode, linked.body).toBe(201);
    expect(linked.json()).toEqual({
      agentId: agent.id,
      skillId: skill.id,
      skill: { id: skill.id, name: 'Weekly report', description: 'Write the weekly status report' },
      createdAt: expect.any(String),
    });
    expect(
      (await call(h.app, 'POST', `/api/v1/agents/${agent.id}/skills`, { ...as(u), body: { skillId: skill.id } }))
        .statusCode,
    ).toBe(409);
    expect(
      (await call(h.app, 'GET', `/api/v1/agents/${agent.id}/skills/available`, as(u)))
        .json()
        .data.map((s: { id: string }) => s.id),
    ).toEqual([other.id]);
    const links = await call(h.app, 'GET', `/api/v1/agents/${agent.id}/skills`, as(u));
    expect(links.json().data.map((l: { skillId: string }) => l.skillId)).toEqual([skill.id]);

    llm.enqueue(
      { toolCalls: [{ name: 'skill-load', arguments: { name: 'weekly report' } }] },
      { content: 'Done: shipped. Next: tests. Risks: none.' },
    );
    const chat = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
      ...as(u),
      body: { messages: [{ role: 'user', content: 'Write my weekly report.' }] },
    });
    expect(chat.statusCode, chat.body).toBe(200);
    expect(chat.json().choices[0].message.content).toBe('Done: shipped. Next: tests. Risks: none.');
    const system = llm.requests[0]?.messages[0]?.content ?? '';
    expect(system).toContain('Be brief.');
    expect(system).toContain('- Weekly report: Write the weekly status report');
    expect(system).not.toContain('Unlinked');
    expect(system).not.toContain(report.prompt);
    expect(llm.requests[0]?.tools?.map((t) => t.function.name)).toEqual(['skill-load']);
    const toolAnswer = llm.requests[1]?.messages.find((m) => m.role === 'tool')?.content ?? '';
    expect(toolAnswer).toContain(report.prompt);

    expect((await call(h.app, 'DELETE', `/api/v1/agents/${agent.id}/skills/${skill.id}`, as(u))).statusCode).toBe(204);
    expect((await call(h.app, 'DELETE', `/api/v1/agents/${agent.id}/skills/${skill.id}`, as(u))).statusCode).toBe(404);
    llm.enqueue({ toolCalls: [{ name: 'skill-load', arguments: { name: 'Weekly report' } }] }, { content: 'ok' });
    await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
      ...as(u),
      body: { messages: [{ role: 'user', content: 'Again.' }] },
    });
    const after = llm.requests.at(-1)?.messages ?? [];
    expect(after[0]?.content).not.toContain('Weekly report');
    expect(after.find((m) => m.role === 'tool')?.content).toContain('No skill named \\"Weekly report\\"; yours: none');
  });

  it("a skill group without links adds no index; another account's skill cannot be linked", async () => {
    const [u, other] = [await createUser(h.app), await createUser(h.app)];
    const agent = await makeAgent(u, { enabledBuiltInTools: ['skills'] });
    const theirs = await makeSkill(other);
    const res = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/skills`, {
      ...as(u),
      body: { skillId: theirs.id },
    });
    expect(res.statusCode).toBe(404);
    expect(res.json().message).toBe(`Skill ${theirs.id} not found`);
    llm.enqueue({ content: 'hi' });
    await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
      ...as(u),
      body: { messages: [{ role: 'user', content: 'Hello' }] },
    });
    expect(llm.requests[0]?.messages[0]?.content).not.toContain('skill-load tool');
  });

  let lastSkillId = '';
  const agentOf = async (o: TestUser) => (await makeAgent(o)).id;
  const skillOf = async (o: TestUser) => {
    lastSkillId = (await makeSkill(o, { name: `s${Math.random().toString(36).slice(2, 10)}` })).id;
    return lastSkillId;
  };
  const linkedOf = async (o: TestUser) => {
    const agentId = await agentOf(o);
    const skillId = await skillOf(o);
    await call(h.app, 'POST', `/api/v1/agents/${agentId}/skills`, { token: o.sessionToken, body: { skillId } });
    return `/api/v1/agents/${agentId}/skills/${skillId}`;
  };
  const all = ['agents-all' as const];
  const both = ['agents-all' as const, 'agents-use' as const];
  guardTests(
    () => h,
    [
      { method: 'POST', url: '/api/v1/skills', scopes: all, body: { name: 'g', prompt: 'p' } },
      { method: 'GET', url: '/api/v1/skills', scopes: all },
      { method: 'POST', url: '/api/v1/skills/generate-prompt', scopes: all, body: { description: 'x' } },
      {
        method: 'GET',
        url: '/api/v1/skills/skl_x',
        scopes: all,
        ownedUrl: async (o) => `/api/v1/skills/${await skillOf(o)}`,
      },
      {
        method: 'PUT',
        url: '/api/v1/skills/skl_x',
        scopes: all,
        body: { description: 'changed' },
        ownedUrl: async (o) => `/api/v1/skills/${await skillOf(o)}`,
      },
      {
        method: 'DELETE',
        url: '/api/v1/skills/skl_x',
        scopes: all,
        ownedUrl: async (o) => `/api/v1/skills/${await skillOf(o)}`,
      },
      {
        method: 'GET',
        url: '/api/v1/agents/agt_x/skills',
        scopes: both,
        ownedUrl: async (o) => `/api/v1/agents/${await agentOf(o)}/skills`,
      },
      {
        method: 'GET',
        url: '/api/v1/agents/agt_x/skills/available',
        scopes: both,
        ownedUrl: async (o) => `/api/v1/agents/${await agentOf(o)}/skills/available`,
      },
      {
        method: 'POST',
        url: '/api/v1/agents/agt_x/skills',
        scopes: all,
        body: { skillId: 'skl_x' },
        ownedUrl: async (o) => {
          const agentId = await agentOf(o);
          await skillOf(o);
          return `/api/v1/agents/${agentId}/skills`;
        },
        get validBody() {
          return { skillId: lastSkillId };
        },
      },
      { method: 'DELETE', url: '/api/v1/agents/agt_x/skills/skl_x', scopes: all, ownedUrl: linkedOf },
    ],
  );
});
