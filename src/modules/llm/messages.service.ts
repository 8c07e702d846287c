import { requireScope, type ServiceContext } from '../../context.ts';
import type { CancelSignal } from '../../lib/cancel.ts';
import {
  type AnthropicMessageOut,
  fromMessagesRequest,
  type MessagesRequest,
  toMessagesResponse,
} from '../../llm-upstreams/anthropic-messages.ts';
import { countTokens, promptText } from '../../llm-upstreams/tokens.ts';
import type { ChatRequest } from '../../llm-upstreams/types.ts';
import {
  type Billing,
  type CompletionStream,
  type Credits,
  createCompletion,
  resolveModel,
  streamCompletion,
  upstreamFault,
} from './service.ts';

/** The Anthropic request in the gateway's shape; one it cannot express is the caller's 400. */
function translated(request: MessagesRequest): ChatRequest {
  try {
    return fromMessagesRequest(request);
  } catch (err) {
    throw upstreamFault(err);
  }
}

/**
 * One Anthropic Messages call, answered through whichever upstream serves the model: the chat completion's
 * admission, hold and single settlement (createCompletion), in Anthropic's shape.
 */
export async function createMessage(
  ctx: ServiceContext,
  request: MessagesRequest,
  opts: { signal: CancelSignal; billing: Billing },
): Promise<{ message: AnthropicMessageOut; credits: Credits }> {
  requireScope(ctx, 'llm-all');
  const { completion, credits } = await createCompletion(ctx, translated(request), opts);
  return { message: toMessagesResponse(completion, completion.model), credits };
}

export type MessageStream = CompletionStream & { model: string };

/** A streamed Messages call: the chat stream (usage asked for, Anthropic reports it at the end). */
export function streamMessage(
  ctx: ServiceContext,
  request: MessagesRequest,
  opts: { signal: CancelSignal; billing: Billing },
): Promise<MessageStream> {
  requireScope(ctx, 'llm-all');
  const chat = translated(request);
  chat.stream = true;
  chat.stream_options = { include_usage: true };
  const model = resolveModel(ctx, chat.model).id;
  return streamCompletion(ctx, chat, opts).then((s) => Object.assign(s, { model }));
}

/** `count_tokens`: the prompt counted with the gateway's tokenizer (an estimate for every upstream); free. */
export async function countMessageTokens(ctx: ServiceContext, request: MessagesRequest): Promise<number> {
  requireScope(ctx, 'llm-all');
  const chat = translated(request);
  resolveModel(ctx, chat.model);
  const tools = chat.tools?.length ? await countTokens(JSON.stringify(chat.tools)) : 0;
  return (await countTokens(promptText(chat.messages))) + tools;
}
