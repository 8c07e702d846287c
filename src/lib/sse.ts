/** Server-Sent Events: a reader for upstream streams and the writer's framing for ours. */

export interface SseEvent {
  event: string | undefined;
  data: string;
}

const DATA = Buffer.from('data:');
const EVENT = Buffer.from('event:');
const LF = 10;
const CR = 13;
const SPACE = 32;

/** Whether `buf` holds `prefix` at `at`, in a line that ends at `end`. */
function startsWith(buf: Buffer, at: number, end: number, prefix: Buffer): boolean {
  if (end - at < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (buf[at + i] !== prefix[i]) return false;
  return true;
}

/**
 * An SSE parser fed piece by piece (bytes or text, split anywhere): each `push` answers the events it completed
 * (data lines joined by \n; comments and ids skipped), and `end` the last one when the stream stops without its
 * blank line (a line the stream cut off is dropped, as the SSE rules say). Lines are found in the bytes and
 * only their values decoded: a piece is not turned into text whole, and a line split between pieces (a
 * character too) waits, as bytes, for the rest; the pieces of a long line are joined once, when it ends.
 * `pending` tells how much the event being read holds, for a reader that bounds it.
 */
export class SseParser {
  /** The pieces of a line not finished yet (copies: the caller may reuse its buffers). */
  private rest: Buffer[] = [];
  private restBytes = 0;
  private event: string | undefined;
  private data: string[] = [];
  private dataBytes = 0;

  /** Bytes held for the event being read: its data lines so far and the line not finished yet. */
  get pending(): number {
    return this.restBytes + this.dataBytes;
  }

  push(piece: Uint8Array | string): SseEvent[] {
    const bytes =
      typeof piece === 'string'
        ? Buffer.from(piece)
        : Buffer.isBuffer(piece)
          ? piece
          : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    let nl = bytes.indexOf(LF);
    if (nl < 0 && this.restBytes > 0) {
      this.keep(bytes);
      return [];
    }
    let buf = bytes;
    if (this.restBytes > 0) {
      this.rest.push(bytes);
      buf = Buffer.concat(this.rest, this.restBytes + bytes.length);
      nl += this.restBytes;
      this.rest = [];
      this.restBytes = 0;
    }
    const events: SseEvent[] = [];
    let start = 0;
    while (nl >= 0) {
      const end = nl > start && buf[nl - 1] === CR ? nl - 1 : nl; // without a trailing \r
      if (end === start) {
        if (this.data.length) events.push({ event: this.event, data: this.joined() });
        this.event = undefined;
        this.dataBytes = 0;
      } else if (startsWith(buf, start, end, DATA)) {
        const from = Math.min(start + DATA.length + (buf[start + DATA.length] === SPACE ? 1 : 0), end);
        this.data.push(buf.toString('utf8', from, end));
        this.dataBytes += end - from;
      } else if (startsWith(buf, start, end, EVENT)) {
        this.event = buf.toString('utf8', start + EVENT.length, end).trim();
      }
      start = nl + 1;
      nl = buf.indexOf(LF, start);
    }
    if (start < buf.length) this.keep(buf.subarray(start));
    return events;
  }

  end(): SseEvent[] {
    const last = this.data.length ? [{ event: this.event, data: this.joined() }] : [];
    this.event = undefined;
    this.dataBytes = 0;
    this.rest = [];
    this.restBytes = 0;
    return last;
  }

  /** The event's data lines as one text (most events have one line: no join), the list emptied for the next. */
  private joined(): string {
    const text = this.data.length === 1 ? (this.data[0] as string) : this.data.join('\n');
    this.data.length = 0;
    return text;
  }

  private keep(bytes: Buffer): void {
    this.rest.push(Buffer.from(bytes));
    this.restBytes += bytes.length;
  }
}

export function sseData(payload: unknown): string {
  return `data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`;
}

/** A named event (`event:` and a JSON `data:` line). */
export function sseEvent(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
