import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cancel } from '../lib/cancel.ts';
import type { SseEvent } from '../lib/sse.ts';
import { END_OF_STREAM, postEvents, postJson } from './http.ts';
import { UpstreamError } from './types.ts';

/**
 * The upstream HTTP client against a real server on loopback: answers read as they come, streams that give
 * their connection back to the pool, errors classified, cancellation, and a reader slower than the upstream.
 */
describe('upstream HTTP client', () => {
  let server: Server;
  let base = '';
  /** The client port of each request, whether its answer was sent whole, and whether its connection was closed. */
  const seen: Array<{ path: string; port: number; finished: boolean; closed: boolean }> = [];
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
    '/json': (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'),
    '/not-json': (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('<html>'),
    '/limited': (_req, res) =>
      res
        .writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' })
        .end('{"error":{"message":"slow down"}}'),
    '/refused': (_req, res) => res.writeHead(400).end('bad request, not JSON'),
    '/events': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n');
      // The end comes after [DONE]: the reader stops before the body has ended.
      setTimeout(() => res.end(': bye\n\n'), 30);
    },
    '/events-long-tail': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: [DONE]\n\n');
      // Far more than the client reads for a reader that left: it closes the connection instead.
      const filler = `: ${'x'.repeat(16 * 1024)}\n\n`;
      let sent = 0;
      const more = () => {
        while (sent < 64) {
          sent++;
          if (!res.write(filler)) return void res.once('drain', more);
        }
        setTimeout(() => res.end(), 5000);
      };
      setTimeout(more, 20);
    },
    '/events-big': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const more = () => {
        while (n < 2000) {
          if (!res.write(`data: {"n":${n++},"pad":"${'p'.repeat(500)}"}\n\n`)) return void res.once('drain', more);
        }
        res.end('data: [DONE]\n\n');
      };
      more();
    },
    '/json-huge': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      writeMuch(res, '{"pad":"', 'x', () => res.end('"}'));
    },
    '/event-huge': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      writeMuch(res, 'data: {"n":0}\n\ndata: ', 'x', () => res.end('\n\n'));
    },
    '/events-flood': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      flood.written = 0;
      flood.done = false;
      const event = `data: ${'f'.repeat(FLOOD_EVENT - 8)}\n\n`;
      const more = () => {
        while (flood.written < FLOOD_BYTES) {
          flood.written += event.length;
          flood.lastWrite = Date.now();
          if (!res.write(event)) return void res.once('drain', more);
        }
        flood.done = true;
        res.end('data: [DONE]\n\n');
      };
      more();
    },
    '/silent': () => {}, // answers nothing: the caller cancels
    '/events-then-silent': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n'); // then nothing more, the connection left open
    },
    '/events-then-reset': (req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n', () => setTimeout(() => req.socket.destroy(), 20));
    },
    '/json-then-reset': (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"ok":', () => setTimeout(() => req.socket.destroy(), 20));
    },
    '/redirect': (_req, res) => res.writeHead(307, { location: '/json' }).end(),
  };

  /** 33 MB (one more than the client holds) of `fill` after `head`, written as the client takes it. */
  function writeMuch(res: ServerResponse, head: string, fill: string, then: () => void) {
    const piece = fill.repeat(1024 * 1024);
    let sent = 0;
    res.write(head);
    const more = () => {
      while (sent < 33) {
        sent++;
        if (!res.write(piece)) return void res.once('drain', more);
      }
      then();
    };
    more();
  }

  /** What /events-flood has written, when last, and whether all of it. */
  const FLOOD_EVENT = 64 * 1024;
  const FLOOD_BYTES = 48 * 1024 * 1024;
  const flood = { written: 0, lastWrite: 0, done: false };

  /** Connections the server has accepted. */
  let connections = 0;
  /** The server's end of the connection that carried the latest request. */
  let lastSocket: Socket | undefined;
  /** The requests each connection carried (kept-alive connections carry many). */
  const entriesOf = new WeakMap<Socket, typeof seen>();

  beforeAll(async () => {
    server = createServer((req, res) => {
      const entry = { path: req.url ?? '', port: req.socket.remotePort ?? 0, finished: false, closed: false };
      seen.push(entry);
      res.once('finish', () => {
        entry.finished = true;
      });
      entriesOf.get(req.socket)?.push(entry);
      lastSocket = req.socket;
      req.resume();
      req.once('end', () => routes[req.url ?? '']?.(req, res));
    });
    server.on('connection', (socket) => {
      connections++;
      const entries: typeof seen = [];
      entriesOf.set(socket, entries);
      socket.once('close', () => {
        for (const entry of entries) entry.closed = true;
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  const url = (path: string) => new URL(`${base}${path}`);
  const body = Buffer.from('{"stream":true}');
  const noCancel = () => new AbortController().signal;
  const until = async (check: () => boolean, ms = 3000) => {
    const deadline = Date.now() + ms;
    while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    return check();
  };

  /**
   * The events' data up to [DONE], where the reader stops: by leaving its loop (`loop`), or (`map`) by its map
   * answering END_OF_STREAM, as the OpenAI upstream does.
   */
  async function readUntilDone(path: string, stop: 'loop' | 'map'): Promise<string[]> {
    const out: string[] = [];
    const map = (e: SseEvent) => (stop === 'map' && e.data === '[DONE]' ? END_OF_STREAM : e);
    for await (const ev of postEvents(url(path), {}, body, noCancel(), 5000, map)) {
      if (ev.data === '[DONE]') return out;
      out.push(ev.data);
    }
    return out;
  }

  for (const stop of ['loop', 'map'] as const) {
    it(`stops at [DONE] (${stop}), then reads the rest of the body so the next call reuses the connection`, async () => {
      seen.length = 0;
      expect(await readUntilDone('/events', stop)).toEqual(['{"n":1}', '{"n":2}']);
      // The rest of the first answer has been sent (its end comes 30 ms after [DONE]), then read by the client.
      expect(await until(() => seen[0]?.finished === true)).toBe(true);
      await new Promise((r) => setTimeout(r, 100));
      const opened = connections;
      expect(await readUntilDone('/events', stop)).toEqual(['{"n":1}', '{"n":2}']);
      expect(connections).toBe(opened); // the second call took a kept-alive connection
      expect(seen[0]?.closed).toBe(false);
    });

    it(`closes the connection of a stream left (${stop}) with more than 128 KB still to come`, async () => {
      seen.length = 0;
      expect(await readUntilDone('/events-long-tail', stop)).toEqual([]);
      expect(await until(() => seen[0]?.closed === true)).toBe(true);
      // The next call gets a connection of its own and its answer.
      expect(await postJson(url('/json'), {}, body, noCancel(), 5000)).toEqual({ ok: true });
    });
  }

  it('hands a stream larger than its buffer to a slow reader whole and in order', async () => {
    const ns: number[] = [];
    for await (const ev of postEvents(url('/events-big'), {}, body, noCancel(), 5000, (e) => e)) {
      if (ev.data === '[DONE]') break;
      ns.push((JSON.parse(ev.data) as { n: number }).n);
      if (ns.length % 200 === 0) await new Promise((r) => setTimeout(r, 20)); // the reader falls behind
    }
    expect(ns).toEqual(Array.from({ length: 2000 }, (_, i) => i));
  });

  it('pauses the upstream while its reader does not read, then hands it everything in order', async () => {
    const stream = postEvents(url('/events-flood'), {}, body, noCancel(), 10_000, (e) => e);
    expect((await stream.next()).done).toBe(false);
    // The reader stops reading: the upstream's writes stall once what the sockets hold is full, far short of the
    // 48 MB it has to send (a client that kept reading into memory would take it all at once).
    expect(await until(() => flood.lastWrite > 0 && Date.now() - flood.lastWrite > 300, 5000)).toBe(true);
    expect(flood.done).toBe(false);
    expect(flood.written).toBeLessThan(FLOOD_BYTES / 2);
    let events = 1;
    for await (const ev of stream) {
      if (ev.data === '[DONE]') break;
      expect(ev.data.length).toBe(FLOOD_EVENT - 8);
      events++;
    }
    expect(events).toBe(FLOOD_BYTES / FLOOD_EVENT);
    expect(flood.done).toBe(true);
  });

  it('fails an answer, or a stream event, larger than 32 MB and closes its connection', async () => {
    seen.length = 0;
    await expect(postJson(url('/json-huge'), {}, body, noCancel(), 10_000)).rejects.toMatchObject({
      fault: 'failed',
      message: "The model provider's answer is larger than 32 MB",
    });
    const stream = postEvents(url('/event-huge'), {}, body, noCancel(), 10_000, (e) => e);
    expect(await stream.next()).toEqual({ done: false, value: { event: undefined, data: '{"n":0}' } });
    await expect(stream.next()).rejects.toMatchObject({
      fault: 'failed',
      message: 'The model provider sent a stream event larger than 32 MB',
    });
    // Both connections closed (kept, the next call would reuse them).
    expect(await until(() => seen.length === 2 && seen.every((s) => s.closed))).toBe(true);
  });

  it('reads a JSON answer, and calls one that is not JSON unreadable', async () => {
    expect(await postJson(url('/json'), {}, body, noCancel(), 5000)).toEqual({ ok: true });
    const err = await postJson(url('/not-json'), {}, body, noCancel(), 5000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ fault: 'failed', message: 'The model provider sent an unreadable answer' });
  });

  it('turns error statuses into faults with the message and Retry-After, streamed or not', async () => {
    const firstEvent = (...args: Parameters<typeof postJson>) => postEvents(...args, (e) => e).next();
    for (const call of [postJson, firstEvent]) {
      await expect(call(url('/limited'), {}, body, noCancel(), 5000)).rejects.toMatchObject({
        fault: 'rate_limited',
        message: 'The model provider answered 429: slow down',
        retryAfterSeconds: 7,
      });
      await expect(call(url('/refused'), {}, body, noCancel(), 5000)).rejects.toMatchObject({
        fault: 'rejected',
        message: 'The model provider answered 400',
      });
    }
  });

  it('answers a timeout fault when the upstream says nothing in time', async () => {
    await expect(postJson(url('/silent'), {}, body, noCancel(), 200)).rejects.toMatchObject({ fault: 'timeout' });
  });

  it('cancels: before the call nothing is sent; while it waits for its connection or its answer it ends at once', async () => {
    seen.length = 0;
    const early = new Cancel();
    early.abort();
    await expect(postJson(url('/json'), {}, body, early, 5000)).rejects.toThrow();
    expect(seen).toEqual([]);

    // Cancelled at once, while the request waits for its connection's turn: it is never answered.
    const queued = new Cancel();
    const waiting = postJson(url('/silent'), {}, body, queued, 5000);
    queued.abort();
    const t0 = Date.now();
    await expect(waiting).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(1000);

    seen.length = 0;
    const cancel = new Cancel();
    const call = postJson(url('/silent'), {}, body, cancel, 5000);
    expect(await until(() => seen.length === 1)).toBe(true);
    cancel.abort();
    await expect(call).rejects.toThrow();
    expect(await until(() => seen[0]?.closed === true)).toBe(true);
  });

  it('cancels a stream in the middle: its reader gets the cancellation and the connection is closed', async () => {
    seen.length = 0;
    const cancel = new Cancel();
    const stream = postEvents(url('/events-then-silent'), {}, body, cancel, 5000, (e) => e);
    expect(await stream.next()).toEqual({ done: false, value: { event: undefined, data: '{"n":1}' } });
    const waiting = stream.next();
    cancel.abort();
    await expect(waiting).rejects.toThrow();
    expect(await until(() => seen[0]?.closed === true)).toBe(true);
  });

  it('answers a timeout fault when a stream falls silent for longer than the time limit', async () => {
    const stream = postEvents(url('/events-then-silent'), {}, body, noCancel(), 300, (e) => e);
    expect((await stream.next()).done).toBe(false);
    await expect(stream.next()).rejects.toMatchObject({
      fault: 'timeout',
      message: 'The model provider did not answer in time',
    });
  });

  it('does not time out a stream its reader holds back for longer than the time limit', async () => {
    let n = 0;
    for await (const ev of postEvents(url('/events-big'), {}, body, noCancel(), 300, (e) => e)) {
      if (ev.data === '[DONE]') break;
      // The upstream is paused (more than 256 KB unread) while the reader waits twice the time limit.
      if (n++ === 0) await new Promise((r) => setTimeout(r, 700));
    }
    expect(n).toBe(2000);
  });

  it('calls an answer whose connection breaks off a failure: before the end of JSON, or in a stream', async () => {
    await expect(postJson(url('/json-then-reset'), {}, body, noCancel(), 5000)).rejects.toMatchObject({
      fault: 'failed',
      message: 'Could not reach the model provider',
    });
    const stream = postEvents(url('/events-then-reset'), {}, body, noCancel(), 5000, (e) => e);
    expect((await stream.next()).done).toBe(false);
    await expect(stream.next()).rejects.toMatchObject({
      fault: 'failed',
      message: 'The model provider stream broke off',
    });
  });

  it('does not follow a redirect', async () => {
    seen.length = 0;
    await expect(postJson(url('/redirect'), {}, body, noCancel(), 5000)).rejects.toMatchObject({
      fault: 'failed',
      message: 'The model provider sent an unreadable answer',
    });
    expect(seen.map((s) => s.path)).toEqual(['/redirect']);
  });

  it("never takes bytes an upstream sent on an idle kept-alive connection for the next call's answer", async () => {
    expect(await postJson(url('/json'), {}, body, noCancel(), 5000)).toEqual({ ok: true });
    await new Promise((r) => setTimeout(r, 50)); // the connection is idle in the pool
    const stray = '{"someone":"else"}';
    // Unasked bytes, in the socket before the event loop reads them: the next call would take this connection.
    lastSocket?.write(
      `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${stray.length}\r\n\r\n${stray}`,
    );
    expect(await postJson(url('/json'), {}, body, noCancel(), 5000)).toEqual({ ok: true });
    // Sent while the connection waits idle in the pool: the next call still gets its own answer.
    await new Promise((r) => setTimeout(r, 50));
    lastSocket?.write(`HTTP/1.1 200 OK\r\ncontent-length: ${stray.length}\r\n\r\n${stray}`);
    await new Promise((r) => setTimeout(r, 50));
    expect(await postJson(url('/json'), {}, body, noCancel(), 5000)).toEqual({ ok: true });
  });
});
