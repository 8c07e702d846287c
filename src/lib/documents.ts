/**
 * Documents people hand us (chat files, knowledge sources): their kind decided by their bytes, never by their
 * name, and their text. PDF (unpdf), DOCX (mammoth), CSV (papaparse), plain text and markdown are read; PNG,
 * JPEG, GIF and WebP are recognised as images (kept for models with vision). Anything else is refused by the
 * caller. The parsers load on first use, not at start-up.
 */

export const DOCUMENT_KINDS = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  csv: 'text/csv',
  txt: 'text/plain',
  md: 'text/markdown',
  png: 'image/png',
  jpg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
} as const;
export type DocumentKind = keyof typeof DOCUMENT_KINDS;
export const IMAGE_KINDS: readonly DocumentKind[] = ['png', 'jpg', 'gif', 'webp'];
/** For messages: what may be sent. */
export const ACCEPTED_DOCUMENTS = 'PDF, DOCX, CSV, TXT, MD, PNG, JPG, GIF or WEBP';

export class DocumentError extends Error {}

const startsWith = (bytes: Buffer, signature: number[] | string, at = 0) => {
  const sig = typeof signature === 'string' ? Buffer.from(signature, 'latin1') : Buffer.from(signature);
  return bytes.length >= at + sig.length && bytes.subarray(at, at + sig.length).equals(sig);
};

function isUtf8Text(bytes: Buffer): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/**
 * The document's kind from its content. A ZIP is a DOCX only when it holds `word/document.xml`; text is UTF-8
 * without NUL bytes, then markdown or CSV by the name's extension (the one thing a name may decide, between
 * text formats), else plain text.
 */
export function sniffDocument(bytes: Buffer, filename = ''): DocumentKind | undefined {
  if (startsWith(bytes, '%PDF-')) return 'pdf';
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'jpg';
  if (startsWith(bytes, 'GIF87a') || startsWith(bytes, 'GIF89a')) return 'gif';
  if (startsWith(bytes, 'RIFF') && startsWith(bytes, 'WEBP', 8)) return 'webp';
  if (startsWith(bytes, [0x50, 0x4b, 0x03, 0x04])) {
    return bytes.includes(Buffer.from('word/document.xml', 'latin1')) ? 'docx' : undefined;
  }
  if (bytes.length === 0 || !isUtf8Text(bytes)) return undefined;
  const name = filename.toLowerCase();
  if (name.endsWith('.md') || name.endsWith('.markdown')) return 'md';
  if (name.endsWith('.csv')) return 'csv';
  return 'txt';
}

/** The text of a document (markdown-ish for CSV: one line per row, cells separated by ` | `). */
export async function documentText(bytes: Buffer, kind: DocumentKind): Promise<string> {
  switch (kind) {
    case 'pdf': {
      const { extractText, getDocumentProxy } = await import('unpdf');
      try {
        const pdf = await getDocumentProxy(new Uint8Array(bytes));
        const { text } = await extractText(pdf, { mergePages: true });
        return text;
      } catch (err) {
        throw new DocumentError(`The PDF could not be read: ${(err as Error).message}`);
      }
    }
    case 'docx': {
      const mammoth = await import('mammoth');
      try {
        return (await mammoth.extractRawText({ buffer: bytes })).value;
      } catch (err) {
        throw new DocumentError(`The DOCX could not be read: ${(err as Error).message}`);
      }
    }
    case 'csv': {
      const { default: Papa } = await import('papaparse');
      const parsed = Papa.parse<string[]>(bytes.toString('utf8'), { skipEmptyLines: true });
      return parsed.data.map((row) => row.join(' | ')).join('\n');
    }
    case 'txt':
    case 'md':
      return bytes.toString('utf8');
    default:
      throw new DocumentError(`${DOCUMENT_KINDS[kind]} has no text to read`);
  }
}

/** `data:<type>;base64,<bytes>` to its bytes; undefined for anything else. */
export function dataUriBytes(value: string): Buffer | undefined {
  const m = /^data:[\w.+/-]*(?:;[\w=.+-]+)*;base64,([A-Za-z0-9+/]*={0,2})$/.exec(value.trim());
  return m ? Buffer.from(m[1] ?? '', 'base64') : undefined;
}
