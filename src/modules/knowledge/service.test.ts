import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { and, eq, sql } from 'drizzle-orm';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dataUri,
  ELF_BYTES,
  makeBombDocx,
  makeBombPdf,
  makeCrowdedDocx,
  makeDocx,
  makePdf,
} from '../../../test/documents.ts';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { peakGrowth } from '../../../test/memory.ts';
import { rowsOf } from '../../db/rows.ts';
import { jobs, knowledgeLogs, knowledgePages } from '../../db/schema/index.ts';
import { ingestIdleConversations } from './ingest.ts';
import { knowledgeJobs } from './jobs.ts';
import * as repo from './repo.ts';
import { addSource } from './sources.service.ts';

const silent = pino({ level: 'silent' });
const API = '/api/v1/knowledge';

describe('knowledge bases', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  /** A web site on loopback for URL sources, reachable only because SSRF_ALLOW_HOSTS names it. */
  let site: Server;
  let siteUrl = '';

  beforeAll(async () => {
    llm = await startFakeLlm();
    site = createServer((req, res) => {
      if (req.url === '/article') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          `<html><head><title>Acme news</title><script>steal()</script></head><body><nav>Home | About</nav><article><h1>Anvils</h1><p>${'Acme Corp makes anvils in the desert. '.repeat(8)}</p></article></body></html>`,
        );
      } else res.writeHead(404).end('gone');
    });
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
    const port = (site.address() as AddressInfo).port;
    siteUrl = `http://127.0.0.1:${port}`;
    h = await createHarness({
      LLM_BASE_URL: llm.url,
      LLM_MODELS: 'fake-model=1000000/2000000',
      SSRF_ALLOW_HOSTS: `127.0.0.1:${port}`,
    });
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
    await new Promise<void>((r) => site?.close(() => r()));
  });

  const as = (u: TestUser) => ({ token: u.sessionToken });
  const defaultBase = async (u: TestUser): Promise<string> => {
    const res = await call(h.app, 'GET', `${API}/bases`, as(u));
    expect(res.statusCode, res.body).toBe(200);
    return (res.json().data as { id: string; isDefault: boolean }[]).find((b) => b.isDefault)?.id ?? '';
  };
  const put = (u: TestUser, kb: string, slug: string, body: unknown) =>
    call(h.app, 'PUT', `${API}/bases/${kb}/pages/${slug}`, { ...as(u), body });
  const get = async (u: TestUser, path: string) => {
    const res = await call(h.app, 'GET', `${API}${path}`, as(u));
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const jobContext = () => ({ jobId: 'job_test', attempt: 1, signal: new AbortController().signal, log: silent });
  const runJob = (type: 'knowledge.lint', payload: { kbId: string; sourceId: string }) =>
    knowledgeJobs[type].run(h.app.deps, { kbId: payload.kbId }, jobContext());
  const compile = (sourceId: string) => knowledgeJobs['knowledge.compile'].run(h.app.deps, { sourceId }, jobContext());

  describe('bases and config', () => {
    it('listing makes the default base once; the first base created elsewhere is the default', async () => {
      const u = await createUser(h.app);
      const [a, b] = await Promise.all([
        call(h.app, 'GET', `${API}/bases`, as(u)),
        call(h.app, 'GET', `${API}/bases`, as(u)),
      ]);
      expect(a.json().data).toEqual(b.json().data);
      expect(a.json()).toEqual({
        data: [
          {
            id: expect.stringMatching(/^kb_/),
            accountId: u.account.id,
            name: 'My knowledge',
            description: '',
            customInstructions: '',
            maxPagesLimit: 500,
            isDefault: true,
            createdAt: expect.any(String),
            updatedAt: expect.any(String),
          },
        ],
        pagination: { page: 1, limit: 20, total: 1, hasMore: false },
      });

      const fresh = await createUser(h.app);
      const first = await call(h.app, 'POST', `${API}/bases`, { ...as(fresh), body: { name: 'Research' } });
      expect(first.statusCode, first.body).toBe(201);
      expect(first.json()).toMatchObject({ name: 'Research', isDefault: true, maxPagesLimit: 500 });
      expect((await get(fresh, '/bases')).data).toHaveLength(1);
    });

    it('names are unique per account ignoring case; set-default moves it atomically; the default cannot be deleted', async () => {
      const u = await createUser(h.app);
      const def = await defaultBase(u);
      const made = await call(h.app, 'POST', `${API}/bases`, {
        ...as(u),
        body: { name: 'Team Wiki', description: 'ours', maxPagesLimit: 50, customInstructions: 'Be brief' },
      });
      expect(made.statusCode).toBe(201);
      const kb = made.json().id as string;
      expect(made.json()).toMatchObject({ isDefault: false, maxPagesLimit: 50, customInstructions: 'Be brief' });
      const dup = await call(h.app, 'POST', `${API}/bases`, { ...as(u), body: { name: 'team wiki' } });
      expect(dup.statusCode).toBe(409);
      expect(dup.json()).toEqual({
        error: 'ConflictError',
        message: 'A knowledge base named "team wiki" already exists',
        statusCode: 409,
      });
      // Another account may use the name.
      const other = await createUser(h.app);
      expect(
        (await call(h.app, 'POST', `${API}/bases`, { ...as(other), body: { name: 'Team Wiki' } })).statusCode,
      ).toBe(201);

      const refused = await call(h.app, 'DELETE', `${API}/bases/${def}`, as(u));
      expect(refused.statusCode).toBe(409);
      const moved = await call(h.app, 'POST', `${API}/bases/${kb}/set-default`, as(u));
      expect(moved.json()).toMatchObject({ id: kb, isDefault: true });
      const all = (await get(u, '/bases')).data as { id: string; isDefault: boolean }[];
      expect(all.filter((b) => b.isDefault).map((b) => b.id)).toEqual([kb]);

      const renamed = await call(h.app, 'PUT', `${API}/bases/${def}`, { ...as(u), body: { name: 'TEAM WIKI' } });
      expect(renamed.statusCode).toBe(409);
      const ok = await call(h.app, 'PUT', `${API}/bases/${def}`, { ...as(u), body: { name: 'Old', maxPagesLimit: 7 } });
      expect(ok.json()).toMatchObject({ name: 'Old', maxPagesLimit: 7, isDefault: false });

      // Deleting a base takes its pages, versions, links and logs along.
      expect((await put(u, def, 'note', { title: 'Note', content: 'Hello [[World]]' })).statusCode).toBe(200);
      expect((await call(h.app, 'DELETE', `${API}/bases/${def}`, as(u))).statusCode).toBe(204);
      expect(await h.database.db.select().from(knowledgePages).where(eq(knowledgePages.kbId, def))).toEqual([]);
      expect(await h.database.db.select().from(knowledgeLogs).where(eq(knowledgeLogs.kbId, def))).toEqual([]);
      expect((await call(h.app, 'GET', `${API}/bases/${def}`, as(u))).statusCode).toBe(404);
    });

    it('config is made on first read and updates partially', async () => {
      const u = await createUser(h.app);
      expect(await get(u, '/config')).toMatchObject({ enabled: true, autoIngestConversations: false });
      const res = await call(h.app, 'PUT', `${API}/config`, { ...as(u), body: { autoIngestConversations: true } });
      expect(res.json()).toMatchObject({ enabled: true, autoIngestConversations: true });
      const off = await call(h.app, 'PUT', `${API}/config`, { ...as(u), body: { enabled: false } });
      expect(off.json()).toMatchObject({ enabled: false, autoIngestConversations: true });
    });
  });

  describe('pages', () => {
    it('a hand edit makes versions, links and backlinks, the index, and is never a 500 for odd slugs', async () => {
      const u = await createUser(h.app);
      const kb = await defaultBase(u);
      const missing = await put(u, kb, 'ada', { tags: ['x'] });
      expect(missing.statusCode).toBe(422);
      expect(missing.json().details).toEqual([
        { field: 'body.title', message: 'required to create a page' },
        { field: 'body.content', message: 'required to create a page' },
      ]);

      const ada = await put(u, kb, 'ada-lovelace', {
        title: 'Ada Lovelace',
        content: 'Wrote the first program for the [[Analytical Engine]], with [[Charles Babbage|Babbage]].',
        tags: ['people', 'math'],
        pageType: 'entity',
      });
      expect(ada.statusCode, ada.body).toBe(200);
      expect(ada.json()).toMatchObject({
        slug: 'ada-lovelace',
        title: 'Ada Lovelace',
        pageType: 'entity',
        lastCompiledBy: 'user',
        version: 1,
        confidence: 'low',
        backlinks: [],
        tags: ['people', 'math'],
      });
      const engine = await put(u, kb, 'analytical-engine', {
        title: 'Analytical Engine',
        content: 'A machine designed by [[Charles Babbage]].',
        tags: ['machines'],
      });
      expect(engine.json()).toMatchObject({ backlinks: ['ada-lovelace'], backlinkCount: 1, pageType: 'custom' });
      const again = await put(u, kb, 'ada-lovelace', { content: 'Wrote notes on the engine.' });
      expect(again.json()).toMatchObject({ version: 2, title: 'Ada Lovelace', tags: ['people', 'math'] });
      expect((await get(u, `/bases/${kb}/pages/analytical-engine`)).backlinks).toEqual([]);

      const versions = await get(u, `/bases/${kb}/pages/ada-lovelace/versions`);
      expect(versions.data.map((v: { version: number; compiledBy: string }) => [v.version, v.compiledBy])).toEqual([
        [2, 'user'],
        [1, 'user'],
      ]);
      expect((await get(u, `/bases/${kb}/pages/ada-lovelace/versions/1`)).content).toContain('[[Analytical Engine]]');
      expect((await call(h.app, 'GET', `${API}/bases/${kb}/pages/ada-lovelace/versions/9`, as(u))).statusCode).toBe(
        404,
      );

      const index = await get(u, `/bases/${kb}/pages/index`);
      expect(index).toMatchObject({ slug: '_index', pageType: 'index', lastCompiledBy: 'compiler' });
      expect(index.content).toBe(
        '# My knowledge\n\n2 pages.\n\n## Entities\n\n- [[ada-lovelace|Ada Lovelace]]\n\n## Other pages\n\n- [[analytical-engine|Analytical Engine]]\n',
      );
      const list = await get(u, `/bases/${kb}/pages?tag=people`);
      expect(list.data.map((p: { slug: string }) => p.slug)).toEqual(['ada-lovelace']);
      expect(list.data[0]).not.toHaveProperty('content');
      expect((await get(u, `/bases/${kb}/pages?pageType=index`)).data.map((p: { slug: string }) => p.slug)).toEqual([
        '_index',
      ]);

      for (const slug of ['Ada', 'a_b', '%00', 'x%20y']) {
        const res = await call(h.app, 'GET', `${API}/bases/${kb}/pages/${slug}`, as(u));
        expect(res.statusCode, slug).toBe(422);
      }
      expect((await put(u, kb, '_index', { content: 'mine' })).statusCode).toBe(422);
      expect((await call(h.app, 'GET', `${API}/bases/${kb}/pages/nope`, as(u))).statusCode).toBe(404);
    });

    it('the page limit stops hand-made pages too', async () => {
      const u = await createUser(h.app);
      const kb = (
        await call(h.app, 'POST', `${API}/bases`, { ...as(u), body: { name: 'Tiny', maxPagesLimit: 1 } })
      ).json().id as string;
      expect((await put(u, kb, 'one', { title: 'One', content: '1' })).statusCode).toBe(200);
      const full = await put(u, kb, 'two', { title: 'Two', content: '2' });
      expect(full.statusCode).toBe(422);
      expect(full.json().message).toBe(`Knowledge base ${kb} holds its limit of 1 pages`);
      expect((await put(u, kb, 'one', { content: 'still editable' })).statusCode).toBe(200);
    });

    it('deleting a page queues lint, which unlinks it from compiled pages and reports hand-written ones', async () => {
      const u = await createUser(h.app);
      const kb = await defaultBase(u);
      const base = await repo.findBase(h.database.db, u.account.id, kb);
      if (!base) throw new Error('no base');
      const { writePage } = await import('./pages.write.ts');
      await h.database.db.transaction(async (tx) => {
        for (const [slug, content, by] of [
          ['gone', 'To be deleted.', 'compiler'],
          ['machine', 'Built with [[Gone]] and [[Gone|the old part]]; see [[Kept]].', 'compiler'],
          ['kept', 'Mentions [[gone]].', 'user'],
        ] as const) {
          await writePage(tx, base, {
            slug,
            title: slug,
            content,
            summary: '',
            tags: [],
            aliases: [],
            pageType: 'concept',
            relationships: slug === 'machine' ? [{ targetSlug: 'gone', type: 'depends_on' }] : [],
            sourceIds: [],
            compiledBy: by,
            sourceId: null,
          });
        }
      });
      expect((await get(u, `/bases/${kb}/pages/gone`)).backlinks).toEqual(['kept', 'machine']);
      expect((await call(h.app, 'DELETE', `${API}/bases/${kb}/pages/gone`, as(u))).statusCode).toBe(204);
      const queued = await h.database.db
        .select()
        .from(jobs)
        .where(and(eq(jobs.type, 'knowledge.lint'), eq(jobs.accountId, u.account.id)));
      expect(queued.map((j) => j.payload)).toEqual([{ kbId: kb }]);

      await runJob('knowledge.lint', { kbId: kb, sourceId: '' });
      const machine = await get(u, `/bases/${kb}/pages/machine`);
      expect(machine.content).toBe('Built with Gone and the old part; see [[Kept]].');
      expect(machine.relationships).toEqual([]);
      expect(machine.version).toBe(2);
      expect((await get(u, `/bases/${kb}/pages/kept`)).content).toBe('Mentions [[gone]].');

      const report = await call(h.app, 'POST', `${API}/bases/${kb}/lint`, as(u));
      expect(report.statusCode).toBe(200);
      const findings = report.json().findings as {
        rule: string;
        pages: string[];
        repaired: boolean;
        severity: string;
      }[];
      expect(findings.filter((f) => f.rule === 'broken-link')).toEqual([
        expect.objectContaining({ pages: ['kept', 'gone'], repaired: false, severity: 'warning' }),
      ]);
      expect(findings.find((f) => f.rule === 'orphan' && f.pages[0] === 'machine')).toBeDefined();
      const logs = await get(u, `/bases/${kb}/logs`);
      expect(logs.data[0]).toMatchObject({ kind: 'lint', level: 'warn' });
    });
  });

  describe('lint on a fixture wiki', () => {
    it('finds every rule: stale, duplicate, consolidate, orphan, index drift and the page limit', async () => {
      const u = await createUser(h.app);
      const kb = (
        await call(h.app, 'POST', `${API}/bases`, { ...as(u), body: { name: 'Fixture', maxPagesLimit: 4 } })
      ).json().id as string;
      const long = 'Lorem ipsum dolor sit amet. '.repeat(20);
      await put(u, kb, 'acme-corporation', { title: 'Acme Corporation', content: `${long} See [[Widget]].` });
      await put(u, kb, 'acme-corporations', { title: 'Acme Corporations', content: `${long} See [[Widget]].` });
      await put(u, kb, 'widget', { title: 'Widget', content: `${long} Made by [[Acme Corporation]].` });
      await put(u, kb, 'stub', { title: 'Stub', content: 'Too short.' });
      // An old page, and an index someone's bad write left behind.
      await h.database.db
        .update(knowledgePages)
        .set({ updatedAt: new Date(Date.now() - 100 * 86_400_000) })
        .where(and(eq(knowledgePages.kbId, kb), eq(knowledgePages.slug, 'widget')));
      await h.database.db
        .update(knowledgePages)
        .set({ content: 'stale index' })
        .where(and(eq(knowledgePages.kbId, kb), eq(knowledgePages.slug, '_index')));

      const res = await call(h.app, 'POST', `${API}/bases/${kb}/lint`, as(u));
      expect(res.statusCode).toBe(200);
      const findings = res.json().findings as { rule: string; pages: string[]; severity: string; repaired: boolean }[];
      const of = (rule: string) => findings.filter((f) => f.rule === rule).map((f) => f.pages);
      expect(of('stale')).toEqual([['widget']]);
      expect(of('duplicate')).toEqual([['acme-corporation', 'acme-corporations']]);
      expect(of('consolidate')).toEqual([['stub']]);
      expect(of('orphan')).toEqual([['acme-corporations'], ['stub']]);
      expect(of('index-drift')).toEqual([['_index']]);
      expect(of('page-limit')).toEqual([[]]);
      expect(of('broken-link')).toEqual([]);
      expect(res.json().repaired).toBe(1);
      expect((await get(u, `/bases/${kb}/pages/index`)).content).toContain('- [[widget|Widget]]');
      // Repaired: a second run finds no drift.
      const again = (await call(h.app, 'POST', `${API}/bases/${kb}/lint`, as(u))).json();
      expect(again.findings.map((f: { rule: string }) => f.rule)).not.toContain('index-drift');
      expect(again.repaired).toBe(0);
    });
  });

  describe('search', () => {
    it('ranks by relevance, lifts pages with backlinks, marks snippets, filters tags and relaxes all-words queries', async () => {
      const u = await createUser(h.app);
      const kb = await defaultBase(u);
      await put(u, kb, 'rust', {
        title: 'Rust',
        content: 'A systems programming language focused on memory safety.',
        tags: ['lang'],
      });
      await put(u, kb, 'go', {
        title: 'Go',
        content: 'A programming language with garbage collection from Google.',
        tags: ['lang'],
      });
      await put(u, kb, 'garbage', {
        title: 'Garbage collection',
        content: 'Automatic memory management; see [[Go]].',
        tags: ['memory'],
      });
      await put(u, kb, 'notes', { title: 'Notes', content: 'Nothing about it. [[Go]] again.' });

      const res = await get(u, `/bases/${kb}/pages/search?q=${encodeURIComponent('garbage collection')}`);
      expect(res.relaxed).toBe(false);
      expect(res.data.map((r: { slug: string }) => r.slug)).toEqual(['garbage', 'go']);
      expect(res.data[1].content).toContain('language with **garbage** **collection** from Google');
      expect(res.data[0]).toMatchObject({
        title: 'Garbage collection',
        pageType: 'custom',
        confidence: 'low',
        tags: ['memory'],
      });

      const tagged = await get(u, `/bases/${kb}/pages/search?q=language&tags=lang`);
      expect(tagged.data.map((r: { slug: string }) => r.slug).sort()).toEqual(['go', 'rust']);
      // Two equal matches: the one more pages link to comes first.
      expect(tagged.data[0].slug).toBe('go');

      const relaxed = await get(u, `/bases/${kb}/pages/search?q=${encodeURIComponent('memory google')}`);
      expect(relaxed.relaxed).toBe(true);
      expect(relaxed.data.map((r: { slug: string }) => r.slug).sort()).toEqual(['garbage', 'go', 'rust']);
      expect((await get(u, `/bases/${kb}/pages/search?q=zebra`)).data).toEqual([]);
      expect((await call(h.app, 'GET', `${API}/bases/${kb}/pages/search`, as(u))).statusCode).toBe(422);
    });

    it('relaxes step by step: pages with more of the words first whatever their rank, stopping once three are found', async () => {
      const u = await createUser(h.app);
      const kb = await defaultBase(u);
      const page = (slug: string, content: string) => put(u, kb, slug, { title: slug, content });
      await page('three', 'Walrus tundra glacier, nothing else.');
      await page('two', 'Walrus tundra.');
      // Would outrank "two" on "walrus" alone: the step that holds it, not its rank, places it.
      await page('one', 'Walrus walrus walrus walrus walrus.');
      await page('none', 'Penguins.');
      const q = async (text: string, tags = '') =>
        get(u, `/bases/${kb}/pages/search?q=${encodeURIComponent(text)}${tags}`);

      expect((await q('walrus')).data.map((r: { slug: string }) => r.slug)).toEqual(['one', 'two', 'three']);
      const stepped = await q('walrus tundra glacier aurora');
      expect(stepped.relaxed).toBe(true);
      expect(stepped.data.map((r: { slug: string }) => r.slug)).toEqual(['three', 'two', 'one']);
      expect(stepped.data[0].content).toContain('**Walrus** **tundra** **glacier**');

      // The strict hit leads; the relaxed steps add only pages it did not find.
      const strictFirst = await q('walrus tundra');
      expect(strictFirst.relaxed).toBe(true);
      expect(strictFirst.data.map((r: { slug: string }) => r.slug)).toEqual(['two', 'three', 'one']);

      // Three pages hold three of the four words: the two-word and one-word steps are not taken.
      await page('three-b', 'Walrus tundra aurora.');
      await page('three-c', 'Tundra glacier aurora.');
      const enough = await q('walrus tundra glacier aurora');
      expect(enough.relaxed).toBe(true);
      expect(enough.data.map((r: { slug: string }) => r.slug).sort()).toEqual(['three', 'three-b', 'three-c']);

      // A limit below three stops the relaxation as soon as that many are found.
      const limited = await q('walrus tundra glacier aurora', '&limit=1');
      expect(limited.data).toHaveLength(1);
      expect(['three', 'three-b', 'three-c']).toContain(limited.data[0].slug);
    });

    it('keeps the pending list of every GIN index a search reads at 128 kB (PGlite runs no vacuum to merge it)', async () => {
      const rows = rowsOf<{ relname: string; reloptions: string[] | null }>(
        await h.app.deps.database.db.execute(
          sql`SELECT relname, reloptions FROM pg_class WHERE relam = (SELECT oid FROM pg_am WHERE amname = 'gin') ORDER BY relname`,
        ),
      );
      expect(rows).toEqual(
        [
          'agent_memories_content_trgm_idx',
          'agent_memories_search_idx',
          'knowledge_pages_search_idx',
          'knowledge_pages_tags_idx',
          'knowledge_pages_title_trgm_idx',
        ].map((relname) => ({ relname, reloptions: ['gin_pending_list_limit=128'] })),
      );
    });
  });

  describe('compilation with a scripted model', () => {
    const extraction = (pages: unknown[]) => ({ content: JSON.stringify({ pages }) });

    it('"Acme Corp", "ACME Corporation" and "Acme" across three sources end as one page of high confidence', async () => {
      const u = await createUser(h.app);
      const kb = await defaultBase(u);
      const add = async (name: string, text: string) => {
        const res = await call(h.app, 'POST', `${API}/bases/${kb}/sources`, {
          ...as(u),
          body: { type: 'text', name, rawContent: text },
        });
        expect(res.statusCode, res.body).toBe(201);
        expect(res.json()).toMatchObject({ status: 'pending', type: 'text', name });
        return res.json().id as string;
      };
      const before = llm.requests.length;

      const s1 = await add('press release', 'Acme Corp makes anvils. Jane Roe founded Acme Corp in 1950.');
      llm.enqueue(
        extraction([
          {
            name: 'Acme Corp',
            pageType: 'entity',
            summary: 'A maker of anvils.',
            facts: ['Acme Corp makes anvils.'],
            tags: ['Company'],
            relationships: [],
          },
          {
            name: 'Jane Roe',
            pageType: 'entity',
            summary: 'Founder of Acme Corp.',
            facts: ['Founded Acme Corp in 1950.'],
            relationships: [{ target: 'Acme Corp', type: 'founded' }],
          },
        ]),
      );
      expect(await compile(s1)).toMatchObject({
        status: 'compiled',
        modelCalls: 1,
        created: ['acme-corp', 'jane-roe'],
      });

      await put(u, kb, 'zebra', { title: 'Zebra', content: 'A striped animal.' });
      const s2 = await add('annual report', 'ACME Corporation sells rockets too.');
      llm.enqueue(
        extraction([
          { name: 'ACME Corporation', aliases: ['Acme Corp'], pageType: 'entity', facts: ['Sells rockets.'] },
        ]),
        {
          content: JSON.stringify({
            content: 'A maker of anvils and rockets. Founded by [[Jane Roe]].',
            summary: 'Anvils and rockets.',
          }),
        },
      );
      expect(await compile(s2)).toMatchObject({
        status: 'compiled',
        modelCalls: 2,
        created: [],
        updated: ['acme-corp'],
      });
      // The extraction call was shown the existing page as a candidate, never the whole wiki.
      const shown = llm.requests.at(-2)?.messages[0]?.content ?? '';
      expect(shown).toContain('- Acme Corp (aliases: acme-corp): A maker of anvils.');
      expect(shown).not.toContain('Zebra');

      const s3 = await add('news', 'Acme announced a new anvil.');
      llm.enqueue(
        extraction([
          { name: 'Acme', aliases: ['ACME Corporation'], pageType: 'entity', facts: ['Announced a new anvil.'] },
        ]),
        { content: JSON.stringify({ content: 'Anvils, rockets, and a new anvil. Founded by [[Jane Roe]].' }) },
      );
      expect(await compile(s3)).toMatchObject({ status: 'compiled', modelCalls: 2, updated: ['acme-corp'] });
      expect(llm.requests.length - before).toBe(5);

      const page = await get(u, `/bases/${kb}/pages/acme-corp`);
      expect(page).toMatchObject({
        title: 'Acme Corp',
        confidence: 'high',
        sourceIds: [s1, s2, s3],
        version: 3,
        lastCompiledBy: 'compiler',
        backlinks: ['jane-roe'],
      });
      expect(page.aliases).toEqual(expect.arrayContaining(['acme-corp', 'acme-corporation', 'acme']));
      expect((await get(u, `/bases/${kb}/pages?pageType=entity`)).data.map((p: { slug: string }) => p.slug)).toEqual([
        'acme-corp',
        'jane-roe',
      ]);
      expect((await get(u, `/bases/${kb}/pages/jane-roe`)).relationships).toEqual([
        { targetSlug: 'acme-corp', type: 'founded' },
      ]);
      expect((await get(u, `/bases/${kb}/sources/${s3}`)).status).toBe('compiled');
      // Knowledge compilation is billed to the owner like any model call (charges are group-committed just after).
      await h.app.deps.background.drain();
      const ledger = await call(h.app, 'GET', '/api/v1/credit-transactions?limit=100', as(u));
      const charges = (ledger.json().data as { type: string; amount: number }[]).filter((t) => t.type === 'knowledge');
      expect(charges).toHaveLength(5);
      expect(charges.every((t) => t.amount < 0)).toBe(true);

      // An unchanged source is skipped by its hash; a hand edit is never overwritten, and the proposal is logged.
      await put(u, kb, 'acme-corp', { content: 'Written by a person.' });
      const again = await call(h.app, 'PUT', `${API}/bases/${kb}/sources/${s3}/reprocess`, as(u));
      expect(again.json()).toMatchObject({ status: 'pending' });
      llm.enqueue(extraction([{ name: 'Acme', aliases: ['Acme Corp'], facts: ['Changed.'] }]));
      expect(await compile(s3)).toMatchObject({
        status: 'compiled',
        modelCalls: 1,
        skipped: [{ slug: 'acme-corp', reason: 'user-edit' }],
      });
      expect((await get(u, `/bases/${kb}/pages/acme-corp`)).content).toBe('Written by a person.');
      const lint = await call(h.app, 'POST', `${API}/bases/${kb}/lint`, as(u));
      expect(lint.json().findings).toContainEqual(
        expect.objectContaining({ rule: 'user-edit-conflict', pages: ['acme-corp'] }),
      );
    });

    it('malformed model output fails the source with nothing written; the page limit holds', async () => {
      const u = await createUser(h.app);
      const kb = (
        await call(h.app, 'POST', `${API}/bases`, { ...as(u), body: { name: 'Small', maxPagesLimit: 1 } })
      ).json().id as string;
      const src = (
        await call(h.app, 'POST', `${API}/bases/${kb}/sources`, {
          ...as(u),
          body: { type: 'text', name: 'a', rawContent: 'Some text.' },
        })
      ).json().id as string;
      llm.enqueue({ content: 'Sure! Here are the pages: none.' });
      expect(await compile(src)).toMatchObject({ status: 'failed' });
      expect(await get(u, `/bases/${kb}/sources/${src}`)).toMatchObject({
        status: 'failed',
        error: 'The model answered no JSON object',
      });
      expect((await get(u, `/bases/${kb}/pages`)).data).toEqual([]);

      await call(h.app, 'PUT', `${API}/bases/${kb}/sources/${src}/reprocess`, as(u));
      llm.enqueue(extraction([{ name: 'First' }, { name: 'Second' }]));
      expect(await compile(src)).toMatchObject({
        status: 'compiled',
        created: ['first'],
        skipped: [{ slug: 'second', reason: 'page-limit' }],
      });
      const logs = (await get(u, `/bases/${kb}/logs`)).data as { message: string }[];
      expect(logs.map((l) => l.message)).toContain('No page made for second: the base holds its limit of 1 pages');
    });
  });

  describe('conversation capture (autoIngestConversations)', () => {
    it('captures an idle agent conversation once, again after new activity, and only when switched on', async () => {
      const u = await createUser(h.app);
      const kb = await defaultBase(u);
      const agent = (
        await call(h.app, 'POST', '/api/v1/agents', { ...as(u), body: { name: 'Scribe', enabledBuiltInTools: [] } })
      ).json().id as string;
      llm.enqueue({ content: 'Acme ships on Mondays, noted.' });
      const chat = await call(h.app, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
        ...as(u),
        body: { messages: [{ role: 'user', content: 'Remember: Acme ships on Mondays.' }] },
      });
      const conversationId = chat.headers['x-conversation-id'] as string;
      // The chat's messages are written with the next group-commit batch, after the answer.
      await h.app.deps.background.drain();
      const later = new Date(Date.now() + 31 * 60 * 1000);
      const conversationSources = async () =>
        (await get(u, `/bases/${kb}/sources?type=conversation`)).data as {
          id: string;
          name: string;
          rawContent: string;
          status: string;
        }[];

      // Off by default: nothing is captured.
      await ingestIdleConversations(h.app.deps, later);
      expect(await conversationSources()).toEqual([]);

      await call(h.app, 'PUT', `${API}/config`, { ...as(u), body: { autoIngestConversations: true } });
      // Not idle for 30 minutes yet.
      await ingestIdleConversations(h.app.deps, new Date(Date.now() + 5 * 60 * 1000));
      expect(await conversationSources()).toEqual([]);

      await ingestIdleConversations(h.app.deps, later);
      const [captured] = await conversationSources();
      expect(captured).toMatchObject({
        name: 'Conversation with Scribe: Remember: Acme ships on Mondays.',
        rawContent: 'User: Remember: Acme ships on Mondays.\n\nScribe: Acme ships on Mondays, noted.',
        status: 'pending',
      });
      await ingestIdleConversations(h.app.deps, later);
      expect(await conversationSources()).toHaveLength(1);

      // New activity: captured again into the same source.
      llm.enqueue({ content: 'And Fridays too.' });
      await call(h.app, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
        ...as(u),
        body: { messages: [{ role: 'user', content: 'Also Fridays.' }], conversationId },
      });
      await h.app.deps.background.drain();
      await ingestIdleConversations(h.app.deps, new Date(Date.now() + 31 * 60 * 1000));
      const again = await conversationSources();
      expect(again.map((s) => s.id)).toEqual([captured?.id]);
      expect(again[0]?.rawContent).toContain('User: Also Fridays.\n\nScribe: And Fridays too.');
      const queued = await h.database.db
        .select()
        .from(jobs)
        .where(and(eq(jobs.type, 'knowledge.compile'), eq(jobs.accountId, u.account.id)));
      expect(
        queued.filter((j) => (j.payload as { sourceId: string }).sourceId === captured?.id).length,
      ).toBeGreaterThanOrEqual(1);
    });
  });

  describe('file sources', () => {
    it('reads a PDF and a DOCX made here; a renamed executable is refused', async () => {
      const u = await createUser(h.app);
      const kb = await defaultBase(u);
      const add = (name: string, rawContent: string) =>
        call(h.app, 'POST', `${API}/bases/${kb}/sources`, { ...as(u), body: { type: 'file', name, rawContent } });
      for (const [name, bytes, mime, text] of [
        [
          'report.pdf',
          makePdf('Acme Corp makes anvils in Arizona'),
          'application/pdf',
          'Acme Corp makes anvils in Arizona',
        ],
        [
          'memo.docx',
          await makeDocx('Jane Roe founded Acme Corp'),
          'application/octet-stream',
          'Jane Roe founded Acme Corp',
        ],
      ] as const) {
        const res = await add(name, dataUri(mime, bytes));
        expect(res.statusCode, res.body).toBe(201);
        llm.enqueue({ content: JSON.stringify({ pages: [] }) });
        expect(await compile(res.json().id)).toMatchObject({ status: 'compiled', modelCalls: 1 });
        expect(llm.requests.at(-1)?.messages.at(-1)?.content?.trim()).toBe(text);
      }
      const exe = await add('report.pdf', dataUri('application/pdf', ELF_BYTES));
      expect(exe.statusCode).toBe(422);
      expect(exe.json().message).toBe('A file source must be a PDF, DOCX, CSV, TXT or MD document');
      // A file's text may also come as text.
      expect((await add('notes.md', '# Notes\nPlain text.')).statusCode).toBe(201);
    });

    it('refuses decompression bombs, crowded DOCX, long PDFs and CSVs with 413 naming the setting; memory stays flat', async () => {
      const u = await createUser(h.app);
      const kb = await defaultBase(u);
      const add = (name: string, bytes: Buffer) =>
        call(h.app, 'POST', `${API}/bases/${kb}/sources`, {
          ...as(u),
          body: { type: 'file', name, rawContent: dataUri('application/octet-stream', bytes) },
        });
      const tooBig = (message: string) => ({ error: 'PayloadTooLargeError', message, statusCode: 413 });
      const expands = tooBig('The DOCX expands to more than 52428800 bytes (DOCUMENT_MAX_EXPANDED_BYTES)');
      const pdfExpands = tooBig('The PDF expands to more than 52428800 bytes (DOCUMENT_MAX_EXPANDED_BYTES)');
      // 100 MB of text in about 150 KB; the liar's headers declare 1 KB for the same 100 MB; a PDF page of 100 MB.
      const bomb = await makeBombDocx(100 * 1024 * 1024);
      const liar = await makeBombDocx(100 * 1024 * 1024, 1024);
      const pdfBomb = await makeBombPdf(100 * 1024 * 1024);
      expect((await add('warm.docx', await makeDocx('warm'))).statusCode).toBe(201);

      const answers: { status: number; body: unknown }[] = [];
      const bombs = [bomb, liar, pdfBomb, liar];
      const growth = await peakGrowth(() =>
        Promise.all(
          bombs.map(async (bytes, i) => {
            const res = await add(bytes === pdfBomb ? 'bomb.pdf' : `bomb${i}.docx`, bytes);
            answers[i] = { status: res.statusCode, body: res.json() };
          }),
        ),
      );
      expect(growth.rss).toBeLessThan(100 * 1024 * 1024);
      expect(growth.external).toBeLessThan(100 * 1024 * 1024);
      expect(growth.arrayBuffers).toBeLessThan(100 * 1024 * 1024);
      expect(answers).toEqual([expands, expands, pdfExpands, expands].map((body) => ({ status: 413, body })));

      const refusals = [
        [
          'crowded.docx',
          await makeCrowdedDocx('x', 1001),
          'The DOCX holds more than 1000 files (DOCUMENT_MAX_ENTRIES)',
        ],
        ['long.pdf', makePdf('page', 501), 'The PDF has 501 pages, more than 500 (DOCUMENT_MAX_PDF_PAGES)'],
        [
          'rows.csv',
          Buffer.from('id,name\n'.concat('1,x\n'.repeat(100_000))),
          'The CSV has more than 100000 rows (DOCUMENT_MAX_CSV_ROWS)',
        ],
      ] as const;
      for (const [name, bytes, message] of refusals) {
        const res = await add(name, bytes);
        expect([res.statusCode, res.json()]).toEqual([413, tooBig(message)]);
      }
      // Nothing refused was stored: only the warm-up document is there.
      const sources = await get(u, `/bases/${kb}/sources`);
      expect(sources.data.map((s: { name: string }) => s.name)).toEqual(['warm.docx']);
    }, 120_000);

    it('a bomb stored before the bounds fails its compilation, naming the setting, without calling the model', async () => {
      const u = await createUser(h.app);
      const kb = await repo.findBase(h.database.db, u.account.id, await defaultBase(u));
      if (!kb) throw new Error('no default base');
      const source = await addSource(h.database.db, kb, {
        type: 'file',
        name: 'old.docx',
        rawContent: dataUri('application/octet-stream', await makeBombDocx(100 * 1024 * 1024)),
      });
      const calls = llm.requests.length;
      expect(await compile(source.id)).toMatchObject({ status: 'failed' });
      expect(await get(u, `/bases/${kb.id}/sources/${source.id}`)).toMatchObject({
        status: 'failed',
        error: 'The DOCX expands to more than 52428800 bytes (DOCUMENT_MAX_EXPANDED_BYTES)',
      });
      expect(llm.requests.length).toBe(calls);
    }, 120_000);
  });

  describe('URL sources', () => {
    it('reads the page through the SSRF guard and compiles its readable text; refused and missing pages fail', async () => {
      const u = await createUser(h.app);
      const kb = await defaultBase(u);
      const add = async (url: string) => {
        const res = await call(h.app, 'POST', `${API}/bases/${kb}/sources`, {
          ...as(u),
          body: { type: 'url', name: url, url },
        });
        expect(res.statusCode, res.body).toBe(201);
        return res.json().id as string;
      };
      const ok = await add(`${siteUrl}/article`);
      llm.enqueue({ content: JSON.stringify({ pages: [{ name: 'Acme Corp', facts: ['Makes anvils.'] }] }) });
      expect(await compile(ok)).toMatchObject({ status: 'compiled', created: ['acme-corp'] });
      const sent = llm.requests.at(-1)?.messages.at(-1)?.content ?? '';
      expect(sent).toContain('# Anvils');
      expect(sent).toContain('Acme Corp makes anvils in the desert.');
      expect(sent).not.toMatch(/steal|Home \| About/);
      expect((await get(u, `/bases/${kb}/sources/${ok}`)).rawContent).toBe(sent);

      const calls = llm.requests.length;
      for (const [url, error] of [
        [`${siteUrl}/missing`, 'The page answered HTTP 404'],
        [
          'http://169.254.169.254/latest/meta-data/',
          'The page could not be read: 169.254.169.254 is not a public address; to allow it on purpose, the operator adds 169.254.169.254:80 to SSRF_ALLOW_HOSTS',
        ],
        [
          'http://127.0.0.1:9/',
          'The page could not be read: 127.0.0.1 is not a public address; to allow it on purpose, the operator adds 127.0.0.1:9 to SSRF_ALLOW_HOSTS',
        ],
        [
          'http://[::ffff:7f00:1]/',
          'The page could not be read: ::ffff:7f00:1 is not a public address; to allow it on purpose, the operator adds [::ffff:7f00:1]:80 to SSRF_ALLOW_HOSTS',
        ],
      ] as const) {
        const id = await add(url);
        expect(await compile(id)).toMatchObject({ status: 'failed' });
        expect(await get(u, `/bases/${kb}/sources/${id}`)).toMatchObject({ status: 'failed', error });
      }
      expect(llm.requests.length).toBe(calls);
    });
  });

  guardTests(
    () => h,
    [
      { method: 'GET', url: `${API}/bases`, scopes: ['account'] },
      { method: 'POST', url: `${API}/bases`, scopes: ['account'], body: { name: 'Guarded' } },
      { method: 'GET', url: `${API}/config`, scopes: ['account'] },
      { method: 'PUT', url: `${API}/config`, scopes: ['account'], body: { enabled: true } },
      ...(
        [
          ['GET', ''],
          ['PUT', '', { description: 'x' }],
          ['POST', '/lint'],
          ['GET', '/logs'],
          ['GET', '/pages'],
          ['GET', '/pages/index'],
          ['GET', '/pages/search?q=x'],
          ['GET', '/pages/p1'],
          ['PUT', '/pages/p1', { content: 'x' }],
          ['GET', '/pages/p1/versions'],
          ['GET', '/pages/p1/versions/1'],
          ['GET', '/sources'],
          ['POST', '/sources', { type: 'text', name: 'n', rawContent: 'x' }],
        ] as const
      ).map(([method, path, body]) => ({
        method,
        url: `${API}/bases/kb_x${path}`,
        scopes: ['account' as const],
        ...(body ? { body } : {}),
        ownedUrl: async (owner: TestUser) => {
          const res = await call(h.app, 'POST', `${API}/bases`, {
            token: owner.sessionToken,
            body: { name: `guard ${Math.random()}` },
          });
          const kb = res.json().id as string;
          await call(h.app, 'PUT', `${API}/bases/${kb}/pages/p1`, {
            token: owner.sessionToken,
            body: { title: 'P1', content: 'x' },
          });
          return `${API}/bases/${kb}${path}`;
        },
      })),
    ],
  );
});
