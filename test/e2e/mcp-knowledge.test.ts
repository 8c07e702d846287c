import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ServiceContext } from '../../src/context.ts';
import { knowledgeSources } from '../../src/db/schema/index.ts';
import { knowledgeAgentTools } from '../../src/modules/knowledge/agent-tools.ts';
import { type FakeLlm, startFakeLlm } from '../fakes/llm-upstream.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../harness.ts';

/**
 * The knowledge-base tools: through MCP's use-agent (the SDK client over real HTTP, the scripted fake LLM),
 * and the allow-list of bases a limited token carries, enforced by read and write tools alike.
 */
describe('knowledge bases through the agent', () => {
  let llm: FakeLlm;
  let h: TestHarness;
  let url: URL;

  beforeAll(async () => {
    llm = await startFakeLlm();
    h = await createHarness({ LLM_BASE_URL: llm.url, LLM_MODELS: 'fake-model=1000000/2000000' });
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = h.app.server.address();
    url = new URL(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/mcp`);
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
  });
  beforeEach(() => {
    llm.reset();
    llm.requests.length = 0;
  });

  const useAgent = async (token: string, args: Record<string, unknown>) => {
    const client = new Client({ name: 'mcp-knowledge-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    try {
      return (await client.callTool({ name: 'use-agent', arguments: args })) as CallToolResult;
    } finally {
      await client.close();
    }
  };
  const basesOf = async (u: TestUser) => {
    const def = (await call(h.app, 'GET', '/api/v1/knowledge/bases', { token: u.sessionToken })).json().data[0]
      .id as string;
    const other = (
      await call(h.app, 'POST', '/api/v1/knowledge/bases', { token: u.sessionToken, body: { name: 'Private' } })
    ).json().id as string;
    for (const [kb, slug, title, content] of [
      [def, 'anvils', 'Anvils', 'Acme sells anvils to coyotes.'],
      [other, 'salaries', 'Salaries', 'Secret anvils budget.'],
    ]) {
      await call(h.app, 'PUT', `/api/v1/knowledge/bases/${kb}/pages/${slug}`, {
        token: u.sessionToken,
        body: { title, content },
      });
    }
    return { def, other };
  };

  it('use-agent searches the default base and files a source, through the MCP SDK client', async () => {
    const u = await createUser(h.app);
    const { def } = await basesOf(u);
    const token = await u.pat(['universal-mcp-read', 'universal-mcp-read-write']);
    llm.enqueue(
      { toolCalls: [{ name: 'knowledge-search', arguments: { query: 'anvils' } }] },
      {
        toolCalls: [
          { name: 'knowledge-add-source', arguments: { name: 'call notes', text: 'Acme ships on Mondays.' } },
        ],
      },
      { content: 'Acme sells anvils; I filed your note.' },
    );
    const result = await useAgent(token, {
      prompt: 'What do we know about anvils? Also remember Acme ships on Mondays.',
    });
    expect(result.isError).toBeFalsy();
    expect((result.content[0] as { text: string }).text).toBe('Acme sells anvils; I filed your note.');
    // What the model was given back, inside the runtime's <tool_output> wrapper.
    const [search, add] = llm.requests.slice(1).map((r) => {
      const wrapped = r.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? '';
      return JSON.parse(/^<tool_output[^>]*>\n([\s\S]*)\n<\/tool_output>$/.exec(wrapped)?.[1] ?? 'null');
    });
    expect(search).toEqual({
      kbId: def,
      results: [{ slug: 'anvils', title: 'Anvils', snippet: 'Acme sells **anvils** to coyotes', tags: [] }],
    });
    const sources = await h.database.db.select().from(knowledgeSources).where(eq(knowledgeSources.kbId, def));
    expect(sources.map((s) => [s.name, s.rawContent, s.status, s.metadata])).toEqual([
      ['call notes', 'Acme ships on Mondays.', 'pending', { addedBy: 'agent' }],
    ]);
    expect(add).toEqual({ kbId: def, sourceId: sources[0]?.id, status: 'pending' });
  });

  it('a token limited to some bases is refused every other base, by read and write tools alike', async () => {
    const u = await createUser(h.app);
    const { def, other } = await basesOf(u);
    const limited: ServiceContext = {
      ...u.ctx,
      scopes: new Set(['universal-mcp-read-write']),
      actor: { ...u.ctx.actor, scopes: new Set(['universal-mcp-read-write']), allowedKnowledgeBaseIds: [other] },
    };
    const tools = new Map(knowledgeAgentTools(limited).map((t) => [t.name, t]));
    const run = (name: string, args: Record<string, unknown>) => {
      const tool = tools.get(name);
      if (!tool) throw new Error(`no tool ${name}`);
      return tool.run(args, new AbortController().signal);
    };
    expect(await run('knowledge-list-bases', {})).toEqual([
      { id: other, name: 'Private', description: '', isDefault: false },
    ]);
    // No base named: the first allowed one, not the default.
    expect(await run('knowledge-search', { query: 'anvils' })).toMatchObject({
      kbId: other,
      results: [{ slug: 'salaries' }],
    });
    const refused = `This token may not use knowledge base ${def}`;
    await expect(run('knowledge-search', { query: 'anvils', kbId: def })).rejects.toThrow(refused);
    await expect(run('knowledge-read-page', { slug: 'anvils', kbId: def })).rejects.toThrow(refused);
    await expect(run('knowledge-read-index', { kbId: def })).rejects.toThrow(refused);
    await expect(run('knowledge-add-source', { name: 'n', text: 'x', kbId: def })).rejects.toThrow(refused);
    expect(await h.database.db.select().from(knowledgeSources).where(eq(knowledgeSources.kbId, def))).toEqual([]);
    expect(await run('knowledge-read-page', { slug: 'Salaries', kbId: other })).toMatchObject({
      slug: 'salaries',
      content: 'Secret anvils budget.',
    });
    // Another account's base is not found, whatever the list says.
    const stranger = await createUser(h.app);
    const theirs = (await call(h.app, 'GET', '/api/v1/knowledge/bases', { token: stranger.sessionToken })).json()
      .data[0].id;
    await expect(run('knowledge-search', { query: 'x', kbId: theirs })).rejects.toThrow(
      `Knowledge base ${theirs} not found`,
    );
    // A token without a tool scope runs none of them.
    const noScope: ServiceContext = { ...limited, scopes: new Set(['llm-all']) };
    const [first] = knowledgeAgentTools(noScope);
    await expect(first?.run({}, new AbortController().signal)).rejects.toThrow('Missing required scope');
  });

  it('a PAT limited with knowledge_base_ids: enforced through MCP and the REST API alike', async () => {
    const u = await createUser(h.app);
    const { def, other } = await basesOf(u);
    const stranger = await createUser(h.app);
    const theirs = (await call(h.app, 'GET', '/api/v1/knowledge/bases', { token: stranger.sessionToken })).json()
      .data[0].id;
    const refused = await call(h.app, 'POST', '/api/v1/auth/pat', {
      token: u.sessionToken,
      body: { name: 'x', scopes: ['account'], knowledge_base_ids: [other, theirs, 'kb_nope'] },
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().message).toBe(`Unknown knowledge bases: ${theirs}, kb_nope`);

    const made = await call(h.app, 'POST', '/api/v1/auth/pat', {
      token: u.sessionToken,
      body: {
        name: 'limited',
        scopes: ['account', 'universal-mcp-read', 'universal-mcp-read-write'],
        knowledge_base_ids: [other],
      },
    });
    expect(made.statusCode, made.body).toBe(201);
    expect(made.json().knowledge_base_ids).toEqual([other]);
    const token = made.json().personal_access_token as string;

    // REST: only the allowed base is listed, the other is 403.
    const list = await call(h.app, 'GET', '/api/v1/knowledge/bases', { token });
    expect(list.json().data.map((b: { id: string }) => b.id)).toEqual([other]);
    const denied = await call(h.app, 'GET', `/api/v1/knowledge/bases/${def}/pages/search?q=anvils`, { token });
    expect(denied.statusCode).toBe(403);
    expect(denied.json().message).toBe(`This token may not use knowledge base ${def}`);

    // MCP: the agent's read and write tools are refused the other base; the model is told why.
    llm.enqueue(
      { toolCalls: [{ name: 'knowledge-search', arguments: { query: 'anvils', kbId: def } }] },
      { toolCalls: [{ name: 'knowledge-add-source', arguments: { name: 'n', text: 'secret', kbId: def } }] },
      { toolCalls: [{ name: 'knowledge-search', arguments: { query: 'anvils' } }] },
      { content: 'Only the Private base is open to me.' },
    );
    const result = await useAgent(token, { prompt: 'Search every base for anvils and file a note.' });
    expect((result.content[0] as { text: string }).text).toBe('Only the Private base is open to me.');
    const told = llm.requests.slice(1, 4).map((r) => r.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? '');
    expect(told[0]).toContain(`This token may not use knowledge base ${def}`);
    expect(told[1]).toContain(`This token may not use knowledge base ${def}`);
    expect(told[2]).toContain('"slug":"salaries"');
    expect(await h.database.db.select().from(knowledgeSources).where(eq(knowledgeSources.kbId, def))).toEqual([]);
  });
});
