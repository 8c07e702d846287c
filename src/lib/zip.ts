import { inflatedLength } from './inflate.ts';

/**
 * A ZIP's bounds checked before any ZIP reader (mammoth's JSZip) inflates it: the central directory read the
 * way JSZip reads it (the last end record, records followed by their signature whatever count the end record
 * declares, each entry's data located through its local header), its entries counted, and every entry inflated
 * through a counting stream that keeps nothing, so a bomb is stopped at the bound with a few kilobytes in
 * memory. Declared sizes are read but never trusted: the inflated bytes are what is counted.
 */

export interface ZipBounds {
  /** The most entries (files and folders) the archive may hold. */
  maxEntries: number;
  /** The most bytes all its entries may inflate to, together. */
  maxExpandedBytes: number;
}

export type ZipProblem =
  | { kind: 'entries' }
  | { kind: 'expanded' }
  /** Not a ZIP we read (ZIP64, encryption, an unknown method, bytes before the archive, a broken structure). */
  | { kind: 'unreadable'; reason: string };

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const STORED = 0;
const DEFLATED = 8;

interface Entry {
  method: number;
  flags: number;
  compressedSize: number;
  uncompressedSize: number;
  localOffset: number;
}

/** The first bound the archive breaks, or undefined when it keeps them all. */
export async function zipProblem(bytes: Buffer, bounds: ZipBounds): Promise<ZipProblem | undefined> {
  const listed = centralDirectory(bytes, bounds.maxEntries);
  if ('kind' in listed) return listed;
  let budget = bounds.maxExpandedBytes;
  for (const entry of listed.entries) {
    // A declared size past what is left is refused without inflating anything.
    if (entry.uncompressedSize > budget) return { kind: 'expanded' };
    const at = entry.localOffset;
    if (at + 30 > bytes.length || bytes.readUInt32LE(at) !== LOCAL) {
      return { kind: 'unreadable', reason: 'an entry has no local header' };
    }
    const start = at + 30 + bytes.readUInt16LE(at + 26) + bytes.readUInt16LE(at + 28);
    const end = start + entry.compressedSize;
    if (end > bytes.length) return { kind: 'unreadable', reason: 'an entry runs past the end of the file' };
    if (entry.flags & 1) return { kind: 'unreadable', reason: 'an entry is encrypted' };
    if (entry.method === STORED) {
      budget -= entry.compressedSize;
    } else if (entry.method === DEFLATED) {
      const inflated = await inflatedLength(bytes.subarray(start, end), budget, 'raw');
      if (inflated.over) return { kind: 'expanded' };
      if (inflated.error)
        return { kind: 'unreadable', reason: `an entry is not deflate data: ${inflated.error.message}` };
      budget -= inflated.bytes;
    } else {
      return { kind: 'unreadable', reason: `an entry uses compression method ${entry.method}` };
    }
    if (budget < 0) return { kind: 'expanded' };
  }
  return undefined;
}

function centralDirectory(bytes: Buffer, maxEntries: number): { entries: Entry[] } | ZipProblem {
  // The end record is the last one within the largest comment's reach from the end, as JSZip takes it.
  let eocd = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 22 - 0xffff); i--) {
    if (bytes.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return { kind: 'unreadable', reason: 'no end of central directory' };
  const declared = bytes.readUInt16LE(eocd + 10);
  const size = bytes.readUInt32LE(eocd + 12);
  const offset = bytes.readUInt32LE(eocd + 16);
  if (declared === 0xffff || size === 0xffffffff || offset === 0xffffffff) {
    return { kind: 'unreadable', reason: 'ZIP64 archives are not read' };
  }
  // Any gap before the end record JSZip takes for bytes before the archive and shifts every offset by it; such
  // files are refused rather than followed.
  if (offset + size !== eocd) {
    return { kind: 'unreadable', reason: 'the central directory is not where the archive says' };
  }
  const entries: Entry[] = [];
  let at = offset;
  // JSZip reads records while their signature follows, not the count the end record declares: so do we.
  while (at + 46 <= bytes.length && bytes.readUInt32LE(at) === CENTRAL) {
    if (entries.length >= maxEntries) return { kind: 'entries' };
    const entry: Entry = {
      flags: bytes.readUInt16LE(at + 8),
      method: bytes.readUInt16LE(at + 10),
      compressedSize: bytes.readUInt32LE(at + 20),
      uncompressedSize: bytes.readUInt32LE(at + 24),
      localOffset: bytes.readUInt32LE(at + 42),
    };
    if (
      entry.compressedSize === 0xffffffff ||
      entry.uncompressedSize === 0xffffffff ||
      entry.localOffset === 0xffffffff
    ) {
      return { kind: 'unreadable', reason: 'ZIP64 archives are not read' };
    }
    entries.push(entry);
    at += 46 + bytes.readUInt16LE(at + 28) + bytes.readUInt16LE(at + 30) + bytes.readUInt16LE(at + 32);
  }
  if (entries.length !== declared) {
    return { kind: 'unreadable', reason: 'the central directory does not hold the entries it declares' };
  }
  return { entries };
}
