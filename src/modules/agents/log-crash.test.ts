import { eq } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { openTestDatabase, TEST_ENCRYPTION_KEYS, type TestDatabase } from '../../../test/harness.ts';
import { startScript } from '../../../test/server-process.ts';
import { accounts, agents, conversations, messages } from '../../db/schema/index.ts';
import { newId } from '../../lib/ids.ts';

/**
 * What a chat's answer names is on disk once `commitNow` says so: a process that wrote a conversation and its first
 * message through the conversation log, and was killed with SIGKILL before writing anything else, leaves both
 * behind. On PGlite the log's batches once committed asynchronously, and with no WAL writer such a commit reached
 * the disk only with the next synchronous one: a streamed chat's conversation, already named to its client, could
 * be lost if the service died before any (migration 0030). This test failed so on PGlite before the change.
 */
describe('the conversation log across a crash', () => {
  let testDb: TestDatabase | undefined;
  afterAll(() => testDb?.close());

  it('keeps a conversation and message committed before the process was killed', async () => {
    testDb = await openTestDatabase({ privateDatabase: true });
    const accountId = newId('account');
    const agentId = newId('agent');
    const { db } = testDb.database;
    await db.insert(accounts).values({ id: accountId, email: `${accountId}@example.test`, name: 'Crash' });
    await db
      .insert(agents)
      .values({ id: agentId, accountId, name: 'Crash', llm: 'fake-small', enabledBuiltInTools: [] });
    await testDb.handOver();

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
});
