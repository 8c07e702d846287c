import { z } from 'zod';
import type { App } from '../../http/types.ts';
import { paginated } from '../../lib/pagination.ts';
import * as bases from './bases.service.ts';
import * as pages from './pages.service.ts';
import {
  CreateKnowledgeBase,
  CreateSource,
  KbParams,
  KnowledgeBase,
  KnowledgeConfig,
  KnowledgeLog,
  KnowledgePage,
  KnowledgePageSummary,
  KnowledgeSource,
  LintReport,
  ListQuery,
  PageListQuery,
  PageParams,
  PageVersion,
  PutPage,
  SearchQuery,
  SearchResults,
  SourceListQuery,
  SourceParams,
  UpdateKnowledgeBase,
  UpdateKnowledgeConfig,
  VersionParams,
} from './schema.ts';
import * as sources from './sources.service.ts';

/**
 * SPEC §4 "Knowledge bases", scope `account`. `pages/index` and `pages/search` are static routes, so they
 * win over `pages/:slug` (and no slug is ever `index` or `search`).
 */
export async function knowledgeRoutes(app: App): Promise<void> {
  const tags = ['Knowledge bases'];
  const config = { scopes: ['account' as const] };
  const noContent = { 204: z.undefined() };

  app.get(
    '/knowledge/bases',
    {
      schema: {
        tags,
        summary: "List the account's knowledge bases (the default first; made if there is none)",
        querystring: ListQuery,
        response: { 200: paginated(KnowledgeBase) },
      },
      config,
    },
    (req) => bases.listKnowledgeBases(req.ctx, req.query),
  );
  app.post(
    '/knowledge/bases',
    {
      schema: {
        tags,
        summary: 'Create a knowledge base',
        description:
          "Names are unique per account, ignoring case (409 otherwise). An account's first base is its default.",
        body: CreateKnowledgeBase,
        response: { 201: KnowledgeBase },
      },
      config,
    },
    async (req, reply) => reply.code(201).send(await bases.createKnowledgeBase(req.ctx, req.body)),
  );
  app.get(
    '/knowledge/bases/:kbId',
    { schema: { tags, summary: 'Get a knowledge base', params: KbParams, response: { 200: KnowledgeBase } }, config },
    (req) => bases.getKnowledgeBase(req.ctx, req.params.kbId),
  );
  app.put(
    '/knowledge/bases/:kbId',
    {
      schema: {
        tags,
        summary: 'Update a knowledge base (any of its fields)',
        params: KbParams,
        body: UpdateKnowledgeBase,
        response: { 200: KnowledgeBase },
      },
      config,
    },
    (req) => bases.updateKnowledgeBase(req.ctx, req.params.kbId, req.body),
  );
  app.post(
    '/knowledge/bases/:kbId/set-default',
    {
      schema: {
        tags,
        summary: 'Make this base the default (the previous default stops being one, atomically)',
        params: KbParams,
        response: { 200: KnowledgeBase },
      },
      config,
    },
    (req) => bases.setDefaultKnowledgeBase(req.ctx, req.params.kbId),
  );
  app.delete(
    '/knowledge/bases/:kbId',
    {
      schema: {
        tags,
        summary: 'Delete a base with its pages, sources, versions and logs',
        description: 'The default base cannot be deleted (409): make another the default first.',
        params: KbParams,
        response: noContent,
      },
      config,
    },
    async (req, reply) => {
      await bases.deleteKnowledgeBase(req.ctx, req.params.kbId);
      return reply.code(204).send();
    },
  );
  app.post(
    '/knowledge/bases/:kbId/lint',
    {
      schema: {
        tags,
        summary: 'Run the health check now',
        description:
          'Broken links, orphans, stale pages, duplicates, pages to consolidate, index drift, the page limit and compiler changes held back by hand edits. Safe repairs (dead links unlinked in compiled pages, the index written again) are applied.',
        params: KbParams,
        response: { 200: LintReport },
      },
      config,
    },
    (req) => pages.lintKnowledgeBase(req.ctx, req.params.kbId),
  );
  app.get(
    '/knowledge/bases/:kbId/logs',
    {
      schema: {
        tags,
        summary: 'Compilation, edit and lint logs, newest first',
        params: KbParams,
        querystring: ListQuery,
        response: { 200: paginated(KnowledgeLog) },
      },
      config,
    },
    (req) => pages.listKnowledgeLogs(req.ctx, req.params.kbId, req.query),
  );

  // ---- Pages --------------------------------------------------------------------------------------------
  app.get(
    '/knowledge/bases/:kbId/pages',
    {
      schema: {
        tags,
        summary: 'List pages (by title), filtered by tag or page type',
        description: 'List items carry no content: get a page for it. The index is listed only with pageType=index.',
        params: KbParams,
        querystring: PageListQuery,
        response: { 200: paginated(KnowledgePageSummary) },
      },
      config,
    },
    (req) => pages.listKnowledgePages(req.ctx, req.params.kbId, req.query),
  );
  app.get(
    '/knowledge/bases/:kbId/pages/index',
    {
      schema: { tags, summary: 'The index page (_index)', params: KbParams, response: { 200: KnowledgePage } },
      config,
    },
    (req) => pages.getKnowledgePage(req.ctx, req.params.kbId, '_index'),
  );
  app.get(
    '/knowledge/bases/:kbId/pages/search',
    {
      schema: {
        tags,
        summary: 'Full-text search, ranked by relevance and lifted by backlinks',
        description:
          'Every word must match (web-search syntax: "quoted phrases", -excluded); when that finds fewer than 3 pages, pages with any of the words follow (`relaxed: true`). `content` is a snippet with the keywords marked **so**.',
        params: KbParams,
        querystring: SearchQuery,
        response: { 200: SearchResults },
      },
      config,
    },
    (req) => pages.searchKnowledgePages(req.ctx, req.params.kbId, req.query),
  );
  app.get(
    '/knowledge/bases/:kbId/pages/:slug',
    {
      schema: {
        tags,
        summary: 'Get a page with its backlinks, confidence and relationships',
        params: PageParams,
        response: { 200: KnowledgePage },
      },
      config,
    },
    (req) => pages.getKnowledgePage(req.ctx, req.params.kbId, req.params.slug),
  );
  app.put(
    '/knowledge/bases/:kbId/pages/:slug',
    {
      schema: {
        tags,
        summary: 'Edit a page by hand (or create it at a new slug)',
        description:
          'Sets lastCompiledBy to "user": the compiler never overwrites the page while a person wrote its latest version (its proposals are logged and raised by lint). A new slug needs title and content.',
        params: PageParams,
        body: PutPage,
        response: { 200: KnowledgePage },
      },
      config,
    },
    (req) => pages.putKnowledgePage(req.ctx, req.params.kbId, req.params.slug, req.body),
  );
  app.delete(
    '/knowledge/bases/:kbId/pages/:slug',
    {
      schema: {
        tags,
        summary: 'Delete a page; a lint job then repairs the links to it',
        params: PageParams,
        response: noContent,
      },
      config,
    },
    async (req, reply) => {
      await pages.deleteKnowledgePage(req.ctx, req.params.kbId, req.params.slug);
      return reply.code(204).send();
    },
  );
  app.get(
    '/knowledge/bases/:kbId/pages/:slug/versions',
    {
      schema: {
        tags,
        summary: "A page's versions, newest first",
        params: PageParams,
        querystring: ListQuery,
        response: { 200: paginated(PageVersion) },
      },
      config,
    },
    (req) => pages.listPageVersions(req.ctx, req.params.kbId, req.params.slug, req.query),
  );
  app.get(
    '/knowledge/bases/:kbId/pages/:slug/versions/:version',
    {
      schema: { tags, summary: 'One version of a page', params: VersionParams, response: { 200: PageVersion } },
      config,
    },
    (req) => pages.getPageVersion(req.ctx, req.params.kbId, req.params.slug, req.params.version),
  );

  // ---- Sources ------------------------------------------------------------------------------------------
  app.get(
    '/knowledge/bases/:kbId/sources',
    {
      schema: {
        tags,
        summary: 'List sources, newest first, filtered by type or status',
        params: KbParams,
        querystring: SourceListQuery,
        response: { 200: paginated(KnowledgeSource) },
      },
      config,
    },
    (req) => sources.listKnowledgeSources(req.ctx, req.params.kbId, req.query),
  );
  app.post(
    '/knowledge/bases/:kbId/sources',
    {
      schema: {
        tags,
        summary: 'Add a source; its compilation is queued',
        description:
          'Answers the source as `pending`; its status moves to processing, then compiled or failed (with `error`).',
        params: KbParams,
        body: CreateSource,
        response: { 201: KnowledgeSource },
      },
      config,
    },
    async (req, reply) => reply.code(201).send(await sources.createKnowledgeSource(req.ctx, req.params.kbId, req.body)),
  );
  app.get(
    '/knowledge/bases/:kbId/sources/:sourceId',
    { schema: { tags, summary: 'Get a source', params: SourceParams, response: { 200: KnowledgeSource } }, config },
    (req) => sources.getKnowledgeSource(req.ctx, req.params.kbId, req.params.sourceId),
  );
  app.put(
    '/knowledge/bases/:kbId/sources/:sourceId/reprocess',
    {
      schema: {
        tags,
        summary: 'Compile the source again',
        params: SourceParams,
        response: { 200: KnowledgeSource },
      },
      config,
    },
    (req) => sources.reprocessKnowledgeSource(req.ctx, req.params.kbId, req.params.sourceId),
  );
  app.delete(
    '/knowledge/bases/:kbId/sources/:sourceId',
    { schema: { tags, summary: 'Delete a source', params: SourceParams, response: noContent }, config },
    async (req, reply) => {
      await sources.deleteKnowledgeSource(req.ctx, req.params.kbId, req.params.sourceId);
      return reply.code(204).send();
    },
  );

  // ---- Config -------------------------------------------------------------------------------------------
  app.get(
    '/knowledge/config',
    {
      schema: { tags, summary: 'The knowledge settings (made on first read)', response: { 200: KnowledgeConfig } },
      config,
    },
    (req) => bases.getKnowledgeConfig(req.ctx),
  );
  app.put(
    '/knowledge/config',
    {
      schema: {
        tags,
        summary: 'Update the knowledge settings',
        description:
          '`enabled: false` pauses compilation (sources wait as pending); `autoIngestConversations` captures agent conversations after 30 minutes idle.',
        body: UpdateKnowledgeConfig,
        response: { 200: KnowledgeConfig },
      },
      config,
    },
    (req) => bases.updateKnowledgeConfig(req.ctx, req.body),
  );
}
