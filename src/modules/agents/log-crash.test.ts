import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { asc, eq } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { openTestDatabase, TEST_ENCRYPTION_KEYS, type TestDatabase } from '../../../test/harness.ts';
import { startScript } from '../../../test/server-process.ts';
import { accounts, agents, conversationRuns, conversations, messages } from '../../db/schema/index.ts';
import { newId } from '../../lib/ids.ts';
import { CONVERSATION_JOURNAL_DIR } from './journal.ts';

/**
 * What a chat's answer names is on disk once `commitNow` says so: a process that wrote a conversation and its first
 * message through the conversation log, and was killed with SIGKILL before writing anything else, leaves both
 * behind. On PGlite the log's batches once committed asynchronously, and with no WAL writer such a commit reached
 * the disk only with the next synchronous one: a streamed chat's conversation, already named to its client, could
 * be lost if the service died before any (migration 0030). This test failed so on PGlite before the change.
 */
/** A private database with an account and its agent, handed over to the probe process; their ids. */
async function probeDatabase(): Promise<{ t: TestDatabase; accountId: string; agentId: string }> {
  const t = await openTestDatabase({ privateDatabase: true });
  const accountId = newId('account');
  const agentId = newId('agent');
  const { db } = t.database;
  await db.insert(accounts).values({ id: accountId, email: `${accountId}@example.test`, name: 'Crash' });
  await db.insert(agents).values({ id: agentId, accountId, name: 'Crash', llm: 'fake-small', enabledBuiltInTools: [] });
  await t.handOver();
  return { t, accountId, agentId };
}

describe('the conversation log across a crash', () => {
  let testDb: TestDatabase | undefined;
  afterAll(() => testDb?.close());

  it('keeps a conversation and message committed before the process was killed', async () => {
    const probe = await probeDatabase();
    testDb = probe.t;
    const { accountId, agentId } = probe;

    const writer = startScript('test/conversation-log-process.ts', {
      ...testDb.env,
      ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS,
      LOG_LEVEL: 'warn',
      PROBE_ACCOUNT: accountId,
      PROBE_AGENT: agentId,
    });
    const written = await writer.line<{ written: boolean; conversationId: string; messageId: string }>('"written"');
    expect(written.written).toBe(true);
    expect(await writer.kill()).toBe('SIGKILL');

    const database = await testDb.open();
    const conversation = await database.db
      .select({ id: conversations.id, agentId: conversations.agentId })
      .from(conversations)
      .where(eq(conversations.id, written.conversationId));
    expect(conversation).toEqual([{ id: written.conversationId, agentId }]);
    const stored = await database.db
      .select({ id: messages.id, role: messages.role, content: messages.content })
      .from(messages)
      .where(eq(messages.conversationId, written.conversationId));
    expect(stored).toEqual([{ id: written.messageId, role: 'user', content: 'Still there?' }]);
  }, 90_000);
  it('keeps an answered turn killed before its group commit: on PGlite from the journal, written at the next start', async () => {
    const { t, accountId, agentId } = await probeDatabase();
    try {
      const env = { ...t.env, ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS, LOG_LEVEL: 'warn' };
      const writer = startScript('test/conversation-log-process.ts', {
        ...env,
        PROBE_ACCOUNT: accountId,
        PROBE_AGENT: agentId,
        PROBE_MODE: 'answer',
      });
      const turn = await writer.line<{ written: boolean; conversationId: string; messageId: string; answerId: string }>(
        '"written"',
      );
      expect(turn.written).toBe(true);
      expect(await writer.kill()).toBe('SIGKILL');

      const journal = join(t.dataDir, CONVERSATION_JOURNAL_DIR);
      const stored = async () => {
        const database = await t.open();
        const rows = {
          conversations: (
            await database.db
              .select({ id: conversations.id })
              .from(conversations)
              .where(eq(conversations.id, turn.conversationId))
          ).length,
          messages: (
            await database.db
              .select({ id: messages.id })
              .from(messages)
              .where(eq(messages.conversationId, turn.conversationId))
              .orderBy(asc(messages.seq))
          ).map((m) => m.id),
          leases: (
            await database.db
              .select({ id: conversationRuns.id })
              .from(conversationRuns)
              .where(eq(conversationRuns.conversationId, turn.conversationId))
          ).length,
        };
        await t.handOver();
        return rows;
      };
      if (t.env.DATABASE_URL) {
        // PostgreSQL: committed before the answer left (the lease's end keeps its window: still there).
        expect(await stored()).toEqual({ conversations: 1, messages: [turn.messageId, turn.answerId], leases: 1 });
        expect(existsSync(journal)).toBe(false);
      } else {
        // PGlite: nothing was written before the kill; the journal holds it.
        expect(await stored()).toEqual({ conversations: 0, messages: [], leases: 0 });
        expect(readdirSync(journal)).toHaveLength(1);
        const recover = startScript('test/conversation-log-process.ts', { ...env, PROBE_MODE: 'recover' });
        expect(await recover.line<{ recovered: number }>('"recovered"')).toEqual({ recovered: 5 });
        await recover.exited;
        expect(readdirSync(journal)).toEqual([]);
        // The conversation, both messages in order, and no lease: the turn had ended.
        expect(await stored()).toEqual({ conversations: 1, messages: [turn.messageId, turn.answerId], leases: 0 });
      }
    } finally {
      await t.close();
    }
  }, 90_000);
});
