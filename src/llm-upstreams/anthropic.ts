import { JSON_DEPTH_MESSAGE, nestedDeeperThan } from '../lib/json.ts';
import { argText } from '../lib/text.ts';
import type { CatalogModel } from './catalog.ts';
import { faultOf, postEvents, postJson } from './http.ts';
import type {
  ChatChunk,
  ChatChunkDelta,
  ChatCompletion,
  ChatMessage,
  ChatRequest,
  ChatToolCall,
  Upstream,
  UpstreamFault,
  Usage,
} from './types.ts';
import { UpstreamError } from './types.ts';

export const ANTHROPIC_VERSION = '2023-06-01';

/**
 * Anthropic's Messages API behind the OpenAI chat-completions shape, both ways, tool calls and streams
 * included. What has no Anthropic equivalent is refused with a 400 when ignoring it would change the answer
 * (`n` > 1, `logprobs`, audio or file parts) and dropped when it only tunes sampling (`seed`, penalties,
 * `logit_bias`). Deliberate choices:
 * - `response_format` json_object / json_schema: Anthropic has no JSON mode, so an instruction (with the
 *   schema) is appended to `system`. The model follows it well, but nothing enforces it.
 * - `temperature` is clamped to Anthropic's 0..1; when both it and `top_p` are given, only `temperature` is
 *   sent, since current Claude models refuse the pair.
 * - `max_tokens` is capped at the model's `maxOutputTokens`: the gateway holds credits for at most that.
 */
export function anthropicUpstream(opts: { baseUrl: string; apiKey: string | undefined; timeoutMs: number }): Upstream {
  // The SDKs' base URL has no /v1; accept one anyway, operators copy either form.
  const url = new URL(`${opts.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1/messages`);
  const headers: Record<string, string> = {
    'anthropic-version': ANTHROPIC_VERSION,
    ...(opts.apiKey ? { 'x-api-key': opts.apiKey } : {}),
  };

  return {
    prepare(model, request, stream) {
      const payload = toAnthropicRequest(model, request);
      return Buffer.from(JSON.stringify(stream ? { ...payload, stream: true } : payload));
    },

    async complete({ model, body, signal }) {
      const message = (await postJson(url, headers, body, signal, opts.timeoutMs)) as AnthropicMessage;
      if (!Array.isArray(message?.content)) throw new UpstreamError('failed', 'The model provider sent no message');
      return toCompletion(message, model.id);
    },

    async *stream({ model, body, signal }) {
      const events = postEvents(url, headers, body, signal, opts.timeoutMs, (ev) => ev);
      const translate = streamTranslator(model.id);
      try {
        for await (const ev of events) {
          const { chunks, done } = translate(JSON.parse(ev.data) as StreamEvent);
          yield* chunks;
          if (done) return;
        }
      } catch (err) {
        throw faultOf(err, signal);
      }
      throw new UpstreamError('failed', 'The model provider stream ended before the message did');
    },
  };
}

// ---- Anthropic shapes, as far as we write and read them ----

interface TextBlock {
  type: 'text';
  text: string;
}
interface ImageBlock {
  type: 'image';
  source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };
}
interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}
interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string;
}
type ContentBlock = TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock;

