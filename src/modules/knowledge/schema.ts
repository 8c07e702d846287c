import { z } from 'zod';
import { PAGE_TYPES, RELATIONSHIP_TYPES, SOURCE_STATUSES, SOURCE_TYPES } from '../../db/values.ts';
import { pageQuery, Timestamp } from '../../lib/pagination.ts';
import { isSlug } from './links.ts';

/** The largest page of a knowledge list (SPEC §8 leaves it open). */
export const KNOWLEDGE_MAX_LIMIT = 100;
export const MAX_SOURCE_CHARS = 2_000_000;
export const MAX_PAGE_CHARS = 200_000;

const Tag = z.string().trim().min(1).max(50);

export const KbParams = z.object({ kbId: z.string().min(1).max(100) });
export const PageParams = KbParams.extend({
  slug: z.string().max(200).refine(isSlug, 'slug must be lower-case letters and digits joined by dashes (or _index)'),
});
export const VersionParams = PageParams.extend({ version: z.coerce.number().int().min(1).max(1_000_000) });
export const SourceParams = KbParams.extend({ sourceId: z.string().min(1).max(100) });

export const KnowledgeBase = z
  .object({
    id: z.string().meta({ examples: ['kb_Xq3v9dH2TQm0bq1yWzY8cA'] }),
    accountId: z.string(),
    name: z.string(),
    description: z.string(),
    customInstructions: z.string(),
    maxPagesLimit: z.number().int(),
    isDefault: z.boolean(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'KnowledgeBase' });
export type KnowledgeBase = z.infer<typeof KnowledgeBase>;

const baseFields = {
  name: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .meta({ examples: ['Company wiki'] }),
  description: z
    .string()
    .trim()
    .max(2000)
    .meta({ examples: ['Everything we know about our customers and partners.'] }),
  customInstructions: z
    .string()
    .max(10_000)
    .describe('instructions for the compiling model')
    .meta({ examples: ['Keep one page per company; note the contract renewal date when a source gives it.'] }),
  maxPagesLimit: z.number().int().min(1).max(100_000),
};
export const CreateKnowledgeBase = z
  .object({
    name: baseFields.name,
    description: baseFields.description.default(''),
    customInstructions: baseFields.customInstructions.default(''),
    maxPagesLimit: baseFields.maxPagesLimit.default(500),
  })
  .strict();
export type CreateKnowledgeBase = z.infer<typeof CreateKnowledgeBase>;
export const UpdateKnowledgeBase = z
  .object({
    name: baseFields.name.optional(),
    description: baseFields.description.optional(),
    customInstructions: baseFields.customInstructions.optional(),
    maxPagesLimit: baseFields.maxPagesLimit.optional(),
  })
  .strict();
export type UpdateKnowledgeBase = z.infer<typeof UpdateKnowledgeBase>;

export const KnowledgeConfig = z
  .object({ enabled: z.boolean(), autoIngestConversations: z.boolean(), updatedAt: Timestamp })
  .meta({ id: 'KnowledgeConfig' });
export type KnowledgeConfig = z.infer<typeof KnowledgeConfig>;
export const UpdateKnowledgeConfig = z
  .object({ enabled: z.boolean().optional(), autoIngestConversations: z.boolean().optional() })
  .strict();
export type UpdateKnowledgeConfig = z.infer<typeof UpdateKnowledgeConfig>;

export const Confidence = z.enum(['low', 'medium', 'high']);
export const Relationship = z.object({
  targetSlug: z.string().max(200),
  type: z.enum(RELATIONSHIP_TYPES),
});

/** A page in a list: everything but its content and links (GET one page for those). */
export const KnowledgePageSummary = z
  .object({
    slug: z.string().meta({ examples: ['acme-corp'] }),
    title: z.string().meta({ examples: ['Acme Corp'] }),
    summary: z.string(),
    tags: z.array(z.string()),
    pageType: z.enum(PAGE_TYPES),
    confidence: Confidence,
    lastCompiledBy: z.enum(['compiler', 'user']),
    backlinkCount: z.number().int(),
    version: z.number().int(),
    updatedAt: Timestamp,
  })
  .meta({ id: 'KnowledgePageSummary' });
export type KnowledgePageSummary = z.infer<typeof KnowledgePageSummary>;

export const KnowledgePage = KnowledgePageSummary.extend({
  content: z.string().describe('markdown; [[Other page]] links to another page'),
  aliases: z.array(z.string()),
  relationships: z.array(Relationship),
  backlinks: z.array(z.string()).describe('slugs of the pages that link here'),
  sourceIds: z.array(z.string()),
  createdAt: Timestamp,
}).meta({ id: 'KnowledgePage' });
export type KnowledgePage = z.infer<typeof KnowledgePage>;

export const PageListQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  limit: z.coerce.number().int().min(1).max(KNOWLEDGE_MAX_LIMIT).default(20),
  tag: Tag.optional(),
  pageType: z.enum(PAGE_TYPES).optional(),
});
export type PageListQuery = z.infer<typeof PageListQuery>;

