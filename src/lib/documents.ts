/**
 * Documents people hand us (chat files, knowledge sources): their kind decided by their bytes, never by their
 * name, and their text. PDF (unpdf), DOCX (mammoth), CSV (papaparse), plain text and markdown are read; PNG,
 * JPEG, GIF and WebP are recognised as images (kept for models with vision). Anything else is refused by the
 * caller. The parsers load on first use, not at start-up.
 *
 * Every read is bounded (DocumentLimits, from settings): a DOCX's ZIP is checked (entries, inflated bytes) before
 * mammoth opens it, a PDF's compressed streams are inflated and counted before pdf.js opens it and its pages
 * counted before any is read, a CSV's rows are counted as it is parsed, and
 * the text made of a PDF, DOCX or CSV is capped. Past a bound the document is refused with DocumentLimitError,
 * whose message names the bound and its setting.
 */

import { PayloadTooLargeError, ValidationError } from './errors.ts';
import { pdfStreamsExpandPast } from './pdf-streams.ts';
import { zipProblem } from './zip.ts';

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
/** The document is past one of DocumentLimits: the caller answers 413 with this message. */
export class DocumentLimitError extends DocumentError {}

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

/** The text of a document (markdown-ish for CSV: one line per row, cells separated by ` | `), within `limits`. */
export async function documentText(bytes: Buffer, kind: DocumentKind, limits: DocumentLimits): Promise<string> {
  switch (kind) {
    case 'pdf':
      return capped(await pdfText(bytes, limits), 'PDF', limits);
    case 'docx': {
      await checkZip(bytes, 'DOCX', limits);
      const mammoth = await import('mammoth');
      let text: string;
      try {
        text = (await mammoth.extractRawText({ buffer: bytes })).value;
      } catch (err) {
        throw new DocumentError(`The DOCX could not be read: ${(err as Error).message}`);
      }
      return capped(text, 'DOCX', limits);
    }
    case 'csv': {
      const { default: Papa } = await import('papaparse');
      // One row more than allowed is enough to know the CSV is too long.
      const parsed = Papa.parse<string[]>(bytes.toString('utf8'), {
        skipEmptyLines: true,
        preview: limits.maxCsvRows + 1,
      });
      if (parsed.data.length > limits.maxCsvRows) {
        throw new DocumentLimitError(`The CSV has more than ${limits.maxCsvRows} rows (DOCUMENT_MAX_CSV_ROWS)`);
      }
      return capped(parsed.data.map((row) => row.join(' | ')).join('\n'), 'CSV', limits);
    }
    case 'txt':
    case 'md':
      return bytes.toString('utf8');
    default:
      throw new DocumentError(`${DOCUMENT_KINDS[kind]} has no text to read`);
  }
}

/**
 * documentText for an upload: a document past a bound is a 413 naming it, an unreadable one a 422 on `field`.
 */
export async function uploadedDocumentText(
  bytes: Buffer,
  kind: DocumentKind,
  limits: DocumentLimits,
  field: string,
): Promise<string> {
  try {
    return await documentText(bytes, kind, limits);
  } catch (err) {
    if (err instanceof DocumentLimitError) throw new PayloadTooLargeError(err.message);
    if (err instanceof DocumentError) throw new ValidationError(err.message, [{ field, message: err.message }]);
    throw err;
  }
}

function capped(text: string, what: string, limits: DocumentLimits): string {
  if (text.length > limits.maxTextChars) throw textTooLong(what, limits);
  return text;
}

const textTooLong = (what: string, limits: DocumentLimits) =>
  new DocumentLimitError(
    `The ${what}'s text is longer than ${limits.maxTextChars} characters (DOCUMENT_MAX_TEXT_CHARS)`,
  );

const expandsPast = (what: string, limits: DocumentLimits) =>
  new DocumentLimitError(
    `The ${what} expands to more than ${limits.maxExpandedBytes} bytes (DOCUMENT_MAX_EXPANDED_BYTES)`,
  );

