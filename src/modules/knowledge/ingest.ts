import type { Deps } from '../../context.ts';
import { conversationTranscript } from '../agents/index.ts';
import { ensureDefaultBase } from './bases.service.ts';
import * as repo from './repo.ts';
import { addSource, enqueueCompile } from './sources.service.ts';

/** A conversation idle this long is captured (SPEC §8: 30 minutes). */
export const CAPTURE_IDLE_MS = 30 * 60 * 1000;
const BATCH = 50;
const TRANSCRIPT_MESSAGES = 500;

/**
 * `autoIngestConversations` (the `knowledge.ingest-conversations` job, every 5 minutes): every agent
 * conversation idle for 30 minutes becomes a `conversation` source of its account's default base, its
 * transcript the user's and the agent's words (tool steps left out). A conversation active again after its
 * capture is captured again into the same source, which is compiled again.
 */
export async function ingestIdleConversations(deps: Deps, now = new Date()): Promise<{ captured: number }> {
  const db = deps.database.db;
  const due = await repo.conversationsToCapture(db, new Date(now.getTime() - CAPTURE_IDLE_MS), BATCH);
  for (const c of due) {
    const transcript = await conversationTranscript(deps, c.conversationId, c.agentName, TRANSCRIPT_MESSAGES);
    if (!transcript.trim()) continue;
    await db.transaction(async (tx) => {
      const kb = await ensureDefaultBase({ db: tx, accountId: c.accountId });
      const existing = c.sourceId ? await repo.findSource(tx, kb.id, c.sourceId) : undefined;
      let sourceId: string;
      if (existing) {
        const updated = await repo.updateSource(tx, existing.id, {
          rawContent: transcript,
          status: 'pending',
          error: null,
        });
        if (updated) await enqueueCompile(tx, updated);
        sourceId = existing.id;
      } else {
        const added = await addSource(tx, kb, {
          type: 'conversation',
          name: `Conversation with ${c.agentName}${c.title ? `: ${c.title}` : ''}`.slice(0, 300),
          rawContent: transcript,
          metadata: { conversationId: c.conversationId },
        });
        sourceId = added.id;
      }
      await repo.saveTracker(tx, {
        conversationId: c.conversationId,
        kbId: kb.id,
        sourceId,
        capturedActivityAt: c.lastActivityAt,
      });
    });
  }
  return { captured: due.length };
}