export const PutPage = z
  .object({
    title: z
      .string()
      .trim()
      .min(1)
      .max(300)
      .optional()
      .meta({ examples: ['Acme Corp'] }),
    content: z
      .string()
      .max(MAX_PAGE_CHARS)
      .optional()
      .meta({ examples: ['# Acme Corp\n\nAcme is a customer since 2021. Its contact is [[Jane Doe]].'] }),
    tags: z
      .array(Tag)
      .max(50)
      .optional()
      .meta({ examples: ['customer', 'manufacturing'] }),
    pageType: z.enum(['entity', 'concept', 'summary', 'custom']).optional().describe('for a new page; default custom'),
  })
  .strict();
export type PutPage = z.infer<typeof PutPage>;

export const SearchQuery = z.object({
  q: z.string().trim().min(1).max(500),
  tags: z.string().max(1000).optional().describe('comma-separated: results carry every one of these tags'),
  limit: z.coerce.number().int().min(1).max(50).default(10),
});
export type SearchQuery = z.infer<typeof SearchQuery>;

export const SearchResult = z
  .object({
    slug: z.string(),
    title: z.string(),
    content: z.string().describe('a snippet with the keywords in context, marked **like this**'),
    tags: z.array(z.string()),
    pageType: z.enum(PAGE_TYPES),
    confidence: Confidence,
    score: z.number(),
    updatedAt: Timestamp,
  })
  .meta({ id: 'KnowledgeSearchResult' });
export type SearchResult = z.infer<typeof SearchResult>;
export const SearchResults = z.object({
  data: z.array(SearchResult),
  relaxed: z.boolean().describe('true when too few pages held every word and any word was enough'),
});

export const PageVersion = z
  .object({
    version: z.number().int(),
    title: z.string(),
    content: z.string(),
    tags: z.array(z.string()),
    compiledBy: z.enum(['compiler', 'user']),
    sourceId: z.string().nullable(),
    createdAt: Timestamp,
  })
  .meta({ id: 'KnowledgePageVersion' });
export type PageVersion = z.infer<typeof PageVersion>;

export const ListQuery = pageQuery(KNOWLEDGE_MAX_LIMIT);

export const KnowledgeSource = z
  .object({
    id: z.string().meta({ examples: ['ksrc_4dQmX0r2S7ezS1vN0Qk2eA'] }),
    kbId: z.string(),
    type: z.enum(SOURCE_TYPES),
    name: z.string(),
    rawContent: z.string().nullable(),
    url: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    status: z.enum(SOURCE_STATUSES),
    error: z.string().nullable(),
    compiledAt: Timestamp.nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'KnowledgeSource' });
export type KnowledgeSource = z.infer<typeof KnowledgeSource>;

export const SourceListQuery = ListQuery.extend({
  type: z.enum(SOURCE_TYPES).optional(),
  status: z.enum(SOURCE_STATUSES).optional(),
});
export type SourceListQuery = z.infer<typeof SourceListQuery>;

export const CreateSource = z
  .object({
    type: z.enum(['text', 'url', 'file']),
    name: z
      .string()
      .trim()
      .min(1)
      .max(300)
      .meta({ examples: ['Q3 call notes'] }),
    rawContent: z
      .string()
      .max(MAX_SOURCE_CHARS)
      .optional()
      .describe(
        'required for text and file; a file is its text or a base64 data: URI of a PDF, DOCX, CSV, TXT or MD document, refused with 413 past a DOCUMENT_MAX_* bound',
      )
      .meta({ examples: ['Call with Jane Doe of Acme Corp on 2026-09-14: they renew in March and want SSO.'] }),
    url: z
      .string()
      .max(2000)
      .optional()
      .describe('required for url: http(s)')
      .meta({ examples: ['https://acme.example/about'] }),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .strict()
  .superRefine((v, ctx) => {
    if ((v.type === 'text' || v.type === 'file') && !v.rawContent?.trim()) {
      ctx.addIssue({ code: 'custom', path: ['rawContent'], message: `rawContent is required for a ${v.type} source` });
    }
    if (v.type === 'url') {
      let ok = false;
      try {
        const u = new URL(v.url ?? '');
        ok = u.protocol === 'http:' || u.protocol === 'https:';
      } catch {}
      if (!ok) ctx.addIssue({ code: 'custom', path: ['url'], message: 'url must be an http(s) URL for a url source' });
    }
  });
export type CreateSource = z.infer<typeof CreateSource>;

export const KnowledgeLog = z
  .object({
    id: z.string(),
    kind: z.enum(['compile', 'lint', 'edit']),
    level: z.enum(['info', 'warn', 'error']),
    message: z.string(),
    details: z.record(z.string(), z.unknown()),
    createdAt: Timestamp,
  })
  .meta({ id: 'KnowledgeLog' });
export type KnowledgeLog = z.infer<typeof KnowledgeLog>;

export const LintFinding = z
  .object({
    rule: z.enum([
      'broken-link',
      'orphan',
      'stale',
      'duplicate',
      'consolidate',
      'index-drift',
      'page-limit',
      'user-edit-conflict',
    ]),
    severity: z.enum(['info', 'warning', 'error']),
    message: z.string(),
    pages: z.array(z.string()),
    repaired: z.boolean(),
  })
  .meta({ id: 'KnowledgeLintFinding' });
export type LintFinding = z.infer<typeof LintFinding>;
export const LintReport = z.object({ findings: z.array(LintFinding), repaired: z.number().int() });
export type LintReport = z.infer<typeof LintReport>;
