import { FINISH, type StreamEvent, type ToolChoice } from './anthropic.ts';
import type { ChatChunk, ChatCompletion, ChatMessage, ChatRequest, ChatTool, Usage } from './types.ts';
import { UpstreamError } from './types.ts';

/**
 * The Anthropic Messages API as a client speaks it (`POST /v1/messages`), translated to the gateway's one request
 * shape (OpenAI chat completions) and its answer back, so every upstream serves it: the OpenAI-compatible ones
 * directly, Anthropic through its adapter (llm-upstreams/anthropic.ts), which translates the other way. What has no
 * chat-completions equivalent and would change the answer (documents, server tools, images in tool results) is
 * refused with a 400; what only tunes (top_k, thinking, cache_control, service_tier) is dropped.
 */

export interface MessagesBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: string | MessagesBlock[];
  is_error?: boolean;
  source?: { type: string; media_type?: string; data?: string; url?: string };
  [k: string]: unknown;
}

export interface MessagesRequest {
  model?: string | undefined;
  max_tokens: number;
  messages: Array<{ role: 'user' | 'assistant'; content: string | MessagesBlock[] }>;
  system?: string | MessagesBlock[] | undefined;
  tools?: Array<{ name: string; description?: string; input_schema?: Record<string, unknown>; type?: string }>;
  tool_choice?: (ToolChoice & { disable_parallel_tool_use?: boolean }) | undefined;
  temperature?: number | undefined;
  top_p?: number | undefined;
  stop_sequences?: string[] | undefined;
  metadata?: { user_id?: string | null } | undefined;
  stream?: boolean | undefined;
  [k: string]: unknown;
}

export interface AnthropicMessageOut {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Array<
    { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  >;
  stop_reason: string | null;
  stop_sequence: null;
  usage: { input_tokens: number; output_tokens: number };
}

const refuse = (message: string): never => {
  throw new UpstreamError('rejected', message);
};

// ---- request: Anthropic -> OpenAI ----

export function fromMessagesRequest(req: MessagesRequest): ChatRequest {
  const messages: ChatMessage[] = [];
  const system = systemText(req.system);
  if (system) messages.push({ role: 'system', content: system });
  for (const [i, turn] of req.messages.entries()) {
    const where = `messages[${i}]`;
    if (turn.role === 'user') messages.push(...userMessages(turn.content, where));
    else messages.push(assistantMessage(turn.content, where));
  }

  const out: ChatRequest = { model: req.model ?? '', messages, max_tokens: req.max_tokens };
  if (req.model === undefined) delete (out as { model?: string }).model;
  if (req.temperature !== undefined) out.temperature = req.temperature;
  if (req.top_p !== undefined) out.top_p = req.top_p;
  if (req.stop_sequences?.length) out.stop = req.stop_sequences;
  if (req.stream) out.stream = true;
  if (typeof req.metadata?.user_id === 'string' && req.metadata.user_id) out.user = req.metadata.user_id;
  if (req.tools?.length) {
    out.tools = req.tools.map((t, j): ChatTool => {
      if (!t.input_schema) {
        refuse(
          `tools[${j}]: server tools ("${String(t.type)}") are not supported: declare the tool with an input_schema ` +
            'and run it in your client, answering its tool_use with a tool_result',
        );
      }
      return {
        type: 'function',
        function: {
          name: t.name,
          ...(t.description ? { description: t.description } : {}),
          parameters: t.input_schema,
        },
      };
    });
  }
  const choice = req.tool_choice;
  if (choice) {
    if (choice.type === 'tool') out.tool_choice = { type: 'function', function: { name: choice.name } };
    else out.tool_choice = choice.type === 'any' ? 'required' : choice.type;
    if (choice.disable_parallel_tool_use) out.parallel_tool_calls = false;
  }
  return out;
}

function systemText(system: MessagesRequest['system']): string {
  if (system === undefined) return '';
  if (typeof system === 'string') return system;
  return system.map((b, j) => textOf(b, `system[${j}]`)).join('\n\n');
}

function textOf(block: MessagesBlock, where: string): string {
  if (block?.type === 'text' && typeof block.text === 'string') return block.text;
  if (block?.type === 'text') return refuse(`${where}: a text block needs its text`);
  const type = typeof block?.type === 'string' ? `a "${block.type}"` : 'an untyped';
  return refuse(`${where}: ${type} block is not supported here`);
}

/** A field the request must give as non-empty text: JSON allows any value there, and no other is taken. */
const textField = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 ? value : undefined;

/** Tool results become `tool` messages (first: they answer the assistant's calls), the rest one user message. */
function userMessages(content: string | MessagesBlock[], where: string): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const results: ChatMessage[] = [];
  const parts: Array<Record<string, unknown>> = [];
  for (const [j, b] of content.entries()) {
    const at = `${where}.content[${j}]`;
    if (b.type === 'tool_result') {
      const id = textField(b.tool_use_id) ?? refuse(`${at}: tool_use_id is required (a string)`);
      const content: unknown = b.content ?? '';
      if (typeof content !== 'string' && !Array.isArray(content)) refuse(`${at}.content must be text or blocks`);
      const text =
        typeof content === 'string'
          ? content
          : (content as unknown[]).map((c, k) => textOf(c as MessagesBlock, `${at}.content[${k}]`)).join('\n');
      results.push({ role: 'tool', tool_call_id: id, content: b.is_error === true ? `Error: ${text}` : text });
    } else if (b.type === 'text') {
      parts.push({ type: 'text', text: textOf(b, at) });
    } else if (b.type === 'image') {
      parts.push({ type: 'image_url', image_url: { url: imageUrl(b, at) } });
    } else if (b.type !== 'thinking' && b.type !== 'redacted_thinking') {
      refuse(
        `${at}: "${b.type}" blocks are not supported: send text, image and tool_result blocks ` +
          "(a document's text as a text block)",
      );
    }
  }
  return parts.length ? [...results, { role: 'user', content: parts }] : results;
}

