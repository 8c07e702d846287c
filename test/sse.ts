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
