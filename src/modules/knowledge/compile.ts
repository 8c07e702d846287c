import { createHash } from 'node:crypto';
import { z } from 'zod';
import { type Deps, type ServiceContext, systemContext } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type {
  KnowledgeBaseRow,
  KnowledgePageRow,
  KnowledgeSourceRow,
  PageType,
  Relationship,
} from '../../db/schema/index.ts';
import { PAGE_TYPES, RELATIONSHIP_TYPES } from '../../db/values.ts';
import { JSON_DEPTH_MESSAGE, nestedDeeperThan } from '../../lib/json.ts';
import type { Logger } from '../../lib/logger.ts';
import type { ChatMessage } from '../../llm-upstreams/types.ts';
import { runCompletion } from '../llm/index.ts';
import { emitEvent } from '../webhooks/index.ts';
import { slugify } from './links.ts';
import { logEvent, regenerateIndex, writePage } from './pages.write.ts';
import * as repo from './repo.ts';

/**
 * The compiler (a `knowledge.compile` job per source; the base row lock makes it one source at a time per
 * base). Per source: skip it when its text is unchanged (hash); cut it into chunks; one extraction call per
 * chunk, shown a small catalogue of candidate pages found by search, never the whole wiki; names resolved to
 * pages without the model, by normalized keys and aliases; one merge call per existing page it touches
 * (capped); then, without the model, versions, links, backlinks, confidence, the index and a log entry, all in
 * one transaction. Malformed model output fails the source with nothing written.
 */

export const CHUNK_CHARS = 6_000;
export const MAX_CHUNKS = 20;
export const MAX_MERGES_PER_SOURCE = 12;
export const CANDIDATES_PER_CHUNK = 8;
const MODEL_TIMEOUT_MS = 120_000;

export class CompileError extends Error {}

const ExtractedPage = z.object({
  name: z.string().trim().min(1).max(200),
  pageType: z.enum(PAGE_TYPES).exclude(['index']).catch('concept'),
  aliases: z.array(z.string().trim().min(1).max(200)).max(20).default([]),
  summary: z.string().max(1000).default(''),
  facts: z.array(z.string().trim().min(1).max(2000)).max(50).default([]),
  tags: z.array(z.string().trim().min(1).max(50)).max(20).default([]),
  relationships: z
    .array(z.object({ target: z.string().trim().min(1).max(200), type: z.enum(RELATIONSHIP_TYPES) }))
    .max(30)
    .default([]),
});
type ExtractedPage = z.infer<typeof ExtractedPage>;
const Extraction = z.object({ pages: z.array(ExtractedPage).max(50) });
const Merge = z.object({
  content: z.string().min(1).max(200_000),
  summary: z.string().max(1000).optional(),
  tags: z.array(z.string().trim().min(1).max(50)).max(30).optional(),
});

/** Paragraph-aligned pieces of at most CHUNK_CHARS (a longer paragraph is cut hard). */
export function chunkText(text: string, size = CHUNK_CHARS): string[] {
  const chunks: string[] = [];
  let current = '';
  for (const para of text.split(/\n\s*\n/)) {
    const pieces = para.length > size ? (para.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g')) ?? []) : [para];
    for (const piece of pieces) {
      if (current && current.length + piece.length + 2 > size) {
        chunks.push(current);
        current = '';
      }
      current = current ? `${current}\n\n${piece}` : piece;
    }
  }
  if (current.trim()) chunks.push(current);
  return chunks;
}

/** The JSON object in a model's answer (bare, or in a ```json fence). */
export function parseModelJson(text: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text);
  const body = (fenced?.[1] ?? text).trim();
  const start = body.indexOf('{');
  const end = body.lastIndexOf('}');
  if (start < 0 || end < start) throw new CompileError('The model answered no JSON object');
  let value: unknown;
  try {
    value = JSON.parse(body.slice(start, end + 1));
  } catch {
    throw new CompileError('The model answered malformed JSON');
  }
  if (nestedDeeperThan(value))
    throw new CompileError(`The model answered JSON nested past the limit: ${JSON_DEPTH_MESSAGE}`);
  return value;
}

