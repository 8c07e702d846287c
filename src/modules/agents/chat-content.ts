import type { ServiceContext } from '../../context.ts';
import type { ChatFileRow, MessageRow } from '../../db/schema/index.ts';
import { ValidationError } from '../../lib/errors.ts';
import type { ChatMessage } from '../../llm-upstreams/types.ts';
import { filesForChat } from './files.service.ts';
import type { AgentChatRequest } from './schema.ts';

/** A chat's messages as it stores them and as the model reads them: text, files and images, history trimmed. */

type Content = AgentChatRequest['messages'][number]['content'];
/** The most of one file's text a message carries. */
const FILE_TEXT_CHARS = 100_000;

/** Files named by the messages' content parts, loaded once (another account's or unknown: 404). */
export async function filesOf(
  ctx: ServiceContext,
  messages: AgentChatRequest['messages'],
): Promise<Map<string, ChatFileRow>> {
  const ids = messages.flatMap((m) =>
    typeof m.content === 'string' ? [] : m.content.flatMap((p) => (p.type === 'file' ? [p.file.file_id] : [])),
  );
  return filesForChat(ctx.db, ctx.accountId, [...new Set(ids)]);
}

/**
 * A message as stored and as the model reads it: text parts as they are, a document's text after its name, an
 * image as an image part (only for a model with vision: otherwise 422).
 */
export function contentOf(
  content: Content,
  files: Map<string, ChatFileRow>,
  vision: { ok: boolean; model: string },
): { text: string; parts: Array<Record<string, unknown>> | undefined } {
  if (typeof content === 'string') return { text: content, parts: undefined };
  const texts: string[] = [];
  const images: Array<Record<string, unknown>> = [];
  for (const part of content) {
    if (part.type === 'text') {
      texts.push(part.text);
      continue;
    }
    const file = files.get(part.file.file_id);
    if (!file) continue;
    if (file.text === null) {
      if (!vision.ok) {
        throw new ValidationError(`Model ${vision.model} cannot read images: give the agent a model with vision`, [
          { field: 'body.messages', message: `${file.filename} is an image` },
        ]);
      }
      texts.push(`[Image: ${file.filename}]`);
      images.push({
        type: 'image_url',
        image_url: { url: `data:${file.mimeType};base64,${file.bytes.toString('base64')}` },
      });
    } else {
      texts.push(`[File: ${file.filename}]\n${file.text.slice(0, FILE_TEXT_CHARS)}`);
    }
  }
  const text = texts.join('\n\n');
  return { text, parts: images.length ? [{ type: 'text', text }, ...images] : undefined };
}

/** Stored messages as the model reads them (tool calls and their results included). */
export function toChatMessage(row: MessageRow): ChatMessage {
  if (row.role === 'tool') return { role: 'tool', tool_call_id: row.toolCallId ?? '', content: row.content ?? '' };
  if (row.role === 'assistant' && row.toolCalls?.length) {
    return { role: 'assistant', content: row.content, tool_calls: row.toolCalls };
  }
  return { role: row.role, content: row.content ?? '' };
}

/** The newest messages that fit in `budget` tokens, never starting on a tool result cut from its call. */
export function trimToWindow(history: ChatMessage[], budget: number): ChatMessage[] {
  const kept: ChatMessage[] = [];
  let used = 0;
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i];
    if (!m) continue;
    // An estimate (4 characters a token) is enough to trim by, and costs no tokenizer on every turn.
    const chars =
      (typeof m.content === 'string' ? m.content.length : 0) + (m.tool_calls ? JSON.stringify(m.tool_calls).length : 0);
    used += Math.ceil(chars / 4) + 4;
    if (used > budget) break;
    kept.unshift(m);
  }
  while (kept[0]?.role === 'tool') kept.shift();
  return kept;
}
