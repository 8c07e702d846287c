import { z } from 'zod';
import type { AgentTool, AgentToolGroup } from '../../agent/tool-group.ts';
import type { Deps, ServiceContext } from '../../context.ts';
import { systemContext } from '../../context.ts';
import type { AgentMemoryRow, AgentRow } from '../../db/schema/index.ts';
import { BadRequestError, NotFoundError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Logger } from '../../lib/logger.ts';
import { type Page, toPage } from '../../lib/pagination.ts';
import { argText } from '../../lib/text.ts';
import { runCompletion } from '../llm/index.ts';
import * as memoryRepo from './memories.repo.ts';
import * as repo from './repo.ts';
import { ownedAgent } from './service.ts';

/**
 * Long-term memory of an agent, per end user (SPEC §4 memories): facts kept across conversations. After each
 * reply a job asks the model which facts of the exchange to add, update or delete against the closest
 * memories it is shown (an id it was not shown is ignored); the closest memories to a new message go into the
 * system prompt; the `agent-memory` tools let the agent save, search and forget on request.
 */

export const MEMORY_MAX_CHARS = 1000;
/** Memories the system prompt carries for a new message. */
export const RECALL_IN_PROMPT = 5;
/** Memories the extraction call is shown to decide against. */
const CANDIDATES = 8;

export interface Memory {
  id: string;
  endUserId: string;
  content: string;
  conversationId: string | null;
  createdAt: string;
  updatedAt: string;
  score?: number;
}

function toMemory(row: AgentMemoryRow & { score?: number }): Memory {
  return {
    id: row.id,
    endUserId: row.endUserId,
    content: row.content,
    conversationId: row.conversationId,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    ...(row.score !== undefined ? { score: Math.round(row.score * 1e4) / 1e4 } : {}),
  };
}

export async function listMemories(
  ctx: ServiceContext,
  agentId: string,
  q: { page: number; limit: number; endUserId?: string | undefined },
): Promise<Page<Memory>> {
  const agent = await ownedAgent(ctx, agentId);
  const { rows, total } = await memoryRepo.listMemories(ctx.db, agent.id, q.endUserId, q);
  return toPage(rows.map(toMemory), total, q);
}

export async function searchMemories(
  ctx: ServiceContext,
  agentId: string,
  q: { query: string; endUserId?: string | undefined; limit: number },
): Promise<{ data: Memory[] }> {
  const agent = await ownedAgent(ctx, agentId);
  const rows = await memoryRepo.searchMemories(ctx.db, agent.id, q.endUserId, q.query, q.limit);
  return { data: rows.map(toMemory) };
}

export async function deleteMemory(ctx: ServiceContext, agentId: string, memoryId: string): Promise<void> {
  const agent = await ownedAgent(ctx, agentId);
  if ((await memoryRepo.deleteMemories(ctx.db, agent.id, [memoryId])) === 0) {
    throw new NotFoundError(`Memory ${memoryId} not found`);
  }
}

/** The system-prompt paragraph of what the agent remembers that bears on `message` (empty when nothing does). */
export async function recallForPrompt(
  ctx: ServiceContext,
  agent: AgentRow,
  endUserId: string,
  message: string,
): Promise<string> {
  const rows = await memoryRepo.searchMemories(ctx.db, agent.id, endUserId, message.slice(0, 2000), RECALL_IN_PROMPT);
  if (rows.length === 0) return '';
  return `What you remember about this user (use it when relevant; it may be outdated):\n${rows.map((r) => `- ${r.content}`).join('\n')}`;
}

/** The `agent-memory` tools for one agent and end user. */
export function memoryTools(
  ctx: ServiceContext,
  agent: AgentRow,
  endUserId: string,
  conversationId: string,
): AgentTool[] {
  const source = 'agent-memory';
  return [
    {
      name: 'memory-save',
      description:
        'Remember a fact about the user for later conversations (when they ask you to, or it clearly matters).',
      parameters: {
        type: 'object',
        properties: { content: { type: 'string', description: 'The fact, in one short sentence' } },
        required: ['content'],
        additionalProperties: false,
      },
      mode: 'write',
      source,
      async run(args) {
        const content = argText(args.content).trim().slice(0, MEMORY_MAX_CHARS);
        if (!content) throw new BadRequestError('Nothing to remember');
        const row = await memoryRepo.insertMemory(ctx.db, {
          id: newId('memory'),
          accountId: agent.accountId,
          agentId: agent.id,
          endUserId,
          content,
          conversationId,
        });
        return { saved: row.id };
      },
    },
    {
      name: 'memory-search',
      description: 'Search what you remember about the user.',
      parameters: {
        type: 'object',
        properties: { query: { type: 'string' } },
        required: ['query'],
        additionalProperties: false,
      },
      mode: 'read',
      source,
      async run(args) {
        const rows = await memoryRepo.searchMemories(ctx.db, agent.id, endUserId, argText(args.query), 10);
        return rows.map((r) => ({ id: r.id, content: r.content }));
      },
    },
    {
      name: 'memory-forget',
      description: 'Forget a memory (by the id memory-search gave) when the user asks you to.',
      parameters: {
        type: 'object',
        properties: { id: { type: 'string' } },
        required: ['id'],
        additionalProperties: false,
      },
      mode: 'write',
      source,
      async run(args) {
        const id = argText(args.id);
        const mine = (await memoryRepo.listMemories(ctx.db, agent.id, endUserId, { page: 1, limit: 1000 })).rows.some(
          (m) => m.id === id,
        );
        if (!mine || (await memoryRepo.deleteMemories(ctx.db, agent.id, [id])) === 0) {
          throw new NotFoundError(`No memory ${id}`);
        }
        return { forgotten: id };
      },
    },
  ];
}