function imageUrl(b: MessagesBlock, where: string): string {
  const s = b.source;
  if (s?.type === 'base64' && typeof s.media_type === 'string' && typeof s.data === 'string')
    return `data:${s.media_type};base64,${s.data}`;
  if (s?.type === 'url' && typeof s.url === 'string') return s.url;
  return refuse(`${where}: an image source must be base64 or url`);
}

function assistantMessage(content: string | MessagesBlock[], where: string): ChatMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  let text = '';
  const calls: NonNullable<ChatMessage['tool_calls']> = [];
  for (const [j, b] of content.entries()) {
    const at = `${where}.content[${j}]`;
    if (b.type === 'text') text += textOf(b, at);
    else if (b.type === 'tool_use') {
      const id = textField(b.id);
      const name = textField(b.name);
      if (!id || !name) return refuse(`${at}: a tool_use block needs id and name (strings)`);
      calls.push({ id, type: 'function', function: { name, arguments: JSON.stringify(b.input ?? {}) } });
    } else if (b.type !== 'thinking' && b.type !== 'redacted_thinking') {
      refuse(`${at}: "${b.type}" blocks are not supported in assistant turns: send text and tool_use blocks`);
    }
  }
  return { role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}) };
}

// ---- answer: OpenAI -> Anthropic ----

/** OpenAI's finish reasons back to Anthropic's stop reasons: the first of the adapter's map that gives each. */
const STOP_REASON: Record<string, string> = {};
for (const [stop, finish] of Object.entries(FINISH)) STOP_REASON[finish] ??= stop;
STOP_REASON.function_call = 'tool_use';

export const stopReasonOf = (finish: string | null | undefined): string | null =>
  finish ? (STOP_REASON[finish] ?? 'end_turn') : null;

