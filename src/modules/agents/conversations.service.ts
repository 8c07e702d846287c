import type { Deps, ServiceContext } from '../../context.ts';
import type { ConversationRow, MessageRow } from '../../db/schema/index.ts';
import { NotFoundError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import * as repo from './repo.ts';
import type { Conversation, CreateConversation, Message } from './schema.ts';
import { ownedAgent } from './service.ts';

/** Conversations of an agent (SPEC §4, `agents-all` or `agents-use`): the account's own chats are end user `owner`. */

export const OWNER = 'owner';

export function toConversation(row: ConversationRow): Conversation {
  return {
    id: row.id,
    agentId: row.agentId,
    title: row.title,
    metadata: row.metadata,
    lastActivityAt: row.lastActivityAt.toISOString(),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    role: row.role,
    content: row.content,
    toolCalls: row.toolCalls,
    toolCallId: row.toolCallId,
    toolName: row.toolName,
    error: row.error,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.createdAt.toISOString(),
  };
}

export async function listConversations(
  ctx: ServiceContext,
  agentId: string,
  p: { page: number; limit: number },
): Promise<Page<Conversation>> {
  const agent = await ownedAgent(ctx, agentId);
  await ctx.deps.areas.conversationLog.settled();
  const { rows, total } = await repo.listConversations(ctx.db, agent.id, p);
  return toPage(rows.map(toConversation), total, p);
}

/** A new, empty conversation; its first assistant message is the agent's `firstPrompt` when it has one. */
export async function createConversation(
  ctx: ServiceContext,
  agentId: string,
  input: CreateConversation,
  endUserId = OWNER,
): Promise<Conversation> {
  const agent = await ownedAgent(ctx, agentId);
  return ctx.db.transaction(async (tx) => {
    const row = await repo.insertConversation(tx, {
      id: newId('conversation'),
      accountId: ctx.accountId,
      agentId: agent.id,
      endUserId,
      title: input.title ?? '',
      metadata: input.metadata ?? {},
    });
    if (agent.firstPrompt) {
      await repo.insertMessages(tx, [
        { id: newId('message'), conversationId: row.id, role: 'assistant', content: agent.firstPrompt },
      ]);
    }
    return toConversation(row);
  });
}

export async function ownedConversation(
  ctx: ServiceContext,
  agentId: string,
  conversationId: string,
): Promise<ConversationRow> {
  const agent = await ownedAgent(ctx, agentId);
  // This instance's chats may have writes queued (group commit): a read here sees them.
  await ctx.deps.areas.conversationLog.settled(conversationId);
  const row = await repo.findConversation(ctx.db, ctx.accountId, agent.id, conversationId);
  if (!row) throw new NotFoundError(`Conversation ${conversationId} not found`);
  return row;
}

export async function listMessages(
  ctx: ServiceContext,
  agentId: string,
  conversationId: string,
  p: { page: number; limit: number },
): Promise<Page<Message>> {
  const conversation = await ownedConversation(ctx, agentId, conversationId);
  const { rows, total } = await repo.listMessages(ctx.db, conversation.id, p);
  return toPage(rows.map(toMessage), total, p);
}

/** Deletes the conversation and its messages. */
export async function deleteConversation(ctx: ServiceContext, agentId: string, conversationId: string): Promise<void> {
  const conversation = await ownedConversation(ctx, agentId, conversationId);
  await repo.deleteConversation(ctx.db, conversation.id);
}

/**
 * The words of a conversation's last `limit` messages, oldest first: the user's and the agent's (tool steps left
 * out), one paragraph each, named `User` or `agentName`. Knowledge captures idle conversations with it.
 */
export async function conversationTranscript(
  deps: Deps,
  conversationId: string,
  agentName: string,
  limit: number,
): Promise<string> {
  const messages = await repo.recentMessages(deps.database.db, conversationId, limit);
  return messages
    .filter((m) => (m.role === 'user' || m.role === 'assistant') && !m.toolCalls?.length && m.content)
    .map((m) => `${m.role === 'user' ? 'User' : agentName}: ${m.content}`)
    .join('\n\n');
}
