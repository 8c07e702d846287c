import type { CancelSignal } from '../lib/cancel.ts';
import type { CatalogModel } from './catalog.ts';

/** OpenAI chat-completions shapes, as far as the gateway reads them; unknown fields pass through. */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | Array<Record<string, unknown>> | null;
  name?: string;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
  [k: string]: unknown;
}

export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean | undefined;
  max_tokens?: number | undefined;
  max_completion_tokens?: number | undefined;
  temperature?: number | undefined;
  top_p?: number | undefined;
  stop?: string | string[] | null | undefined;
  tools?: ChatTool[] | undefined;
  tool_choice?: unknown;
  response_format?: unknown;
  seed?: number | null | undefined;
  stream_options?: { include_usage?: boolean } | null | undefined;
  [k: string]: unknown;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[]; [k: string]: unknown };
    finish_reason: string | null;
    [k: string]: unknown;
  }>;
  usage?: Usage | undefined;
  [k: string]: unknown;
}

export interface ChatChunkDelta {
  role?: 'assistant';
  content?: string | null;
  tool_calls?: Array<{
    index: number;
    id?: string;
    type?: 'function';
    function?: { name?: string; arguments?: string };
  }>;
  [k: string]: unknown;
}

export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{ index: number; delta: ChatChunkDelta; finish_reason: string | null; [k: string]: unknown }>;
  usage?: Usage | null | undefined;
  [k: string]: unknown;
}

export interface UpstreamCall {
  model: CatalogModel;
  /** The request as this upstream reads it, from `prepare`. */
  body: Buffer;
  signal: CancelSignal;
}

/** One upstream API; adapters translate to and from the OpenAI format. */
export interface Upstream {
  /**
   * The body sent upstream for a request, serialized once: the credit hold is sized from its bytes (what the
   * upstream reads is what it bills) and the same bytes go on the wire. Throws an `UpstreamError` ('rejected')
   * for a request this upstream cannot express.
   */
  prepare(model: CatalogModel, request: ChatRequest, stream: boolean): Buffer;
  complete(call: UpstreamCall): Promise<ChatCompletion>;
  /** Chunks in OpenAI form; the last one carries `usage` when the upstream reports it. */
  stream(call: UpstreamCall): AsyncIterable<ChatChunk>;
  /** OpenAI's `POST /embeddings`, the body passed as it is; absent where the upstream serves none. */
  embed?(call: UpstreamCall): Promise<EmbeddingList>;
}

/** OpenAI's embeddings answer, as far as the gateway reads it. */
export interface EmbeddingList {
  object: 'list';
  data: unknown[];
  model: string;
  usage?: { prompt_tokens: number; total_tokens?: number } | undefined;
  [k: string]: unknown;
}

export type UpstreamFault = 'rate_limited' | 'rejected' | 'failed' | 'timeout';

/** A fault at the upstream, classified so the gateway can answer the right §7 error. */
export class UpstreamError extends Error {
  constructor(
    readonly fault: UpstreamFault,
    message: string,
    readonly upstreamStatus?: number,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
}

/** Who pays, and under which ledger type: the gateway itself, MCP's agent, or an agent chat. */
export interface Billing {
  type: 'llm' | 'mcp' | 'agent' | 'task' | 'knowledge';
  description?: string;
}

export interface Credits {
  consumed: number;
  remaining: number;
}
