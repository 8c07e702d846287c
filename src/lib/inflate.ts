import { createInflate, createInflateRaw } from 'node:zlib';

export interface Inflated {
  /** Bytes inflated (up to the first past `max`, or up to the fault). */
  bytes: number;
  /** The count passed `max`: inflation stopped there. */
  over: boolean;
  /** The data is not valid deflate (past `bytes`). */
  error?: Error;
}

/**
 * How many bytes `compressed` (raw deflate, as in a ZIP, or zlib, as PDF's FlateDecode) inflates to, counted in
 * 16 KB chunks dropped as they come (garbage the next collections take), so a bomb costs a few kilobytes held.
 * Stops as soon as the count passes `max`. Input after the end of the compressed data is ignored.
 */
export function inflatedLength(compressed: Buffer, max: number, format: 'raw' | 'zlib'): Promise<Inflated> {
  return new Promise((resolve) => {
    const options = { chunkSize: 16 * 1024 };
    const inflate = format === 'raw' ? createInflateRaw(options) : createInflate(options);
    let bytes = 0;
    let settled = false;
    const settle = (over: boolean, error?: Error) => {
      if (settled) return;
      settled = true;
      resolve(error ? { bytes, over, error } : { bytes, over });
    };
    inflate.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > max) {
        settle(true);
        inflate.destroy();
      }
    });
    inflate.on('end', () => settle(false));
    inflate.on('error', (err) => settle(false, err));
    inflate.end(compressed);
  });
}