interface Turn {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

export type ToolChoice = { type: 'auto' | 'any' | 'none' } | { type: 'tool'; name: string };

interface AnthropicRequest {
  model: string;
  max_tokens: number;
  messages: Turn[];
  system?: string;
  tools?: Array<{ name: string; description?: string; input_schema: Record<string, unknown> }>;
  tool_choice?: ToolChoice & { disable_parallel_tool_use?: boolean };
  temperature?: number;
  top_p?: number;
  stop_sequences?: string[];
  metadata?: { user_id: string };
  stream?: boolean;
}

interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

interface AnthropicMessage {
  id: string;
  content: Array<{ type: string; text?: string; id?: string; name?: string; input?: unknown }>;
  stop_reason: string | null;
  usage?: AnthropicUsage;
}

export type StreamEvent =
  | { type: 'message_start'; message: { id: string; usage?: AnthropicUsage } }
  | {
      type: 'content_block_start';
      index: number;
      content_block: { type: string; text?: string; id?: string; name?: string };
    }
  | { type: 'content_block_delta'; index: number; delta: { type: string; text?: string; partial_json?: string } }
  | { type: 'content_block_stop'; index: number }
  | { type: 'message_delta'; delta: { stop_reason?: string | null }; usage?: AnthropicUsage }
  | { type: 'message_stop' }
  | { type: 'ping' }
  | { type: 'error'; error?: { type?: string; message?: string } };

// ---- request: OpenAI -> Anthropic ----

function toAnthropicRequest(model: CatalogModel, request: ChatRequest): AnthropicRequest {
  if (typeof request.n === 'number' && request.n > 1) refuseWith('Anthropic models answer one choice per request (n)');
  if (request.logprobs === true) refuseWith('Anthropic models do not report logprobs');

  const { system, turns } = toTurns(request.messages ?? []);
  const jsonInstruction = responseFormatInstruction(request.response_format);
  if (jsonInstruction) system.push(jsonInstruction);

  const asked = request.max_completion_tokens ?? request.max_tokens ?? model.maxOutputTokens;
  const out: AnthropicRequest = {
    model: model.upstreamModel,
    max_tokens: Math.max(1, Math.min(asked, model.maxOutputTokens)),
    messages: turns,
  };
  if (system.length) out.system = system.join('\n\n');

  if (typeof request.temperature === 'number') out.temperature = Math.min(1, Math.max(0, request.temperature));
  else if (typeof request.top_p === 'number') out.top_p = request.top_p;

  const stops = request.stop == null ? [] : Array.isArray(request.stop) ? request.stop : [request.stop];
  if (stops.length) out.stop_sequences = stops;

  if (request.tools?.length) {
    out.tools = request.tools.map((t) => ({
      name: t.function.name,
      ...(t.function.description ? { description: t.function.description } : {}),
      input_schema: t.function.parameters ?? { type: 'object', properties: {} },
    }));
    const choice = toToolChoice(request.tool_choice);
    const serial = request.parallel_tool_calls === false && choice?.type !== 'none';
    if (choice || serial)
      out.tool_choice = { ...(choice ?? { type: 'auto' }), ...(serial ? { disable_parallel_tool_use: true } : {}) };
  }

  if (typeof request.user === 'string' && request.user) out.metadata = { user_id: request.user };
  return out;
}

/** The caller's request cannot be expressed for Anthropic: theirs to fix, so a 400 through the gateway. */
function refuseWith(message: string): never {
  throw new UpstreamError('rejected', message);
}

function toToolChoice(choice: unknown): ToolChoice | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any' };
  const name = (choice as { function?: { name?: unknown } }).function?.name;
  if (typeof name === 'string') return { type: 'tool', name };
  return refuseWith('tool_choice must be "auto", "none", "required" or {type: "function", function: {name}}');
}

function responseFormatInstruction(format: unknown): string | undefined {
  const f = format as { type?: string; json_schema?: { schema?: unknown } } | null | undefined;
  if (f?.type === 'json_object') {
    return 'Answer with a single valid JSON object and nothing else: no prose before or after it, no Markdown code fences.';
  }
  if (f?.type === 'json_schema') {
    const schema = JSON.stringify(f.json_schema?.schema ?? {});
    return `Answer with a single valid JSON value that conforms to this JSON Schema, and nothing else: no prose before or after it, no Markdown code fences.\nSchema: ${schema}`;
  }
  return undefined;
}

/** System and developer messages go to `system`; the rest become strictly alternating user/assistant turns. */
function toTurns(messages: ChatMessage[]): { system: string[]; turns: Turn[] } {
  const system: string[] = [];
  const turns: Turn[] = [];
  // Anthropic refuses two turns of one role in a row: a tool result, or text after it, joins the user turn.
  const add = (role: Turn['role'], blocks: ContentBlock[]) => {
    if (!blocks.length) return;
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };

  for (const [i, m] of messages.entries()) {
    const where = `messages[${i}]`;
    switch (m.role) {
      case 'system':
      case 'developer': {
        const text = plainText(m.content, where);
        if (text) system.push(text);
        break;
      }
      case 'user':
        add('user', userBlocks(m.content, where));
        break;
      case 'assistant': {
        const text = plainText(m.content, where);
        const calls = (m.tool_calls ?? []).map((c, j) => toolUseBlock(c, `${where}.tool_calls[${j}]`));
        add('assistant', [...(text ? [{ type: 'text' as const, text }] : []), ...calls]);
        break;
      }
      case 'tool': {
        if (!m.tool_call_id) refuseWith(`${where}: a tool message needs tool_call_id`);
        const text = plainText(m.content, where);
        add('user', [{ type: 'tool_result', tool_use_id: m.tool_call_id, ...(text ? { content: text } : {}) }]);
        break;
      }
      default:
        refuseWith(`${where}: role "${String(m.role)}" is not supported by Anthropic models`);
    }
  }

  // A final assistant turn is a prefill, and Anthropic refuses one ending in whitespace.
  const last = turns.at(-1);
  const tail = last?.role === 'assistant' ? last.content.at(-1) : undefined;
  if (tail?.type === 'text') tail.text = tail.text.trimEnd();
  return { system, turns };
}

