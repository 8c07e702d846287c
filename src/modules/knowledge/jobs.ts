import { z } from 'zod';
import type { Executor } from '../../db/client.ts';
import type { KnowledgeSourceRow } from '../../db/schema/index.ts';
import { defineJob, type JobCatalog } from '../../jobs/definition.ts';
import { type EnqueueOptions, enqueue } from '../../jobs/queue.ts';
import { CompileError, compileSource } from './compile.ts';
import { lintBase } from './lint.ts';
import * as repo from './repo.ts';

/** Background work of the knowledge area. */
export const knowledgeJobs = {
  /** Compiles one source into pages; retried on upstream faults, never charged twice for what was written. */
  'knowledge.compile': defineJob({
    payload: z.object({ sourceId: z.string() }),
    retry: { maxAttempts: 4, baseDelayMs: 15_000 },
    run: (deps, { sourceId }, job) => compileSource(deps, sourceId, job, sourceText),
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

export function enqueueKnowledgeJob<T extends keyof typeof knowledgeJobs>(
  db: Executor,
  type: T,
  payload: z.input<(typeof knowledgeJobs)[T]['payload']>,
  opts?: EnqueueOptions,
): Promise<string | undefined> {
  return enqueue(db, knowledgeJobs, type, payload, opts);
}

/** The text a source holds: its own for text and file sources; a URL source is read when compiled. */
async function sourceText(source: KnowledgeSourceRow): Promise<string> {
  if (source.type === 'url') throw new CompileError('URL sources cannot be read yet');
  return source.rawContent ?? '';
}
