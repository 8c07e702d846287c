/** Server-Sent Events: a reader for upstream streams and the writer's framing for ours. */

export interface SseEvent {
  event: string | undefined;
  data: string;
}

/** Parses an SSE byte stream into events (data lines joined by \n); comments and ids are skipped. */
export async function* readSse(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event: string | undefined;
  let data: string[] = [];
  for await (const piece of body) {
    buffer += typeof piece === 'string' ? piece : decoder.decode(piece, { stream: true });
    // Lines are read where they stand; only the unfinished last one is kept for the next piece.
    let start = 0;
    let nl = buffer.indexOf('\n');
    while (nl >= 0) {
      const end = nl > start && buffer.charCodeAt(nl - 1) === 13 ? nl - 1 : nl; // without a trailing \r
      if (end === start) {
        if (data.length) yield { event, data: data.join('\n') };
        event = undefined;
        data = [];
      } else if (buffer.startsWith('data:', start)) {
        data.push(buffer.slice(start + (buffer.charCodeAt(start + 5) === 32 ? 6 : 5), end));
      } else if (buffer.startsWith('event:', start)) {
        event = buffer.slice(start + 6, end).trim();
      }
      start = nl + 1;
      nl = buffer.indexOf('\n', start);
    }
    if (start) buffer = buffer.slice(start);
  }
  if (data.length) yield { event, data: data.join('\n') };
}

export function sseData(payload: unknown): string {
  return `data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`;
}

/** A named event (`event:` and a JSON `data:` line). */
export function sseEvent(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
