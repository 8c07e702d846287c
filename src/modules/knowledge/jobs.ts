import { z } from 'zod';
import type { Deps } from '../../context.ts';
import type { KnowledgeSourceRow } from '../../db/schema/index.ts';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { enqueuerFor } from '../../jobs/queue.ts';
import { documentText } from '../../lib/documents.ts';
import { SafeFetchError, safeFetch } from '../../lib/safe-fetch.ts';
import { readableText } from '../../lib/web-page.ts';
import { CompileError, compileSource } from './compile.ts';
import { ingestIdleConversations } from './ingest.ts';
import { lintBase } from './lint.ts';
import * as repo from './repo.ts';
import { fileDocument } from './sources.service.ts';

/** Background work of the knowledge area. */
export const knowledgeJobs = {
  /** Captures idle agent conversations as sources where autoIngestConversations is on. */
  'knowledge.ingest-conversations': defineJob({
    payload: z.object({}),
    schedule: { cron: '*/5 * * * *' },
    retry: { maxAttempts: 1 },
    run: (deps) => ingestIdleConversations(deps),
  }),
  /** Compiles one source into pages; retried on upstream faults, never charged twice for what was written. */
  'knowledge.compile': defineJob({
    payload: z.object({ sourceId: z.string() }),
    retry: { maxAttempts: 4, baseDelayMs: 15_000 },
    run: (deps, { sourceId }, job) =>
      compileSource(deps, sourceId, job, (source) => sourceText(deps, source, job.signal)),
  }),
  /** Repairs links after a page was deleted (and whatever else lint repairs). */
  'knowledge.lint': defineJob({
    payload: z.object({ kbId: z.string() }),
    retry: { maxAttempts: 3, baseDelayMs: 5_000 },
    run: (deps, { kbId }) =>
      deps.database.db.transaction(async (tx) => {
        const kb = await repo.lockBase(tx, kbId);
        // The base was deleted since: nothing to do.
        if (!kb) return { skipped: 'base deleted' };
        const report = await lintBase(tx, kb);
        return { findings: report.findings.length, repaired: report.repaired };
      }),
  }),
} satisfies JobCatalog;

/** Queues a job of this area (inside the caller's transaction when given one). */
export const enqueueKnowledgeJob = enqueuerFor(knowledgeJobs);

/** The most of a web page read for a URL source. */
const URL_MAX_BYTES = 5 * 1024 * 1024;
const URL_TIMEOUT_MS = 20_000;

/**
 * The text a source holds: its own for a text source; a file's text (PDF, DOCX, CSV read); for a URL source, the page fetched through the
 * SSRF guard and its readable text extracted (HTML) or taken as it is (plain text, markdown), stored as the
 * source's `rawContent` so it can be read back. A refused or unreadable page fails the source; a network fault
 * is retried by the job.
 */
async function sourceText(deps: Deps, source: KnowledgeSourceRow, signal: AbortSignal): Promise<string> {
  if (source.type === 'file') {
    const { kind, bytes } = fileDocument(source.rawContent ?? '', source.name, source.metadata);
    try {
      return await documentText(bytes, kind, deps.config.documents);
    } catch (err) {
      throw new CompileError((err as Error).message);
    }
  }
  if (source.type !== 'url') return source.rawContent ?? '';
  let page: Awaited<ReturnType<typeof safeFetch>>;
  try {
    page = await safeFetch(source.url ?? '', {
      allowHosts: deps.config.ssrfAllowHosts,
      maxBytes: URL_MAX_BYTES,
      timeoutMs: URL_TIMEOUT_MS,
      signal,
      headers: { accept: 'text/html, text/plain, text/markdown;q=0.9, */*;q=0.1' },
    });
  } catch (err) {
    if (err instanceof SafeFetchError && (err.reason === 'network' || err.reason === 'timeout')) throw err;
    throw new CompileError(`The page could not be read: ${(err as Error).message}`);
  }
  if (page.status >= 400) throw new CompileError(`The page answered HTTP ${page.status}`);
  const type = (page.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const body = page.body.toString('utf8');
  let text: string;
  if (type === 'text/html' || type === 'application/xhtml+xml') text = (await readableText(body, page.url)).text;
  else if (type.startsWith('text/') || type === '') text = body;
  else throw new CompileError(`The page is ${type}, which is not readable as text`);
  if (!text.trim()) throw new CompileError('The page has no readable text');
  await repo.updateSource(deps.database.db, source.id, { rawContent: text });
  return text;
}