type Part = Record<string, unknown>;

/** Text of string or text-part content; refusal parts of earlier assistant turns count as text. */
function plainText(content: ChatMessage['content'], where: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  return content
    .map((p) => {
      if (p.type === 'text' && typeof p.text === 'string') return p.text;
      if (p.type === 'refusal' && typeof p.refusal === 'string') return p.refusal;
      return refuseWith(`${where}: content part "${String(p.type)}" is only accepted in user messages`);
    })
    .join('');
}

function userBlocks(content: ChatMessage['content'], where: string): ContentBlock[] {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  const blocks: ContentBlock[] = [];
  for (const [j, p] of content.entries()) {
    if (p.type === 'text') {
      if (typeof p.text === 'string' && p.text) blocks.push({ type: 'text', text: p.text });
    } else if (p.type === 'image_url') {
      blocks.push(imageBlock(p, `${where}.content[${j}]`));
    } else {
      refuseWith(`${where}.content[${j}]: "${String(p.type)}" parts are not supported by Anthropic models`);
    }
  }
  return blocks;
}

function imageBlock(part: Part, where: string): ImageBlock {
  const raw = part.image_url as { url?: unknown } | string | undefined;
  const url = typeof raw === 'string' ? raw : raw?.url;
  if (typeof url !== 'string') return refuseWith(`${where}: image_url.url is missing`);
  if (url.startsWith('data:')) {
    const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
    if (!m?.[1] || m[2] === undefined) return refuseWith(`${where}: an image data URL must be base64-encoded`);
    return { type: 'image', source: { type: 'base64', media_type: m[1], data: m[2] } };
  }
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  return refuseWith(`${where}: image_url.url must be an http(s) URL or a data URL`);
}

function toolUseBlock(call: ChatToolCall, where: string): ToolUseBlock {
  let input: unknown;
  try {
    input = JSON.parse(call.function.arguments || '{}');
  } catch {
    return refuseWith(`${where}.function.arguments is not valid JSON`);
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return refuseWith(`${where}.function.arguments must be a JSON object`);
  }
  // A string in the request, so past the body's depth check: deeper, serializing the upstream request overflows.
  if (nestedDeeperThan(input)) return refuseWith(`${where}.function.arguments: ${JSON_DEPTH_MESSAGE}`);
  return { type: 'tool_use', id: call.id, name: call.function.name, input };
}

// ---- response: Anthropic -> OpenAI ----

/** Anthropic's stop reasons as OpenAI finish reasons (read backwards by the Messages route: anthropic-messages.ts). */
export const FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

const finishReason = (stop: string | null | undefined) => (stop ? (FINISH[stop] ?? 'stop') : null);

/** Cached prompt tokens are prompt tokens too: they are billed as such. */
const promptTokensOf = (u: AnthropicUsage | undefined) =>
  (u?.input_tokens ?? 0) + (u?.cache_creation_input_tokens ?? 0) + (u?.cache_read_input_tokens ?? 0);

const usageOf = (prompt: number, completion: number): Usage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
});

const nowSeconds = () => Math.floor(Date.now() / 1000);

function toCompletion(message: AnthropicMessage, modelId: string): ChatCompletion {
  const text = message.content
    .filter((b) => b.type === 'text')
    .map((b) => b.text ?? '')
    .join('');
  const toolCalls: ChatToolCall[] = message.content
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({
      id: argText(b.id),
      type: 'function',
      function: { name: argText(b.name), arguments: JSON.stringify(b.input ?? {}) },
    }));
  return {
    id: message.id,
    object: 'chat.completion',
    created: nowSeconds(),
    model: modelId,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text || (toolCalls.length ? null : ''),
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: finishReason(message.stop_reason),
        logprobs: null,
      },
    ],
    usage: usageOf(promptTokensOf(message.usage), message.usage?.output_tokens ?? 0),
  };
}

