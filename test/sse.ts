import { SseParser } from '../src/lib/sse.ts';

/** The events of a whole Server-Sent Events body, each with its name and its data as JSON. */
export function sseEvents(body: string): Array<{ event: string | undefined; data: Record<string, unknown> }> {
  const parser = new SseParser();
  return [...parser.push(body), ...parser.end()].map((e) => ({
    event: e.event,
    data: JSON.parse(e.data) as Record<string, unknown>,
  }));
}

/** The final credit figures a stream sends as its SSE comment (`: x-credits-consumed=N; x-credits-remaining=M`). */
export function creditsComment(body: string): { consumed: number; remaining: number } | undefined {
  const m = /^: x-credits-consumed=(\d+); x-credits-remaining=(-?\d+)$/m.exec(body);
  return m ? { consumed: Number(m[1]), remaining: Number(m[2]) } : undefined;
}

export interface ConversationSseEvent {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

/**
 * Reads a conversation's event stream (`GET .../conversations/:id/events` at `url`) until `done` says so, or 20 s
 * pass; answers the named events read. `onOpen` runs once the stream answered (what it sets off is heard).
 */
export async function readConversationEvents(
  url: string,
  token: string,
  done: (events: ConversationSseEvent[]) => boolean,
  onOpen?: () => Promise<unknown>,
): Promise<ConversationSseEvent[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), 20_000);
  const events: ConversationSseEvent[] = [];
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: ac.signal });
    if (res.status !== 200) throw new Error(`events answered ${res.status}: ${await res.text()}`);
    await onOpen?.();
    let buf = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += Buffer.from(chunk).toString('utf8');
      for (let end = buf.indexOf('\n\n'); end >= 0; end = buf.indexOf('\n\n')) {
        const lines = buf.slice(0, end).split('\n');
        buf = buf.slice(end + 2);
        const field = (name: string) => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
        const event = field('event');
        if (event) events.push({ id: Number(field('id')), event, data: JSON.parse(field('data') ?? '{}') });
      }
      if (done(events)) break;
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return events;
}