/** Refuses a ZIP-based document past its entry count or inflated size, before any ZIP reader inflates it. */
async function checkZip(bytes: Buffer, what: string, limits: DocumentLimits): Promise<void> {
  const problem = await zipProblem(bytes, limits);
  if (problem?.kind === 'entries') {
    throw new DocumentLimitError(`The ${what} holds more than ${limits.maxEntries} files (DOCUMENT_MAX_ENTRIES)`);
  }
  if (problem?.kind === 'expanded') throw expandsPast(what, limits);
  if (problem) throw new DocumentError(`The ${what} could not be read: ${problem.reason}`);
}

/**
 * A PDF's text, as unpdf's `extractText(..., {mergePages: true})` makes it, but its pages counted first and read
 * one at a time, stopping once the text passes the cap.
 */
async function pdfText(bytes: Buffer, limits: DocumentLimits): Promise<string> {
  if (await pdfStreamsExpandPast(bytes, limits.maxExpandedBytes)) throw expandsPast('PDF', limits);
  const { getDocumentProxy } = await import('unpdf');
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    pdf = await getDocumentProxy(new Uint8Array(bytes));
  } catch (err) {
    throw new DocumentError(`The PDF could not be read: ${(err as Error).message}`);
  }
  try {
    if (pdf.numPages > limits.maxPdfPages) {
      throw new DocumentLimitError(
        `The PDF has ${pdf.numPages} pages, more than ${limits.maxPdfPages} (DOCUMENT_MAX_PDF_PAGES)`,
      );
    }
    const pages: string[] = [];
    let length = 0;
    for (let n = 1; n <= pdf.numPages; n++) {
      const page = await pdf.getPage(n);
      const content = await page.getTextContent();
      const text = content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join('');
      page.cleanup();
      length += text.length + 1;
      if (length > limits.maxTextChars) throw textTooLong('PDF', limits);
      pages.push(text);
    }
    return pages
      .join('\n')
      .replace(/[^\S\n]+/g, ' ')
      .replace(/ ?\n ?/g, '\n')
      .replace(/\n{3,}/g, '\n\n');
  } catch (err) {
    if (err instanceof DocumentError) throw err;
    throw new DocumentError(`The PDF could not be read: ${(err as Error).message}`);
  } finally {
    await pdf.destroy();
  }
}

/** `data:<type>;base64,<bytes>` to its bytes; undefined for anything else. */
export function dataUriBytes(value: string): Buffer | undefined {
  const m = /^data:[\w.+/-]*(?:;[\w=.+-]+)*;base64,([A-Za-z0-9+/]*={0,2})$/.exec(value.trim());
  return m ? Buffer.from(m[1] ?? '', 'base64') : undefined;
}

/**
 * Bounds on reading an uploaded document (chat files, knowledge file sources; see lib/documents): past one the
 * upload is refused with 413 naming the setting.
 */
export interface DocumentLimits {
  /** Bytes a document's compressed parts (a DOCX's ZIP entries, a PDF's Flate streams) may inflate to together, counted as inflated; `DOCUMENT_MAX_EXPANDED_BYTES`, 50 MB. */
  maxExpandedBytes: number;
  /** Entries a DOCX's (ZIP's) central directory may hold; `DOCUMENT_MAX_ENTRIES`, 1,000. */
  maxEntries: number;
  /** Pages of a PDF; `DOCUMENT_MAX_PDF_PAGES`, 500. */
  maxPdfPages: number;
  /** Characters of the text made of a PDF, DOCX or CSV; `DOCUMENT_MAX_TEXT_CHARS`, 5,000,000. */
  maxTextChars: number;
  /** Rows of a CSV (empty lines not counted); `DOCUMENT_MAX_CSV_ROWS`, 100,000. */
  maxCsvRows: number;
}
