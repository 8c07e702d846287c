import type { ServiceContext } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { ChatFileRow } from '../../db/schema/index.ts';
import {
  ACCEPTED_DOCUMENTS,
  DOCUMENT_KINDS,
  IMAGE_KINDS,
  sniffDocument,
  uploadedDocumentText,
} from '../../lib/documents.ts';
import { NotFoundError, ValidationError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import * as repo from './repo.ts';
import { ownedAgent } from './service.ts';

/**
 * Chat files (SPEC §4 POST /agents/:agentId/chat/files): the kind is decided by the bytes (PDF, DOCX, CSV, TXT
 * and MD have their text read; PNG, JPEG, GIF and WebP are kept for models with vision); stored in the
 * database so every instance serves them; a chat message names one by `fileId`.
 */

export interface ChatFile {
  fileId: string;
  filename: string;
  mimeType: string;
  size: number;
  purpose: 'chat';
}

const toChatFile = (row: ChatFileRow): ChatFile => ({
  fileId: row.id,
  filename: row.filename,
  mimeType: row.mimeType,
  size: row.size,
  purpose: 'chat',
});

export async function uploadChatFile(
  ctx: ServiceContext,
  agentId: string,
  file: { filename: string; bytes: Buffer },
): Promise<ChatFile> {
  const agent = await ownedAgent(ctx, agentId);
  // Control characters (and lone surrogates) never reach the database or a page.
  const filename =
    [...file.filename]
      .filter((c) => {
        const cp = c.codePointAt(0) ?? 0;
        return cp >= 0x20 && (cp < 0xd800 || cp > 0xdfff);
      })
      .join('')
      .slice(0, 255) || 'file';
  const kind = sniffDocument(file.bytes, filename);
  if (!kind) {
    throw new ValidationError(`The file is not a ${ACCEPTED_DOCUMENTS} file`, [
      { field: 'file', message: `accepted: ${ACCEPTED_DOCUMENTS}` },
    ]);
  }
  const text = IMAGE_KINDS.includes(kind)
    ? null
    : await uploadedDocumentText(file.bytes, kind, ctx.deps.config.documents, 'file');
  const row = await repo.insertChatFile(ctx.db, {
    id: newId('chatFile'),
    accountId: ctx.accountId,
    agentId: agent.id,
    filename,
    mimeType: DOCUMENT_KINDS[kind],
    kind,
    size: file.bytes.length,
    bytes: file.bytes,
    text,
  });
  return toChatFile(row);
}

/** The caller's files by id (another account's: 404, as a missing one). */
export async function filesForChat(db: Executor, accountId: string, ids: string[]): Promise<Map<string, ChatFileRow>> {
  if (ids.length === 0) return new Map();
  const rows = await repo.findChatFiles(db, accountId, ids);
  const found = new Map(rows.map((r) => [r.id, r]));
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length) throw new NotFoundError(`Chat file ${missing.join(', ')} not found`);
  return found;
}
