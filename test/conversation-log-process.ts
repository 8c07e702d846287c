import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { newId } from '../src/lib/ids.ts';
import type { Logger } from '../src/lib/logger.ts';
import { createDeps, openRuntime } from '../src/runtime.ts';

/**
 * An agent chat's conversation log as a process of its own, for src/modules/agents/log-crash.test.ts: it stores a
 * new conversation of the account and agent named by `PROBE_ACCOUNT` and `PROBE_AGENT`, with a user's message,
 * through the log as a chat does (`commitNow`, what a streamed chat waits for before it names the conversation),
 * prints `{"written": true, "conversationId": ..., "messageId": ...}` and then does nothing until it is killed.
 * Settings come from the environment, as for the server.
 */
if (process.argv[1]?.endsWith('conversation-log-process.ts')) {
  // The embedded database's thread does not keep a process alive: this does, until the test kills it.
  setInterval(() => {}, 60_000);
  const config = loadConfig();
  const runtime = await openRuntime(config);
  const deps = createDeps(config, runtime, pino({ level: config.logLevel }, pino.destination(2)) as Logger);
  const log = deps.areas.conversationLog;
  const conversationId = newId('conversation');
  void log.conversation({
    id: conversationId,
    accountId: process.env.PROBE_ACCOUNT ?? '',
    agentId: process.env.PROBE_AGENT ?? '',
    endUserId: 'owner',
    title: 'Still there?',
  });
  const { message, written: queued } = log.message({
    conversationId,
    role: 'user',
    content: 'Still there?',
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    error: null,
  });
  const written = await log.commitNow(queued);
  process.stdout.write(`${JSON.stringify({ written, conversationId, messageId: message.id })}\n`);
}