/**
 * Turns Anthropic stream events into OpenAI chunks. Tool calls are numbered among tool calls only (OpenAI's
 * `index`), while Anthropic numbers every content block; thinking and other block kinds are skipped.
 */
function streamTranslator(modelId: string) {
  let id = '';
  const created = nowSeconds();
  let promptTokens = 0;
  let completionTokens = 0;
  const tools = new Map<number, { index: number; sentArguments: boolean }>();

  const chunk = (delta: ChatChunkDelta, finish: string | null = null): ChatChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: modelId,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const toolDelta = (index: number, fn: { name?: string; arguments: string }, callId?: string) =>
    chunk({ tool_calls: [{ index, ...(callId ? { id: callId, type: 'function' as const } : {}), function: fn }] });

  return (ev: StreamEvent): { chunks: ChatChunk[]; done: boolean } => {
    const none = { chunks: [], done: false };
    switch (ev.type) {
      case 'message_start':
        id = ev.message.id;
        promptTokens = promptTokensOf(ev.message.usage);
        completionTokens = ev.message.usage?.output_tokens ?? 0;
        return { chunks: [chunk({ role: 'assistant', content: '' })], done: false };
      case 'content_block_start': {
        const block = ev.content_block;
        if (block.type === 'text') return block.text ? { chunks: [chunk({ content: block.text })], done: false } : none;
        if (block.type !== 'tool_use') return none;
        const index = tools.size;
        tools.set(ev.index, { index, sentArguments: false });
        return {
          chunks: [toolDelta(index, { name: String(block.name), arguments: '' }, String(block.id))],
          done: false,
        };
      }
      case 'content_block_delta': {
        if (ev.delta.type === 'text_delta' && ev.delta.text)
          return { chunks: [chunk({ content: ev.delta.text })], done: false };
        const tool = tools.get(ev.index);
        if (ev.delta.type !== 'input_json_delta' || !tool || !ev.delta.partial_json) return none;
        tool.sentArguments = true;
        return { chunks: [toolDelta(tool.index, { arguments: ev.delta.partial_json })], done: false };
      }
      case 'content_block_stop': {
        // A call without parameters may stream no JSON at all; OpenAI clients expect an object.
        const tool = tools.get(ev.index);
        if (!tool || tool.sentArguments) return none;
        tool.sentArguments = true;
        return { chunks: [toolDelta(tool.index, { arguments: '{}' })], done: false };
      }
      case 'message_delta':
        // Counts in message_delta are cumulative; newer API versions repeat the input counts there too.
        if (ev.usage?.output_tokens !== undefined) completionTokens = ev.usage.output_tokens;
        if (ev.usage?.input_tokens !== undefined) promptTokens = Math.max(promptTokens, promptTokensOf(ev.usage));
        return ev.delta.stop_reason ? { chunks: [chunk({}, finishReason(ev.delta.stop_reason))], done: false } : none;
      case 'message_stop':
        return {
          chunks: [
            {
              id,
              object: 'chat.completion.chunk',
              created,
              model: modelId,
              choices: [],
              usage: usageOf(promptTokens, completionTokens),
            },
          ],
          done: true,
        };
      case 'error':
        throw streamFault(ev.error);
      default:
        return none; // ping, and event types added later
    }
  };
}

const STREAM_FAULTS: Record<string, UpstreamFault> = {
  overloaded_error: 'failed',
  api_error: 'failed',
  rate_limit_error: 'rate_limited',
  invalid_request_error: 'rejected',
  request_too_large: 'rejected',
  not_found_error: 'rejected',
  timeout_error: 'timeout',
};

/** An `error` event mid-stream: the HTTP status was already 200, so the error type says what happened. */
function streamFault(error: { type?: string; message?: string } | undefined): UpstreamError {
  const type = error?.type ?? 'api_error';
  const detail = error?.message ? `: ${error.message.slice(0, 500)}` : '';
  return new UpstreamError(STREAM_FAULTS[type] ?? 'failed', `The model provider reported ${type}${detail}`);
}
