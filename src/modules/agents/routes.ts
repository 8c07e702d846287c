import multipart from '@fastify/multipart';
import type { FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../config.ts';
import { creditHeaders, streamCreditHeaders } from '../../http/credits.ts';
import { toAppError } from '../../http/error-handler.ts';
import { uploadTooLarge } from '../../http/multipart.ts';
import { endChatStream, startSse } from '../../http/sse.ts';
import type { App } from '../../http/types.ts';
import { abortSignalOf } from '../../lib/cancel.ts';
import { BadRequestError, PayloadTooLargeError, ValidationError } from '../../lib/errors.ts';
import { listQuery, paginated } from '../../lib/pagination.ts';
import { sseData } from '../../lib/sse.ts';
import { clientGone } from '../llm/index.ts';
import { type ChatOutcome, chatWithAgent } from './chat.service.ts';
import * as conversations from './conversations.service.ts';
import { conversationFeed, type EventFeed } from './events.service.ts';
import { uploadChatFile } from './files.service.ts';
import * as memories from './memories.service.ts';
import {
  Agent,
  AgentChatCompletion,
  AgentChatRequest,
  AgentParams,
  ChatFile as ChatFileSchema,
  Conversation,
  ConversationParams,
  CreateAgent,
  CreateConversation,
  ListQuery,
  MemoryListQuery,
  MemoryParams,
  Memory as MemorySchema,
  MemorySearchQuery,
  Message,
  UpdateAgent,
} from './schema.ts';
import * as service from './service.ts';

/** The OpenAI chat.completion body of an agent's answer. */
function completionBody(o: ChatOutcome): AgentChatCompletion {
  return {
    id: o.id,
    object: 'chat.completion',
    created: o.created,
    model: o.model,
    choices: [{ index: 0, message: { role: 'assistant', content: o.content }, finish_reason: 'stop' }],
    usage: o.usage,
  };
}

/** SPEC §4 "Agents" and "Conversations and memory". */
export async function agentRoutes(app: App, config: Config): Promise<void> {
  const tags = ['Agents'];
  const read = { scopes: ['agents-all' as const, 'agents-use' as const] };
  const write = { scopes: ['agents-all' as const] };

  app.post(
    '/agents',
    {
      schema: {
        tags,
        summary: 'Create an agent',
        description:
          "`llm` must be a model of GET /models (default: the default model). An account's first agent is its default.",
        body: CreateAgent,
        response: { 201: Agent },
      },
      config: write,
    },
    async (req, reply) => reply.code(201).send(await service.createAgent(req.ctx, req.body)),
  );
  app.get(
    '/agents',
    {
      schema: {
        tags,
        summary: 'List agents',
        querystring: listQuery(['createdAt', 'updatedAt', 'name']),
        response: { 200: paginated(Agent) },
      },
      config: read,
    },
    (req) => service.listAgents(req.ctx, req.query),
  );
  app.get(
    '/agents/:agentId',
    {
      schema: {
        tags,
        summary: 'Get an agent (`default`: the default agent)',
        params: AgentParams,
        response: { 200: Agent },
      },
      config: read,
    },
    (req) => service.getAgent(req.ctx, req.params.agentId),
  );
  app.put(
    '/agents/:agentId',
    {
      schema: {
        tags,
        summary: 'Update an agent (the fields given)',
        params: AgentParams,
        body: UpdateAgent,
        response: { 200: Agent },
      },
      config: write,
    },
    (req) => service.updateAgent(req.ctx, req.params.agentId, req.body),
  );
  app.post(
    '/agents/:agentId/set-default',
    {
      schema: {
        tags,
        summary: 'Make the agent the default (extension)',
        params: AgentParams,
        response: { 200: Agent },
      },
      config: write,
    },
    (req) => service.setDefaultAgent(req.ctx, req.params.agentId),
  );
  app.delete(
    '/agents/:agentId',
    {
      schema: {
        tags,
        summary: 'Delete an agent and its conversations (the default is cleared if it was it)',
        params: AgentParams,
        response: { 204: z.undefined() },
      },
      config: write,
    },
    async (req, reply) => {
      await service.deleteAgent(req.ctx, req.params.agentId);
      return reply.code(204).send();
    },
  );

  app.post(
    '/agents/:agentId/chat/completions',
    {
      schema: {
        tags,
        summary: 'Chat with an agent (OpenAI chat completion, JSON or SSE)',
        description:
          "Without `conversationId` a conversation is created; with one, its history is loaded and only the messages after the last assistant message of the request are new. Headers `X-Credits-Consumed`, `X-Credits-Remaining`, `X-Conversation-Id`; streams carry the final credits as an SSE comment and trailers before `data: [DONE]`. A usage limit answers the agent's `limitReachedMessage` with no model call and no charge.",
        params: AgentParams,
        body: AgentChatRequest,
        response: { 200: AgentChatCompletion },
      },
      config: {
        ...read,
        creditGuard: true,
        rateLimit: { max: config.rateLimits.llm, timeWindow: config.rateLimits.windowMs },
      },
    },
    async (req, reply) => {
      const signal = abortSignalOf(clientGone(reply));
      if (!req.body.stream) {
        const outcome = await chatWithAgent(req.ctx, req.params.agentId, req.body, { signal });
        return reply
          .headers({ ...creditHeaders(outcome.credits), 'X-Conversation-Id': outcome.conversationId })
          .send(completionBody(outcome));
      }
      await streamChat(
        reply,
        (onConversation, onDelta) =>
          chatWithAgent(req.ctx, req.params.agentId, req.body, { signal, onConversation, onDelta }),
        req.ctx.actor.creditBalance,
      );
    },
  );

  app.get(
    '/agents/:agentId/conversations',
    {
      schema: {
        tags,
        summary: 'List conversations, newest activity first',
        params: AgentParams,
        querystring: ListQuery,
        response: { 200: paginated(Conversation) },
      },
      config: read,
    },
    (req) => conversations.listConversations(req.ctx, req.params.agentId, req.query),
  );
  app.post(
    '/agents/:agentId/conversations',
    {
      schema: {
        tags,
        summary: 'Create a conversation (optional title and metadata)',
        params: AgentParams,
        body: CreateConversation,
        response: { 201: Conversation },
      },
      config: read,
    },
    async (req, reply) =>
      reply.code(201).send(await conversations.createConversation(req.ctx, req.params.agentId, req.body ?? {})),
  );
  app.get(
    '/agents/:agentId/conversations/:conversationId/messages',
    {
      schema: {
        tags,
        summary: 'Messages in order: role, content, tool calls and results, timestamps',
        params: ConversationParams,
        querystring: ListQuery,
        response: { 200: paginated(Message) },
      },
      config: read,
    },
    (req) => conversations.listMessages(req.ctx, req.params.agentId, req.params.conversationId, req.query),
  );
  // Multipart is read by this route only: every other route keeps refusing it (415).
  await app.register(async (plugin) => {
    const files = plugin.withTypeProvider<ZodTypeProvider>();
    await files.register(multipart, {
      limits: { fileSize: config.chatFileMaxBytes, files: 1, fields: 5, parts: 6 },
      throwFileSizeLimit: true,
    });
    files.post(
      '/agents/:agentId/chat/files',
      {
        bodyLimit: config.chatFileMaxBytes + 64 * 1024,
        schema: {
          tags,
          summary: 'Upload a file for chat (multipart field `file`)',
          description: `PDF, DOCX, CSV, TXT and MD have their text read; PNG, JPEG, GIF and WEBP are kept for models with vision. The kind is decided by the bytes, not the name (anything else: 422). At most CHAT_FILE_MAX_BYTES (default 10 MB; larger: 413); a document past a DOCUMENT_MAX_* bound (expanded size, entries, pages, rows, text) is also a 413 naming it. A chat message names it with a content part \`{"type": "file", "file": {"file_id": "file_..."}}\`.`,
          params: AgentParams,
          consumes: ['multipart/form-data'],
          response: { 201: ChatFileSchema },
        },
        config: read,
      },
      async (req, reply) => {
        const part = await req.file().catch((err: unknown) => {
          throw unreadable(err);
        });
        if (part?.fieldname !== 'file') {
          throw new ValidationError('Send the file in the multipart field "file"', [
            { field: 'file', message: 'required' },
          ]);
        }
        const bytes = await part.toBuffer().catch((err: unknown) => {
          throw unreadable(err);
        });
        return reply
          .code(201)
          .send(await uploadChatFile(req.ctx, req.params.agentId, { filename: part.filename, bytes }));
      },
    );
  });

  app.get(
    '/agents/:agentId/memories',
    {
      schema: {
        tags,
        summary: "The agent's memories, newest first",
        params: AgentParams,
        querystring: MemoryListQuery,
        response: { 200: paginated(MemorySchema) },
      },
      config: read,
    },
    (req) => memories.listMemories(req.ctx, req.params.agentId, req.query),
  );
  app.get(
    '/agents/:agentId/memories/search',
    {
      schema: {
        tags,
        summary: 'Memories closest to `query` (full text and trigram similarity)',
        params: AgentParams,
        querystring: MemorySearchQuery,
        response: { 200: z.object({ data: z.array(MemorySchema) }) },
      },
      config: read,
    },
    (req) => memories.searchMemories(req.ctx, req.params.agentId, req.query),
  );
  app.delete(
    '/agents/:agentId/memories/:memoryId',
    {
      schema: {
        tags,
        summary: 'Make the agent forget a memory (extension)',
        params: MemoryParams,
        response: { 204: z.undefined() },
      },
      config: read,
    },
    async (req, reply) => {
      await memories.deleteMemory(req.ctx, req.params.agentId, req.params.memoryId);
      return reply.code(204).send();
    },
  );
  app.get(
    '/agents/:agentId/conversations/:conversationId/events',
    {
      schema: {
        tags,
        summary: "The conversation's events (Server-Sent Events)",
        description:
          'Events `message.created`, `message.delta`, `tool.called`, `tool.result`, `run.completed`, `run.failed`, each with its `id:` (send `Last-Event-ID`, or `?lastEventId=`, to replay what came after it) and a JSON `data:`; a `: ping` comment every SSE_HEARTBEAT_MS. Events from a run on any instance arrive.',
        params: ConversationParams,
        querystring: z.object({ lastEventId: z.coerce.number().int().min(0).optional() }),
        response: { 200: z.unknown() },
      },
      config: read,
    },
    async (req, reply) => {
      const feed = await conversationFeed(req.ctx, req.params.agentId, req.params.conversationId);
      const header = Number(req.headers['last-event-id']);
      const from = Number.isInteger(header) && header >= 0 ? header : (req.query.lastEventId ?? 0);
      await streamEvents(reply, feed, from, config.sseHeartbeatMs);
    },
  );
  app.delete(
    '/agents/:agentId/conversations/:conversationId',
    {
      schema: {
        tags,
        summary: 'Delete a conversation and its messages',
        params: ConversationParams,
        response: { 204: z.undefined() },
      },
      config: read,
    },
    async (req, reply) => {
      await conversations.deleteConversation(req.ctx, req.params.agentId, req.params.conversationId);
      return reply.code(204).send();
    },
  );
}

/**
 * The agent's answer as an OpenAI stream: headers (with the conversation id) as soon as the conversation is
 * known, a role chunk, the model's text as the upstream writes it, a final chunk, the credits, `[DONE]`. The
 * agent's tool steps run in between (text a model writes before calling tools streams too). An answer no model
 * wrote (a usage limit's message) is sent in word-sized deltas at the end. Faults before the headers are
 * ordinary error answers.
 */
async function streamChat(
  reply: FastifyReply,
  run: (onConversation: (id: string) => void, onDelta: (text: string) => void) => Promise<ChatOutcome>,
  balanceBefore: number,
): Promise<void> {
  const raw = reply.raw;
  let started = false;
  let streamed = '';
  const id = `chatcmpl_${Date.now().toString(36)}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, model = '') =>
    sseData({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
  const start = (conversationId: string) => {
    started = true;
    startSse(reply, { 'X-Conversation-Id': conversationId, ...streamCreditHeaders(reply.raw, balanceBefore) });

    raw.write(chunk({ role: 'assistant', content: '' }));
  };
  const onDelta = (text: string) => {
    if (!started || raw.destroyed || !text) return;
    streamed += text;
    raw.write(chunk({ content: text }));
  };
  let outcome: ChatOutcome;
  try {
    outcome = await run(start, onDelta);
  } catch (err) {
    if (!started) throw err;
    const fault = toAppError(err);
    if (!raw.destroyed) endChatStream(raw, { fault });
    return;
  }
  if (raw.destroyed) return;
  // What the stream has not said yet: all of an answer no model wrote, nothing when the model's text streamed.
  // Its pieces, the final chunk, the figures and the end leave in one write.
  const rest = streamed.endsWith(outcome.content) ? '' : outcome.content;
  const pieces = (rest.match(/\S+\s*|\s+/g) ?? []).map((piece) => chunk({ content: piece }, null, outcome.model));
  endChatStream(raw, { before: pieces.join('') + chunk({}, 'stop', outcome.model), credits: outcome.credits });
}

/**
 * An event stream: subscribed first, then what came after `from` replayed from the database, then every new
 * event as it is announced (read from the database, so none is skipped or sent twice), with a heartbeat.
 */
async function streamEvents(reply: FastifyReply, feed: EventFeed, from: number, heartbeatMs: number): Promise<void> {
  const raw = reply.raw;
  let last = from;
  let reading = false;
  let again = false;
  const pump = async () => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        for (const e of await feed.after(last)) {
          if (raw.destroyed) return;
          raw.write(
            `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify({ ...e.data, createdAt: e.createdAt })}\n\n`,
          );
          last = e.id;
        }
      } while (again && !raw.destroyed);
    } catch (err) {
      reply.log.warn({ err }, 'reading conversation events failed');
    } finally {
      reading = false;
    }
  };
  const unsubscribe = await feed.subscribe(() => void pump());
  startSse(reply);

  raw.write(': connected\n\n');
  const heartbeat = setInterval(() => raw.write(': ping\n\n'), heartbeatMs);
  raw.once('close', () => {
    clearInterval(heartbeat);
    unsubscribe();
  });
  await pump();
}

/**
 * What reading the upload threw, as the caller's error: multipart's "file too large" as our 413, anything else a
 * body that is not the multipart it says (no part, a part cut short, a bad header): 400. Only the request was read.
 */
function unreadable(err: unknown): PayloadTooLargeError | BadRequestError {
  return uploadTooLarge(err)
    ? new PayloadTooLargeError('The file is larger than CHAT_FILE_MAX_BYTES allows')
    : new BadRequestError('The multipart body could not be read: send the file as a part named "file"');
}
