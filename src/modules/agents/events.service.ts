import type { Executor } from '../../db/client.ts';
import type { MessageRow } from '../../db/schema/index.ts';
import type { ServiceContext } from '../../lib/context.ts';
import { newId } from '../../lib/ids.ts';
import { ownedConversation, toMessage } from './conversations.service.ts';
import * as repo from './repo.ts';

/**
 * The events of a conversation (SPEC §4 `GET .../events`, shapes ours): stored with increasing ids, so a
 * subscriber that reconnects with `Last-Event-ID` misses nothing, and announced through the database's
 * notifications, so a subscriber on another instance than the one running the agent hears them.
 *
 * - `message.created` `{message}`: a message was stored (user, assistant, tool), as the messages list shows it;
 * - `tool.called` `{toolCallId, name, arguments}`: the agent called a tool;
 * - `tool.result` `{toolCallId, name, content}`: what the tool answered (as the model read it, capped);
 * - `message.delta` `{content}`: text of the answer being written (today the whole answer, once, before its
 *   `message.created`: model tokens are not streamed yet);
 * - `run.completed` `{messageId, creditsConsumed, limited}` and `run.failed` `{error}`: the run ended.
 */
export const EVENT_TYPES = [
  'message.created',
  'message.delta',
  'tool.called',
  'tool.result',
  'run.completed',
  'run.failed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export function emitEvent(
  db: Executor,
  conversationId: string,
  type: EventType,
  data: Record<string, unknown>,
): Promise<number> {
  return repo.insertEvent(db, conversationId, type, data);
}

/** Stores a message and announces it (`message.created`). */
export async function recordMessage(
  db: Executor,
  row: Omit<Parameters<typeof repo.insertMessages>[1][number], 'id'>,
): Promise<MessageRow> {
  const [stored] = await repo.insertMessages(db, [{ id: newId('message'), ...row }]);
  if (!stored) throw new Error('message insert returned nothing');
  await emitEvent(db, stored.conversationId, 'message.created', { message: toMessage(stored) });
  return stored;
}

export interface ConversationEvent {
  id: number;
  type: string;
  data: Record<string, unknown>;
  createdAt: string;
}

/** A subscription to one conversation's events, for the SSE route. */
export interface EventFeed {
  /** Events after `afterId`, oldest first (at most 500 at a time). */
  after(afterId: number): Promise<ConversationEvent[]>;
  /** Calls `onEvent` when new events may be there; answers the function that stops it. */
  subscribe(onEvent: () => void): Promise<() => void>;
}

export async function conversationFeed(
  ctx: ServiceContext,
  agentId: string,
  conversationId: string,
): Promise<EventFeed> {
  const conversation = await ownedConversation(ctx, agentId, conversationId);
  return {
    async after(afterId) {
      const rows = await repo.eventsAfter(ctx.db, conversation.id, afterId, 500);
      return rows.map((r) => ({ id: r.id, type: r.type, data: r.data, createdAt: r.createdAt.toISOString() }));
    },
    subscribe: (onEvent) => ctx.deps.notifications.subscribe(conversation.id, onEvent),
  };
}
