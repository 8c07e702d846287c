import { describe, expect, it } from 'vitest';
import { readSse } from './sse.ts';

async function* pieces(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield new TextEncoder().encode(part);
}

async function events(...parts: string[]) {
  const out = [];
  for await (const ev of readSse(pieces(...parts))) out.push(ev);
  return out;
}

describe('readSse', () => {
  it('reads events, joins data lines, keeps event names and skips comments and ids', async () => {
    expect(
      await events(
        ': a comment\n',
        'id: 7\nevent: delta\ndata: {"a":1}\n\n',
        'data: one\ndata:two\n\ndata: [DONE]\n\n',
      ),
    ).toEqual([
      { event: 'delta', data: '{"a":1}' },
      { event: undefined, data: 'one\ntwo' },
      { event: undefined, data: '[DONE]' },
    ]);
  });

  it('reads lines split across pieces, CRLF line ends, and a last event without its blank line (a line the stream cut off is dropped, as the SSE rules say)', async () => {
    expect(
      await events('da', 'ta: he', 'llo\r', '\n\r\nevent: x\r\ndata:\r\n\r\n', 'data: tail\n', 'data: cut'),
    ).toEqual([
      { event: undefined, data: 'hello' },
      { event: 'x', data: '' },
      { event: undefined, data: 'tail' },
    ]);
  });

  it('decodes a character split between two pieces', async () => {
    const bytes = new TextEncoder().encode('data: café ✓\n\n');
    async function* split() {
      yield bytes.subarray(0, 10); // inside the two bytes of é
      yield bytes.subarray(10);
    }
    const out = [];
    for await (const ev of readSse(split())) out.push(ev.data);
    expect(out).toEqual(['café ✓']);
  });
});
