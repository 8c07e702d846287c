import { SseParser } from '../src/lib/sse.ts';

/** The events of a whole Server-Sent Events body, each with its name and its data as JSON. */
export function sseEvents(body: string): Array<{ event: string | undefined; data: Record<string, unknown> }> {
  const parser = new SseParser();
  return [...parser.push(body), ...parser.end()].map((e) => ({
    event: e.event,
    data: JSON.parse(e.data) as Record<string, unknown>,
  }));
}
