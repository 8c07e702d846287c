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
    let nl = buffer.indexOf('\n');
    while (nl >= 0) {
      let line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (data.length) yield { event, data: data.join('\n') };
        event = undefined;
        data = [];
      } else if (line.startsWith('data:')) {
        data.push(line.slice(line[5] === ' ' ? 6 : 5));
      } else if (line.startsWith('event:')) {
        event = line.slice(6).trim();
      }
      nl = buffer.indexOf('\n');
    }
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
