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
 * character too) waits, as bytes, for the rest.
 */
export class SseParser {
  /** The start of a line the last piece did not finish (a copy: the caller may reuse its buffer). */
  private rest: Buffer | undefined;
  private event: string | undefined;
  private data: string[] = [];

  push(piece: Uint8Array | string): SseEvent[] {
    const bytes =
      typeof piece === 'string' ? Buffer.from(piece) : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    const buf = this.rest ? Buffer.concat([this.rest, bytes]) : bytes;
    const events: SseEvent[] = [];
    let start = 0;
    let nl = buf.indexOf(LF);
    while (nl >= 0) {
      const end = nl > start && buf[nl - 1] === CR ? nl - 1 : nl; // without a trailing \r
      if (end === start) {
        if (this.data.length) events.push({ event: this.event, data: this.data.join('\n') });
        this.event = undefined;
        this.data = [];
      } else if (startsWith(buf, start, end, DATA)) {
        const from = start + DATA.length + (buf[start + DATA.length] === SPACE ? 1 : 0);
        this.data.push(buf.toString('utf8', Math.min(from, end), end));
      } else if (startsWith(buf, start, end, EVENT)) {
        this.event = buf.toString('utf8', start + EVENT.length, end).trim();
      }
      start = nl + 1;
      nl = buf.indexOf(LF, start);
    }
    this.rest = start < buf.length ? Buffer.from(buf.subarray(start)) : undefined;
    return events;
  }

  end(): SseEvent[] {
    const last = this.data.length ? [{ event: this.event, data: this.data.join('\n') }] : [];
    this.event = undefined;
    this.data = [];
    this.rest = undefined;
    return last;
  }
}

export function sseData(payload: unknown): string {
  return `data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`;
}

/** A named event (`event:` and a JSON `data:` line). */
export function sseEvent(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
