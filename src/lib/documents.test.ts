import { describe, expect, it } from 'vitest';
import { ELF_BYTES, makeDocx, makePdf } from '../../test/documents.ts';
import { dataUriBytes, documentText, sniffDocument } from './documents.ts';

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
    expect(await documentText(makePdf('Acme Corp makes anvils (and rockets)'), 'pdf')).toBe(
      'Acme Corp makes anvils (and rockets)',
    );
    expect(await documentText(await makeDocx('First line\nSecond line'), 'docx')).toBe('First line\n\nSecond line\n\n');
    expect(await documentText(Buffer.from('name,role\n"Roe, Jane",founder\n'), 'csv')).toBe(
      'name | role\nRoe, Jane | founder',
    );
    await expect(documentText(Buffer.from('%PDF-1.4 broken'), 'pdf')).rejects.toThrow('The PDF could not be read');
  });

  it('decodes base64 data URIs only', () => {
    expect(dataUriBytes('data:application/pdf;base64,JVBERi0=')?.toString()).toBe('%PDF-');
    expect(dataUriBytes('plain text')).toBeUndefined();
    expect(dataUriBytes('data:text/plain,hello')).toBeUndefined();
  });
});
