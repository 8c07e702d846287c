import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postUpstream, upstreamEvents } from './http.ts';

/**
 * The upstream HTTP client against a real server on loopback: a stream read up to its last event gives its
 * connection back to the pool, for the next call to reuse.
 */
describe('upstream streams', () => {
  let server: Server;
  let url = '';
  const ports: number[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      ports.push(req.socket.remotePort ?? 0);
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n');
      // The end comes after [DONE]: the reader stops before the body has ended.
      setTimeout(() => res.end(': bye\n\n'), 30);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  async function readUntilDone(): Promise<string[]> {
    const res = await postUpstream(url, {}, Buffer.from('{"stream":true}'), new AbortController().signal, 5000);
    const seen: string[] = [];
    for await (const ev of upstreamEvents(res)) {
      if (ev.data === '[DONE]') return seen;
      seen.push(ev.data);
    }
    return seen;
  }

  it('stops at [DONE], then reads the rest of the body so the next call reuses the connection', async () => {
    expect(await readUntilDone()).toEqual(['{"n":1}', '{"n":2}']);
    await new Promise((r) => setTimeout(r, 100)); // the rest of the first answer has arrived and been read
    expect(await readUntilDone()).toEqual(['{"n":1}', '{"n":2}']);
    expect(ports).toHaveLength(2);
    expect(ports[1]).toBe(ports[0]);
  });
});
