import type { AgentTool, AgentToolGroup } from '../../agent/tool-group.ts';
import { requireScope, type ServiceContext } from '../../context.ts';
import type { KnowledgeBaseRow } from '../../db/schema/index.ts';
import { BadRequestError, ForbiddenError, NotFoundError } from '../../lib/errors.ts';
import { argText } from '../../lib/text.ts';
import { ensureDefaultBase, KNOWLEDGE_SCOPES, mayUseBase, ownedBase } from './bases.service.ts';
import { INDEX_SLUG, slugify } from './links.ts';
import { BACKLINK_BOOST, searchBase } from './pages.service.ts';
import * as repo from './repo.ts';
import { MAX_SOURCE_CHARS } from './schema.ts';
import { addSource } from './sources.service.ts';

/**
 * The `knowledge-base` built-in tools: the agent (MCP's use-agent, and agents with the group enabled) searches
 * the caller's bases, reads pages and the index, and adds sources. A token limited to some bases
 * (`allowedKnowledgeBaseIds`) is refused every other base, by read and write tools alike.
 */

/** Who may run them: the REST scope of the knowledge API, MCP's tools/call, and agent chat. */
const TOOL_SCOPES = KNOWLEDGE_SCOPES;
const PAGE_CHARS = 12_000;

const kbIdParam = {
  type: 'string',
  description: 'Knowledge base id (kb_...); default: the default base (see knowledge-list-bases)',
};

/** The base a call names, or the caller's default (the first it may use when a token is limited). */
async function baseFor(ctx: ServiceContext, kbId: unknown): Promise<KnowledgeBaseRow> {
  if (typeof kbId === 'string' && kbId) return ownedBase(ctx, kbId, TOOL_SCOPES);
  requireScope(ctx, ...TOOL_SCOPES);
  const def = await ensureDefaultBase(ctx);
  if (mayUseBase(ctx, def.id)) return def;
  const first = ctx.actor.allowedKnowledgeBaseIds?.[0];
  if (!first) throw new ForbiddenError('This token may not use any knowledge base');
  return ownedBase(ctx, first, TOOL_SCOPES);
}

export function knowledgeAgentTools(ctx: ServiceContext): AgentTool[] {
  const source = 'knowledge-base';
  return [
    {
      name: 'knowledge-list-bases',
      description: "List the user's knowledge bases (wikis) this session may use.",
      parameters: { type: 'object', properties: {}, additionalProperties: false },
      mode: 'read',
      source,
      async run() {
        requireScope(ctx, ...TOOL_SCOPES);
        await ensureDefaultBase(ctx);
        const { rows } = await repo.listBases(ctx.db, ctx.accountId, { page: 1, limit: 100 });
        return rows
          .filter((r) => mayUseBase(ctx, r.id))
          .map((r) => ({ id: r.id, name: r.name, description: r.description, isDefault: r.isDefault }));
      },
    },
    {
      name: 'knowledge-search',
      description: "Search the user's knowledge base (a wiki) by keywords; answers pages with snippets.",
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string', description: 'Keywords' },
          kbId: kbIdParam,
          tags: { type: 'array', items: { type: 'string' }, description: 'Only pages with all these tags' },
        },
        required: ['query'],
        additionalProperties: false,
      },
      mode: 'read',
      source,
      async run(args) {
        const kb = await baseFor(ctx, args.kbId);
        const tags = Array.isArray(args.tags) ? args.tags.filter((t): t is string => typeof t === 'string') : [];
        const found = await searchBase(ctx.db, kb.id, {
          text: argText(args.query).slice(0, 500),
          tags,
          limit: 8,
          boost: BACKLINK_BOOST,
        });
        return {
          kbId: kb.id,
          results: found.data.map(({ slug, title, content, tags: t }) => ({ slug, title, snippet: content, tags: t })),
        };
      },
    },
    {
      name: 'knowledge-read-page',
      description: 'Read one page of the knowledge base by its slug (from search or the index), with its backlinks.',
      parameters: {
        type: 'object',
        properties: { slug: { type: 'string' }, kbId: kbIdParam },
        required: ['slug'],
        additionalProperties: false,
      },
      mode: 'read',
      source,
      async run(args) {
        const kb = await baseFor(ctx, args.kbId);
        const wanted = argText(args.slug);
        const slug = wanted === INDEX_SLUG ? wanted : slugify(wanted);
        const page = await repo.findPage(ctx.db, kb.id, slug);
        if (!page) throw new NotFoundError(`No page ${slug} in knowledge base ${kb.id}`);
        return {
          slug: page.slug,
          title: page.title,
          content: page.content.slice(0, PAGE_CHARS),
          tags: page.tags,
          relationships: page.relationships,
          backlinks: await repo.backlinksOf(ctx.db, kb.id, page.slug),
        };
      },
    },
    {
      name: 'knowledge-read-index',
      description: "Read the knowledge base's table of contents (every page by type).",
      parameters: { type: 'object', properties: { kbId: kbIdParam }, additionalProperties: false },
      mode: 'read',
      source,
      async run(args) {
        const kb = await baseFor(ctx, args.kbId);
        const index = await repo.findPage(ctx.db, kb.id, INDEX_SLUG);
        return { kbId: kb.id, content: (index?.content ?? `# ${kb.name}\n\nNo pages yet.\n`).slice(0, PAGE_CHARS) };
      },
    },
    {
      name: 'knowledge-add-source',
      description:
        'Add text to the knowledge base as a source; it is compiled into wiki pages in the background. Use it when the user asks to remember or file information.',
      parameters: {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'A short name for the source' },
          text: { type: 'string', description: 'The material to file' },
          kbId: kbIdParam,
        },
        required: ['name', 'text'],
        additionalProperties: false,
      },
      mode: 'write',
      source,
      async run(args) {
        const kb = await baseFor(ctx, args.kbId);
        const text = argText(args.text).slice(0, MAX_SOURCE_CHARS);
        if (!text.trim()) throw new BadRequestError('The source has no text');
        const added = await addSource(ctx.db, kb, {
          type: 'text',
          name: argText(args.name).slice(0, 300) || 'Agent note',
          rawContent: text,
          metadata: { addedBy: 'agent' },
        });
        return { kbId: kb.id, sourceId: added.id, status: added.status };
      },
    },
  ];
}

/** The `knowledge-base` group. */
export const knowledgeToolGroup: AgentToolGroup = { name: 'knowledge-base', tools: (ctx) => knowledgeAgentTools(ctx) };
