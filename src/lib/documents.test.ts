import { describe, expect, it } from 'vitest';
import { ELF_BYTES, makeBombDocx, makeBombPdf, makeCrowdedDocx, makeDocx, makePdf } from '../../test/documents.ts';
import { loadConfig } from '../config.ts';
import { DocumentLimitError, dataUriBytes, documentText, sniffDocument } from './documents.ts';

const limits = loadConfig({}).documents;
const MB = 1024 * 1024;

describe('documents', () => {
  it('tells kinds apart by their bytes, whatever the name says', async () => {
    const docx = await makeDocx('x');
    expect(sniffDocument(makePdf('x'), 'notes.txt')).toBe('pdf');
    expect(sniffDocument(docx, 'photo.png')).toBe('docx');
    expect(sniffDocument(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]), 'a.pdf')).toBe('png');
    expect(sniffDocument(Buffer.from([0xff, 0xd8, 0xff, 0xe0]), 'a.pdf')).toBe('jpg');
    expect(sniffDocument(Buffer.from('GIF89a....'), 'a.pdf')).toBe('gif');
    expect(sniffDocument(Buffer.from('RIFF\0\0\0\0WEBPVP8 '), 'a')).toBe('webp');
    expect(sniffDocument(Buffer.from('# Title\n'), 'readme.md')).toBe('md');
    expect(sniffDocument(Buffer.from('a,b\n1,2\n'), 'data.csv')).toBe('csv');
    expect(sniffDocument(Buffer.from('héllo'), 'anything')).toBe('txt');
    // A renamed program, a ZIP that is no DOCX, invalid UTF-8 and empty files are nothing we read.
    expect(sniffDocument(ELF_BYTES, 'report.pdf')).toBeUndefined();
    expect(sniffDocument(Buffer.concat([Buffer.from('MZ'), Buffer.alloc(60)]), 'a.docx')).toBeUndefined();
    expect(sniffDocument(Buffer.from([0x50, 0x4b, 0x03, 0x04, 1, 2, 3]), 'a.docx')).toBeUndefined();
    expect(sniffDocument(Buffer.from([0xc3, 0x28]), 'a.txt')).toBeUndefined();
    expect(sniffDocument(Buffer.alloc(0), 'a.txt')).toBeUndefined();
  });

  it('reads the text of a PDF, a DOCX and a CSV made here', async () => {
    expect(await documentText(makePdf('Acme Corp makes anvils (and rockets)'), 'pdf', limits)).toBe(
      'Acme Corp makes anvils (and rockets)',
    );
    expect(await documentText(await makeDocx('First line\nSecond line'), 'docx', limits)).toBe(
      'First line\n\nSecond line\n\n',
    );
    expect(await documentText(Buffer.from('name,role\n"Roe, Jane",founder\n'), 'csv', limits)).toBe(
      'name | role\nRoe, Jane | founder',
    );
    await expect(documentText(Buffer.from('%PDF-1.4 broken'), 'pdf', limits)).rejects.toThrow(
      'The PDF could not be read',
    );
  });

  it('refuses documents past their bounds, naming the bound and its setting', async () => {
    expect(limits).toEqual({
      maxExpandedBytes: 50 * MB,
      maxEntries: 1000,
      maxPdfPages: 500,
      maxTextChars: 5_000_000,
      maxCsvRows: 100_000,
    });
    const refusal = async (bytes: Buffer, kind: 'pdf' | 'docx' | 'csv', within = limits) => {
      const err = await documentText(bytes, kind, within).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(DocumentLimitError);
      return (err as Error).message;
    };
    const bytes = (n: number) => `${n} bytes (DOCUMENT_MAX_EXPANDED_BYTES)`;
    // 51 MB of text in 77 KB; then the same whose headers declare 1 KB: the inflated bytes are what count.
    expect(await refusal(await makeBombDocx(51 * MB), 'docx')).toBe(`The DOCX expands to more than ${bytes(50 * MB)}`);
    expect(await refusal(await makeBombDocx(51 * MB, 1024), 'docx')).toBe(
      `The DOCX expands to more than ${bytes(50 * MB)}`,
    );
    // Just under the bound is read.
    expect(await documentText(await makeBombDocx(MB), 'docx', { ...limits, maxExpandedBytes: MB + 2000 })).toMatch(
      /^bomb bomb /,
    );
    expect(await refusal(await makeCrowdedDocx('x', 1001), 'docx')).toBe(
      'The DOCX holds more than 1000 files (DOCUMENT_MAX_ENTRIES)',
    );
    expect(await documentText(await makeCrowdedDocx('x', 1000), 'docx', limits)).toBe('x\n\n');

    // A page of 51 MB of spaces in 52 KB: pdf.js would hold it whole; a page of 1 MB is read.
    expect(await refusal(await makeBombPdf(51 * MB), 'pdf')).toBe(`The PDF expands to more than ${bytes(50 * MB)}`);
    expect(await documentText(await makeBombPdf(MB), 'pdf', limits)).toBe('bomb');

    const few = { ...limits, maxPdfPages: 3, maxCsvRows: 3, maxTextChars: 40 };
    expect(await refusal(makePdf('page', 4), 'pdf', few)).toBe(
      'The PDF has 4 pages, more than 3 (DOCUMENT_MAX_PDF_PAGES)',
    );
    expect(await documentText(makePdf('page', 3), 'pdf', few)).toBe('page\npage\npage');
    expect(await refusal(makePdf('x'.repeat(41)), 'pdf', few)).toBe(
      "The PDF's text is longer than 40 characters (DOCUMENT_MAX_TEXT_CHARS)",
    );
    expect(await refusal(Buffer.from('a\nb\nc\nd\n'), 'csv', few)).toBe(
      'The CSV has more than 3 rows (DOCUMENT_MAX_CSV_ROWS)',
    );
    expect(await documentText(Buffer.from('a\n\nb\nc\n'), 'csv', few)).toBe('a\nb\nc');
    expect(await refusal(Buffer.from(`${'x,'.repeat(20)}x`), 'csv', few)).toBe(
      "The CSV's text is longer than 40 characters (DOCUMENT_MAX_TEXT_CHARS)",
    );
  });

  it('refuses a DOCX whose offsets JSZip would shift (bytes before the archive), before JSZip reads it', async () => {
    const shifted = Buffer.concat([Buffer.from('junk'), await makeDocx('Shipped')]);
    await expect(documentText(shifted, 'docx', limits)).rejects.toThrow(
      'The DOCX could not be read: the central directory is not where the archive says',
    );
  });

  it('decodes base64 data URIs only', () => {
    expect(dataUriBytes('data:application/pdf;base64,JVBERi0=')?.toString()).toBe('%PDF-');
    expect(dataUriBytes('plain text')).toBeUndefined();
    expect(dataUriBytes('data:text/plain,hello')).toBeUndefined();
  });
});
