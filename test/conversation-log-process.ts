import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { newId } from '../src/lib/ids.ts';
import type { Logger } from '../src/lib/logger.ts';
import { createDeps, openRuntime } from '../src/runtime.ts';

/**
 * An agent chat's conversation log as a process of its own, for src/modules/agents/log-crash.test.ts. It stores a
 * new conversation of the account and agent named by `PROBE_ACCOUNT` and `PROBE_AGENT`, with a user's message,
 * through the log as a chat does, prints `{"written": true, "conversationId": ..., "messageId": ...}` and then
 * waits until it is killed. `PROBE_MODE`:
 * - `now` (default): `commitNow`, what a failed turn waits for; then it idles.
 * - `answer`: a whole turn as an answer stores it (its lease, the user's message, the answer, the lease's end),
 *   waiting as the answer does (`commitRows`); then it spins, so that no timer (the group commit's window) runs
 *   before the kill: on PGlite what the answer named is only in the journal then.
 * - `recover`: start-up's replay of the journal (`recover`); prints `{"recovered": n}` and exits.
 * Settings come from the environment, as for the server.
 */
if (process.argv[1]?.endsWith('conversation-log-process.ts')) {
  // The embedded database's thread does not keep a process alive: this does, until the test kills it.
  const idle = setInterval(() => {}, 60_000);
  const config = loadConfig();
  const runtime = await openRuntime(config);
  const deps = createDeps(config, runtime, pino({ level: config.logLevel }, pino.destination(2)) as Logger);
  const log = deps.areas.conversationLog;
  const mode = process.env.PROBE_MODE ?? 'now';
  if (mode === 'recover') {
    const recovered = await log.recover();
    process.stdout.write(`${JSON.stringify({ recovered })}\n`);
    clearInterval(idle);
    await runtime.database.close();
  } else {
    const conversationId = newId('conversation');
    void log.conversation({
      id: conversationId,
      accountId: process.env.PROBE_ACCOUNT ?? '',
      agentId: process.env.PROBE_AGENT ?? '',
      endUserId: 'owner',
      title: 'Still there?',
    });
    const turn = mode === 'answer' ? log.startRun(conversationId, 60_000) : undefined;
    const { message, written: queued } = log.message({
      conversationId,
      role: 'user',
      content: 'Still there?',
      toolCalls: null,
      toolCallId: null,
      toolName: null,
      error: null,
    });
    let written: boolean;
    let answerId: string | undefined;
    if (turn) {
      const answer = log.answer(conversationId, turn, 'Yes.', { creditsConsumed: 0, limited: false });
      answerId = answer.message.id;
      written = await answer.committed;
    } else written = await log.commitNow(queued);
    process.stdout.write(`${JSON.stringify({ written, conversationId, messageId: message.id, answerId })}\n`);
    if (turn) for (;;); // no timer runs again: the group commit's window never comes
  }
}