/** A tool call's arguments as Anthropic's `input` object; what is not a JSON object is kept under `arguments`. */
function inputOf(args: string): Record<string, unknown> {
  try {
    const v = JSON.parse(args || '{}') as unknown;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {}
  return { arguments: args };
}

const messageId = (id: string) => (id.startsWith('msg_') ? id : `msg_${id || Date.now().toString(36)}`);

export function toMessagesResponse(c: ChatCompletion, model: string): AnthropicMessageOut {
  const choice = c.choices[0];
  const content: AnthropicMessageOut['content'] = [];
  if (choice?.message.content) content.push({ type: 'text', text: choice.message.content });
  for (const call of choice?.message.tool_calls ?? []) {
    content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: inputOf(call.function.arguments) });
  }
  return {
    id: messageId(c.id),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReasonOf(choice?.finish_reason),
    stop_sequence: null,
    usage: { input_tokens: c.usage?.prompt_tokens ?? 0, output_tokens: c.usage?.completion_tokens ?? 0 },
  };
}

/** An event of the stream sent to the client (StreamEvent, as this side writes it). */
export type OutEvent = { type: StreamEvent['type'] } & Record<string, unknown>;

/**
 * Turns a stream of OpenAI chunks into Anthropic's events: `message_start` first, one content block per text run
 * or tool call (opened and closed in turn), and `end(usage)` gives the closing `message_delta` and `message_stop`.
 */
export function messagesStreamTranslator(model: string) {
  let started = false;
  let index = -1;
  let open: { kind: 'text' } | { kind: 'tool'; call: number } | undefined;
  let stopReason: string | null = null;

  const start = (id: string): OutEvent[] => {
    if (started) return [];
    started = true;
    return [
      {
        type: 'message_start',
        message: {
          id: messageId(id),
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 0, output_tokens: 0 },
        },
      },
    ];
  };
  const close = (): OutEvent[] => {
    if (!open) return [];
    open = undefined;
    return [{ type: 'content_block_stop', index }];
  };

  return {
    chunk(c: ChatChunk): OutEvent[] {
      const events = start(c.id);
      const choice = c.choices?.[0];
      if (!choice) return events;
      if (choice.finish_reason) stopReason = stopReasonOf(choice.finish_reason);
      const text = choice.delta?.content;
      if (text) {
        if (open?.kind !== 'text') {
          events.push(...close());
          open = { kind: 'text' };
          events.push({ type: 'content_block_start', index: ++index, content_block: { type: 'text', text: '' } });
        }
        events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } });
      }
      for (const piece of choice.delta?.tool_calls ?? []) {
        if (open?.kind !== 'tool' || open.call !== piece.index) {
          events.push(...close());
          open = { kind: 'tool', call: piece.index };
          events.push({
            type: 'content_block_start',
            index: ++index,
            content_block: { type: 'tool_use', id: piece.id ?? '', name: piece.function?.name ?? '', input: {} },
          });
        }
        const json = piece.function?.arguments;
        if (json)
          events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: json } });
      }
      return events;
    },
    end(usage: Pick<Usage, 'prompt_tokens' | 'completion_tokens'> | undefined): OutEvent[] {
      return [
        ...start(''),
        ...close(),
        {
          type: 'message_delta',
          delta: { stop_reason: stopReason ?? 'end_turn', stop_sequence: null },
          usage: { input_tokens: usage?.prompt_tokens ?? 0, output_tokens: usage?.completion_tokens ?? 0 },
        },
        { type: 'message_stop' },
      ];
    },
  };
}

/** Anthropic's error `type` for an HTTP status. */
export function anthropicErrorType(status: number): string {
  const types: Record<number, string> = {
    401: 'authentication_error',
    402: 'billing_error',
    403: 'permission_error',
    404: 'not_found_error',
    413: 'request_too_large',
    429: 'rate_limit_error',
    503: 'overloaded_error',
    504: 'timeout_error',
  };
  return types[status] ?? (status < 500 ? 'invalid_request_error' : 'api_error');
}
