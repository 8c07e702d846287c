import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { abortSignalOf, Cancel } from './cancel.ts';

describe('Cancel', () => {
  it('aborts once: aborted is set and one abort event is emitted', () => {
    const cancel = new Cancel();
    let events = 0;
    cancel.on('abort', () => events++);
    expect(cancel.aborted).toBe(false);
    cancel.abort();
    cancel.abort();
    expect(cancel.aborted).toBe(true);
    expect(events).toBe(1);
  });

  it('abortSignalOf follows a Cancel, aborted already or later, and hands an AbortSignal back as it is', () => {
    const later = new Cancel();
    const signal = abortSignalOf(later);
    expect(signal.aborted).toBe(false);
    later.abort();
    expect(signal.aborted).toBe(true);

    const before = new Cancel();
    before.abort();
    expect(abortSignalOf(before).aborted).toBe(true);

    const native = new AbortController().signal;
    expect(abortSignalOf(native)).toBe(native);
  });

  it('cancels an undici request in flight: the call rejects and the server sees its client go', async () => {
    let arrived: IncomingMessage | undefined;
    const server = createServer((req) => {
      req.on('error', () => {}); // the client going away is what this test does
      arrived = req; // never answers
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const cancel = new Cancel();
      const call = request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { signal: cancel });
      const outcome = call.then(
        () => 'answered',
        (err: Error) => err.name,
      );
      while (!arrived) await new Promise((r) => setTimeout(r, 5));
      const req = arrived;
      const closed = new Promise((resolve) => req.once('close', resolve));
      cancel.abort();
      expect(await outcome).toBe('AbortError');
      await closed;
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
