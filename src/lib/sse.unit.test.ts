import { describe, expect, it } from 'vitest';
import { SseParser } from './sse.ts';

/** The events of a stream that arrives in these pieces, each as bytes. */
function events(...parts: string[]) {
  const parser = new SseParser();
  return [...parts.flatMap((part) => parser.push(new TextEncoder().encode(part))), ...parser.end()];
}

describe('SseParser', () => {
  it('reads events, joins data lines, keeps event names and skips comments and ids', () => {
    expect(
      events(': a comment\n', 'id: 7\nevent: delta\ndata: {"a":1}\n\n', 'data: one\ndata:two\n\ndata: [DONE]\n\n'),
    ).toEqual([
      { event: 'delta', data: '{"a":1}' },
      { event: undefined, data: 'one\ntwo' },
      { event: undefined, data: '[DONE]' },
    ]);
  });

  it('reads lines split across pieces, CRLF line ends, and a last event without its blank line (a line the stream cut off is dropped, as the SSE rules say)', () => {
    expect(events('da', 'ta: he', 'llo\r', '\n\r\nevent: x\r\ndata:\r\n\r\n', 'data: tail\n', 'data: cut')).toEqual([
      { event: undefined, data: 'hello' },
      { event: 'x', data: '' },
      { event: undefined, data: 'tail' },
    ]);
  });

  it('decodes a character split between two pieces', () => {
    const bytes = new TextEncoder().encode('data: café ✓\n\n');
    const parser = new SseParser();
    const out = [...parser.push(bytes.subarray(0, 10)), ...parser.push(bytes.subarray(10))]; // 10: inside é
    expect(out.map((ev) => ev.data)).toEqual(['café ✓']);
  });

  it('tells what the event being read holds: its data lines and the line not finished, until the event ends', () => {
    const parser = new SseParser();
    expect(parser.push('data: abc\ndata: de')).toEqual([]);
    expect(parser.pending).toBe(3 + 8); // the value "abc" and the unfinished line "data: de", whole
    expect(parser.push('f\n')).toEqual([]);
    expect(parser.pending).toBe(3 + 3);
    expect(parser.push('\n')).toEqual([{ event: undefined, data: 'abc\ndef' }]);
    expect(parser.pending).toBe(0);
  });

  it('joins a long line that arrives in many pieces once, when it ends', () => {
    const parser = new SseParser();
    const piece = 'x'.repeat(64 * 1024);
    expect(parser.push('data: ')).toEqual([]);
    for (let i = 0; i < 256; i++) expect(parser.push(new TextEncoder().encode(piece))).toEqual([]);
    expect(parser.pending).toBe(6 + 256 * piece.length);
    const [ev] = parser.push('\n\n');
    expect(ev?.data.length).toBe(256 * piece.length);
    expect(parser.pending).toBe(0);
  });
});