/** Words to look candidates up by: the chunk's most frequent longer words. */
function keywordsOf(chunk: string, n = 12): string {
  const counts = new Map<string, number>();
  for (const w of chunk.toLowerCase().match(/\p{L}[\p{L}\p{N}'-]{3,}/gu) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, n)
    .map(([w]) => w)
    .join(' ');
}

interface Candidate {
  slug: string;
  title: string;
  summary: string;
  aliases: string[];
}

async function candidatesFor(ctx: ServiceContext, kbId: string, chunk: string): Promise<Candidate[]> {
  const words = keywordsOf(chunk);
  if (!words) return [];
  const lexemes = await repo.queryLexemes(ctx.db, words, 12);
  if (lexemes.length === 0) return [];
  const found = await repo.searchPagesRelaxed(ctx.db, kbId, {
    lexemes,
    steps: [1],
    exclude: [],
    wanted: CANDIDATES_PER_CHUNK,
    tags: [],
    limit: CANDIDATES_PER_CHUNK,
    boost: 0,
  });
  const pages = await repo.findPagesBySlugs(
    ctx.db,
    kbId,
    found.map((f) => f.slug),
  );
  return pages.map((p) => ({ slug: p.slug, title: p.title, summary: p.summary, aliases: p.aliases }));
}

function extractionPrompt(kb: KnowledgeBaseRow, candidates: Candidate[]): string {
  return [
    'You compile source material into a wiki. From the text the user sends, extract the pages it informs:',
    'entities (people, organisations, products, places), concepts and summaries.',
    'Answer one JSON object only: {"pages": [{"name", "pageType" (entity|concept|summary|custom), "aliases" (other names',
    'the text uses for it), "summary" (one sentence), "facts" (short statements, each from the text), "tags",',
    `"relationships": [{"target" (another page's name), "type" (${RELATIONSHIP_TYPES.join('|')})}]}]}.`,
    'When a subject is one of the existing pages below, use that page\'s exact title as "name" and list the text\'s',
    'other names for it as aliases. Never invent facts.',
    kb.customInstructions ? `Instructions from the wiki's owner: ${kb.customInstructions}` : '',
    candidates.length > 0
      ? `Existing pages that may match:\n${candidates.map((c) => `- ${c.title} (aliases: ${c.aliases.join(', ') || 'none'}): ${c.summary}`).join('\n')}`
      : 'The wiki has no pages on these subjects yet.',
  ]
    .filter(Boolean)
    .join('\n');
}

function mergePrompt(kb: KnowledgeBaseRow): string {
  return [
    'You maintain one wiki page. Merge the new facts into the page: keep what it says unless a fact corrects it,',
    'keep its [[wikilinks]], link other pages as [[Page name]], write markdown.',
    'Answer one JSON object only: {"content": markdown, "summary": one sentence, "tags": [..]}.',
    kb.customInstructions ? `Instructions from the wiki's owner: ${kb.customInstructions}` : '',
  ]
    .filter(Boolean)
    .join('\n');
}

async function ask(ctx: ServiceContext, system: string, user: string, signal: AbortSignal): Promise<string> {
  const messages: ChatMessage[] = [
    { role: 'system', content: system },
    { role: 'user', content: user },
  ];
  const { completion } = await runCompletion(
    ctx,
    { model: ctx.deps.llm.catalog.defaultModel?.id ?? '', messages, temperature: 0, max_tokens: 4000 },
    {
      signal: AbortSignal.any([signal, AbortSignal.timeout(MODEL_TIMEOUT_MS)]),
      billing: { type: 'knowledge', description: 'Knowledge compilation' },
    },
  );
  return completion.choices[0]?.message.content ?? '';
}

/** One subject of this source after resolution: the page it lands on and what the source says of it. */
interface Subject {
  slug: string;
  existing: KnowledgePageRow | undefined;
  name: string;
  pageType: Exclude<PageType, 'index'>;
  aliases: Set<string>;
  summary: string;
  facts: string[];
  tags: Set<string>;
  relationships: { target: string; type: Relationship['type'] }[];
}

/**
 * Resolves every extracted name to one subject: a page whose slug or aliases hold one of the name's keys, else
 * another subject of this source sharing a key, else a new page at the name's key. No similarity merges.
 */
async function resolveSubjects(ctx: ServiceContext, kbId: string, extracted: ExtractedPage[]): Promise<Subject[]> {
  const subjects: Subject[] = [];
  const byKey = new Map<string, Subject>();
  for (const e of extracted) {
    const keys = [...new Set([e.name, ...e.aliases].map(slugify))];
    let subject = keys.map((k) => byKey.get(k)).find(Boolean);
    if (!subject) {
      const [bySlug] = await repo.findPagesBySlugs(ctx.db, kbId, keys);
      const existing =
        bySlug ?? (await repo.findPagesByAlias(ctx.db, kbId, keys)).sort((a, b) => a.slug.localeCompare(b.slug))[0];
      const slug = existing?.slug ?? slugify(e.name);
      subject = byKey.get(slug) ?? {
        slug,
        existing,
        name: existing?.title ?? e.name,
        pageType: (existing?.pageType === 'index' ? 'custom' : existing?.pageType) ?? e.pageType,
        aliases: new Set(existing?.aliases ?? []),
        summary: existing?.summary ?? '',
        facts: [],
        tags: new Set(existing?.tags ?? []),
        relationships: [],
      };
      if (!byKey.has(slug)) subjects.push(subject);
      byKey.set(slug, subject);
    }
    for (const k of keys) byKey.set(k, subject);
    for (const a of [e.name, ...e.aliases]) subject.aliases.add(slugify(a));
    if (!subject.summary && e.summary) subject.summary = e.summary;
    subject.facts.push(...e.facts);
    for (const t of e.tags) subject.tags.add(t.toLowerCase());
    subject.relationships.push(...e.relationships);
  }
  // Relationship targets resolve through the same keys where this source names them.
  for (const s of subjects) {
    s.relationships = s.relationships.map((r) => ({
      ...r,
      target: byKey.get(slugify(r.target))?.slug ?? slugify(r.target),
    }));
  }
  return subjects;
}

function newPageContent(s: Subject): string {
  const lines = [s.summary || s.name, ''];
  for (const f of s.facts) lines.push(`- ${f}`);
  const related = [...new Set(s.relationships.map((r) => r.target))].filter((t) => t !== s.slug);
  if (related.length > 0) lines.push('', `Related: ${related.map((t) => `[[${t}]]`).join(', ')}`);
  return `${lines.join('\n').trim()}\n`;
}

export interface CompileOutcome {
  status: 'compiled' | 'skipped' | 'failed' | 'disabled' | 'gone';
  modelCalls: number;
  created: string[];
  updated: string[];
  skipped: { slug: string; reason: string }[];
}

/** Compiles one source (the job's body). Never throws for a fault of the source: it fails the source instead. */
export async function compileSource(
  deps: Deps,
  sourceId: string,
  job: { signal: AbortSignal; log: Logger },
  text: (source: KnowledgeSourceRow) => Promise<string>,
): Promise<CompileOutcome> {
  const outcome: CompileOutcome = { status: 'compiled', modelCalls: 0, created: [], updated: [], skipped: [] };
  const db = deps.database.db;
  const source = await repo.findSourceById(db, sourceId);
  if (!source) return { ...outcome, status: 'gone' };
  const kb = await repo.findBase(db, source.accountId, source.kbId);
  if (!kb) return { ...outcome, status: 'gone' };
  const config = await repo.getOrCreateConfig(db, source.accountId);
  if (!config.enabled) {
    await logEvent(db, kb.id, 'compile', 'warn', `Source ${source.name} waits: knowledge compilation is turned off`, {
      sourceId,
    });
    return { ...outcome, status: 'disabled' };
  }
  await repo.updateSource(db, sourceId, { status: 'processing', error: null });
  const ctx = systemContext(deps, source.accountId, job.log, ['account']);
  try {
    const body = await text(source);
    const hash = createHash('sha256').update(kb.customInstructions).update('\u0000').update(body).digest('hex');
    if (hash === source.compiledHash) {
      await db.transaction(async (tx) => {
        await repo.updateSource(tx, sourceId, { status: 'compiled', compiledAt: new Date() });
        await logEvent(tx, kb.id, 'compile', 'info', `Source ${source.name} is unchanged: skipped`, { sourceId });
        await emitSourceEvent(tx, source, 'knowledge_source.compiled', { unchanged: true, created: [], updated: [] });
      });
      return { ...outcome, status: 'skipped' };
    }
    const chunks = chunkText(body).slice(0, MAX_CHUNKS);
    const extracted: ExtractedPage[] = [];
    for (const chunk of chunks) {
      const candidates = await candidatesFor(ctx, kb.id, chunk);
      const answer = await ask(ctx, extractionPrompt(kb, candidates), chunk, job.signal);
      outcome.modelCalls++;
      const parsed = Extraction.safeParse(parseModelJson(answer));
      if (!parsed.success)
        throw new CompileError(
          `The model's extraction did not fit the schema: ${parsed.error.issues[0]?.message ?? ''}`,
        );
      extracted.push(...parsed.data.pages);
    }
    const subjects = await resolveSubjects(ctx, kb.id, extracted);

    // Model calls first (merges), writes after: a failure leaves the wiki as it was.
    const merged = new Map<string, z.infer<typeof Merge>>();
    let merges = 0;
    for (const s of subjects) {
      if (!s.existing) continue;
      if (s.existing.lastCompiledBy === 'user') {
        outcome.skipped.push({ slug: s.slug, reason: 'user-edit' });
        continue;
      }
      if (merges >= MAX_MERGES_PER_SOURCE) {
        outcome.skipped.push({ slug: s.slug, reason: 'merge-cap' });
        continue;
      }
      merges++;
      const user = `Page "${s.existing.title}":\n${s.existing.content}\n\nNew facts:\n${s.facts.map((f) => `- ${f}`).join('\n')}`;
      const answer = await ask(ctx, mergePrompt(kb), user, job.signal);
      outcome.modelCalls++;
      const parsed = Merge.safeParse(parseModelJson(answer));
      if (!parsed.success) throw new CompileError(`The model's merge of ${s.slug} did not fit the schema`);
      merged.set(s.slug, parsed.data);
    }

    await db.transaction(async (tx) => {
      const locked = await repo.lockBase(tx, kb.id);
      if (!locked) throw new CompileError('The knowledge base was deleted');
      let pages = await repo.countPages(tx, kb.id);
      for (const s of subjects) {
        const current = await repo.findPage(tx, kb.id, s.slug);
        if (current?.lastCompiledBy === 'user') {
          if (!outcome.skipped.some((k) => k.slug === s.slug))
            outcome.skipped.push({ slug: s.slug, reason: 'user-edit' });
          continue;
        }
        if (!current && pages >= locked.maxPagesLimit) {
          outcome.skipped.push({ slug: s.slug, reason: 'page-limit' });
          continue;
        }
        const merge = merged.get(s.slug);
        if (current && !merge) continue; // over the merge cap
        const relationships = dedupeRelationships(
          s.relationships.map((r) => ({ targetSlug: r.target, type: r.type })),
          s.slug,
        );
        await writePage(tx, locked, {
          slug: s.slug,
          title: current?.title ?? s.name,
          content: merge?.content ?? newPageContent(s),
          summary: merge?.summary ?? s.summary,
          tags: merge?.tags ?? [...s.tags],
          aliases: [...s.aliases],
          pageType: s.pageType,
          relationships: dedupeRelationships([...(current?.relationships ?? []), ...relationships], s.slug),
          sourceIds: [...(current?.sourceIds ?? []), source.id],
          compiledBy: 'compiler',
          sourceId: source.id,
        });
        if (current) outcome.updated.push(s.slug);
        else {
          outcome.created.push(s.slug);
          pages++;
        }
      }
      await regenerateIndex(tx, locked);
      for (const k of outcome.skipped) {
        await logEvent(
          tx,
          kb.id,
          'compile',
          'warn',
          k.reason === 'user-edit'
            ? `Kept ${k.slug} as a person wrote it; the compiler's changes from ${source.name} were not applied`
            : k.reason === 'page-limit'
              ? `No page made for ${k.slug}: the base holds its limit of ${locked.maxPagesLimit} pages`
              : `Not merged into ${k.slug}: at most ${MAX_MERGES_PER_SOURCE} pages change per source`,
          { sourceId, slug: k.slug, skipped: k.reason },
        );
      }
      await logEvent(
        tx,
        kb.id,
        'compile',
        'info',
        `Compiled ${source.name}: ${outcome.created.length} new, ${outcome.updated.length} updated`,
        {
          sourceId,
          modelCalls: outcome.modelCalls,
          chunks: chunks.length,
          created: outcome.created,
          updated: outcome.updated,
        },
      );
      await repo.updateSource(tx, sourceId, {
        status: 'compiled',
        compiledHash: hash,
        compiledAt: new Date(),
        error: null,
      });
      await emitSourceEvent(tx, source, 'knowledge_source.compiled', {
        unchanged: false,
        created: outcome.created,
        updated: outcome.updated,
      });
    });
    return outcome;
  } catch (err) {
    if (!(err instanceof CompileError) && !isSourceFault(err)) {
      // A fault of ours or of the upstream: the job retries; the source says it is waiting.
      await repo.updateSource(db, sourceId, { status: 'pending', error: `Retrying: ${(err as Error).message}` });
      throw err;
    }
    const message = (err as Error).message;
    await db.transaction(async (tx) => {
      await repo.updateSource(tx, sourceId, { status: 'failed', error: message });
      await logEvent(tx, kb.id, 'compile', 'error', `Source ${source.name} failed: ${message}`, { sourceId });
      await emitSourceEvent(tx, source, 'knowledge_source.failed', { error: message });
    });
    return { ...outcome, status: 'failed' };
  }
}

/** Tells the account's webhooks a source compiled or failed, in the transaction that recorded it. */
function emitSourceEvent(
  tx: Executor,
  source: KnowledgeSourceRow,
  type: 'knowledge_source.compiled' | 'knowledge_source.failed',
  extra: Record<string, unknown>,
): Promise<number> {
  return emitEvent(tx, source.accountId, type, {
    sourceId: source.id,
    kbId: source.kbId,
    name: source.name,
    type: source.type,
    status: type === 'knowledge_source.compiled' ? 'compiled' : 'failed',
    ...extra,
  });
}

/** Faults no retry fixes: the owner is out of credits, or the request was refused as invalid. */
function isSourceFault(err: unknown): boolean {
  const status = (err as { statusCode?: number }).statusCode;
  return status === 402 || status === 422 || status === 400;
}

function dedupeRelationships(list: Relationship[], self: string): Relationship[] {
  const seen = new Set<string>();
  return list.filter((r) => {
    const key = `${r.targetSlug}|${r.type}`;
    if (r.targetSlug === self || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
