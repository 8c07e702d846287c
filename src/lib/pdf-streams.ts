import { inflatedLength } from './inflate.ts';

/**
 * Whether a PDF's compressed streams inflate past `max` bytes together, counted before pdf.js opens it. pdf.js
 * holds every stream it decodes (page contents, fonts, object and cross-reference streams) whole in memory, so a
 * 100 KB PDF whose page is 100 MB of inflated spaces made it grow by over 200 MB. Every `stream` keyword's data
 * is inflated as zlib (FlateDecode) through a counting stream, whatever its dictionary or /Length say: data that
 * is not zlib fails at its first bytes and counts nothing, so no dictionary is parsed and none can mislead.
 * Not seen by this count: streams of an encrypted PDF (ciphertext here), and Flate data behind another filter
 * (ASCII85, ASCIIHex) or LZW.
 */
export async function pdfStreamsExpandPast(bytes: Buffer, max: number): Promise<boolean> {
  const text = bytes.toString('latin1');
  let budget = max;
  for (const m of text.matchAll(/stream(?:\r\n|\r|\n)/g)) {
    if (text.startsWith('end', m.index - 3)) continue;
    const inflated = await inflatedLength(bytes.subarray(m.index + m[0].length), budget, 'zlib');
    if (inflated.over) return true;
    budget -= inflated.bytes;
  }
  return false;
}