const Operation = z.discriminatedUnion('op', [
  z.object({ op: z.literal('add'), content: z.string().trim().min(1).max(MEMORY_MAX_CHARS) }),
  z.object({ op: z.literal('update'), id: z.string(), content: z.string().trim().min(1).max(MEMORY_MAX_CHARS) }),
  z.object({ op: z.literal('delete'), id: z.string() }),
]);
const Decision = z.object({ operations: z.array(z.unknown()).max(20) });

const EXTRACT_PROMPT = `You keep an assistant's long-term memory of one user. From the exchange below, pick the lasting facts about the user (preferences, names, plans, circumstances) worth remembering in later conversations; skip small talk and anything about this one task.
Compare with the existing memories shown (each with its id): add a new fact, update a memory that the exchange changes (same id, new text), delete one the exchange shows is wrong, or do nothing.
Answer one JSON object only: {"operations": [{"op": "add", "content": "..."} | {"op": "update", "id": "...", "content": "..."} | {"op": "delete", "id": "..."}]} — an empty list when nothing is worth remembering.`;

export interface ExtractionOutcome {
  added: number;
  updated: number;
  deleted: number;
  ignored: number;
}

/**
 * The memory job's body: decides, with one model call billed to the owner, what the conversation's latest
 * exchange adds to, changes in or removes from the end user's memories. Operations naming an id the model was
 * not shown, or malformed ones, are ignored; a malformed answer changes nothing.
 */
export async function extractMemories(deps: Deps, conversationId: string, log: Logger): Promise<ExtractionOutcome> {
  const outcome: ExtractionOutcome = { added: 0, updated: 0, deleted: 0, ignored: 0 };
  const conversation = await repo.findConversationById(deps.database.db, conversationId);
  if (!conversation) return outcome;
  const ctx = systemContext(deps, conversation.accountId, log, ['agents-use']);
  const agent = await repo.findAgent(ctx.db, conversation.accountId, conversation.agentId);
  if (!agent) return outcome;
  const recent = await repo.recentMessages(ctx.db, conversationId, 20);
  const user = [...recent].reverse().find((m) => m.role === 'user');
  const answer = [...recent].reverse().find((m) => m.role === 'assistant' && !m.toolCalls?.length);
  if (!user?.content) return outcome;
  const exchange = `User: ${user.content}\nAssistant: ${answer?.content ?? ''}`.slice(0, 8000);
  const shown = await memoryRepo.searchMemories(ctx.db, agent.id, conversation.endUserId, user.content, CANDIDATES);
  const known = new Set(shown.map((m) => m.id));
  const { completion } = await runCompletion(
    ctx,
    {
      model: agent.llm,
      temperature: 0,
      max_tokens: 1000,
      messages: [
        { role: 'system', content: EXTRACT_PROMPT },
        {
          role: 'user',
          content: `Existing memories:\n${shown.map((m) => `- [${m.id}] ${m.content}`).join('\n') || '(none)'}\n\nExchange:\n${exchange}`,
        },
      ],
    },
    { signal: AbortSignal.timeout(60_000), billing: { type: 'agent', description: `Agent ${agent.name}: memory` } },
  );
  const text = completion.choices[0]?.message.content ?? '';
  let parsed: z.infer<typeof Decision>;
  try {
    const start = text.indexOf('{');
    parsed = Decision.parse(JSON.parse(text.slice(start, text.lastIndexOf('}') + 1)));
  } catch {
    log.warn({ conversationId }, 'memory extraction answered no usable JSON; nothing changed');
    return outcome;
  }
  await ctx.db.transaction(async (tx) => {
    for (const raw of parsed.operations) {
      const op = Operation.safeParse(raw);
      if (!op.success || (op.data.op !== 'add' && !known.has(op.data.id))) {
        outcome.ignored++;
        continue;
      }
      if (op.data.op === 'add') {
        await memoryRepo.insertMemory(tx, {
          id: newId('memory'),
          accountId: agent.accountId,
          agentId: agent.id,
          endUserId: conversation.endUserId,
          content: op.data.content,
          conversationId,
        });
        outcome.added++;
      } else if (op.data.op === 'update') {
        if (await memoryRepo.updateMemory(tx, agent.id, op.data.id, op.data.content)) outcome.updated++;
      } else if ((await memoryRepo.deleteMemories(tx, agent.id, [op.data.id])) > 0) {
        outcome.deleted++;
      }
    }
  });
  return outcome;
}

/** The `agent-memory` group: what the agent remembers of this end user. */
export const memoryToolGroup: AgentToolGroup = {
  name: 'agent-memory',
  tools: (ctx, run) => memoryTools(ctx, run.agent, run.endUserId, run.conversationId),
};
