import type { ServiceContext } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { KnowledgeBaseRow, KnowledgeSourceRow, SourceType } from '../../db/schema/index.ts';
import { type DocumentKind, dataUriBytes, sniffDocument, uploadedDocumentText } from '../../lib/documents.ts';
import { ConflictError, NotFoundError, ValidationError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import { ownedBase } from './bases.service.ts';
import { enqueueKnowledgeJob } from './jobs.ts';
import * as repo from './repo.ts';
import type { CreateSource, KnowledgeSource, SourceListQuery } from './schema.ts';

/** Sources of a base (SPEC §4): creating one, or reprocessing it, queues its compilation. */

export function toKnowledgeSource(row: KnowledgeSourceRow): KnowledgeSource {
  return {
    id: row.id,
    kbId: row.kbId,
    type: row.type,
    name: row.name,
    rawContent: row.rawContent,
    url: row.url,
    metadata: row.metadata,
    status: row.status,
    error: row.error,
    compiledAt: row.compiledAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export async function listKnowledgeSources(
  ctx: ServiceContext,
  kbId: string,
  q: SourceListQuery,
): Promise<Page<KnowledgeSource>> {
  await ownedBase(ctx, kbId);
  const { rows, total } = await repo.listSources(ctx.db, kbId, q);
  return toPage(rows.map(toKnowledgeSource), total, q);
}

async function ownedSource(ctx: ServiceContext, kbId: string, sourceId: string): Promise<KnowledgeSourceRow> {
  await ownedBase(ctx, kbId);
  const row = await repo.findSource(ctx.db, kbId, sourceId);
  if (!row) throw new NotFoundError(`Source ${sourceId} not found in knowledge base ${kbId}`);
  return row;
}

export async function getKnowledgeSource(
  ctx: ServiceContext,
  kbId: string,
  sourceId: string,
): Promise<KnowledgeSource> {
  return toKnowledgeSource(await ownedSource(ctx, kbId, sourceId));
}

/**
 * Stores the source as `pending` and queues its compilation in the same transaction: nothing is lost. A file's
 * text is read once here, within the document bounds, so a document past one (or unreadable) is refused now
 * rather than failing later in the job (which reads it again, within the same bounds).
 */
export async function createKnowledgeSource(
  ctx: ServiceContext,
  kbId: string,
  input: CreateSource,
): Promise<KnowledgeSource> {
  const kb = await ownedBase(ctx, kbId);
  if (input.type === 'file') {
    const { kind, bytes } = fileDocument(input.rawContent ?? '', input.name, input.metadata);
    await uploadedDocumentText(bytes, kind, ctx.deps.config.documents, 'body.rawContent');
  }
  return toKnowledgeSource(await addSource(ctx.db, kb, input));
}

/** Inserts a source of `kb` as pending and queues its compilation, in one transaction. */
export async function addSource(
  db: Executor,
  kb: KnowledgeBaseRow,
  input: Omit<CreateSource, 'type'> & { type: SourceType },
): Promise<KnowledgeSourceRow> {
  return db.transaction(async (tx) => {
    const source = await repo.insertSource(tx, {
      id: newId('knowledgeSource'),
      kbId: kb.id,
      accountId: kb.accountId,
      type: input.type,
      name: input.name,
      rawContent: input.type === 'url' ? null : (input.rawContent ?? null),
      url: input.type === 'url' ? (input.url ?? null) : null,
      metadata: input.metadata ?? {},
      status: 'pending',
    });
    await enqueueCompile(tx, source);
    return source;
  });
}

export async function enqueueCompile(tx: Executor, source: KnowledgeSourceRow): Promise<void> {
  await enqueueKnowledgeJob(
    tx,
    'knowledge.compile',
    { sourceId: source.id },
    { dedupeKey: `knowledge.compile:${source.id}`, accountId: source.accountId },
  );
}

/** Queues the source's compilation again (SPEC §4 reprocess); an unchanged text is still skipped by its hash unless forced. */
export async function reprocessKnowledgeSource(
  ctx: ServiceContext,
  kbId: string,
  sourceId: string,
): Promise<KnowledgeSource> {
  const current = await ownedSource(ctx, kbId, sourceId);
  if (current.status === 'processing') throw new ConflictError(`Source ${sourceId} is being compiled now`);
  const row = await ctx.db.transaction(async (tx) => {
    const updated = await repo.updateSource(tx, sourceId, { status: 'pending', error: null, compiledHash: null });
    if (!updated) throw new NotFoundError(`Source ${sourceId} not found in knowledge base ${kbId}`);
    await enqueueCompile(tx, updated);
    return updated;
  });
  return toKnowledgeSource(row);
}

/** Deletes the source; the pages it fed keep what was compiled from it (their history says where it came from). */
export async function deleteKnowledgeSource(ctx: ServiceContext, kbId: string, sourceId: string): Promise<void> {
  await ownedBase(ctx, kbId);
  if (!(await repo.deleteSource(ctx.db, kbId, sourceId))) {
    throw new NotFoundError(`Source ${sourceId} not found in knowledge base ${kbId}`);
  }
}

const READABLE: readonly DocumentKind[] = ['pdf', 'docx', 'csv', 'txt', 'md'];

/**
 * A file source's document: `rawContent` is the file's text, or the file itself as a base64 `data:` URI (a PDF,
 * DOCX, CSV, TXT or MD file, told apart by its bytes; `metadata.filename` or the name tells markdown and CSV
 * from plain text). Anything else is a 422 naming what is accepted.
 */
export function fileDocument(
  rawContent: string,
  name: string,
  metadata: Record<string, unknown> | undefined,
): { kind: DocumentKind; bytes: Buffer } {
  const bytes = dataUriBytes(rawContent) ?? Buffer.from(rawContent, 'utf8');
  const filename = typeof metadata?.filename === 'string' ? metadata.filename : name;
  const kind = sniffDocument(bytes, filename);
  if (!kind || !READABLE.includes(kind)) {
    throw new ValidationError('A file source must be a PDF, DOCX, CSV, TXT or MD document', [
      {
        field: 'body.rawContent',
        message: 'the text of the file, or the file as a base64 data: URI of a PDF, DOCX, CSV, TXT or MD document',
      },
    ]);
  }
  return { kind, bytes };
}
