import { once } from 'node:events';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_ENCRYPTION_KEYS } from './harness.ts';
import { type ServerProcess, startServer } from './server-process.ts';
import { testDatabaseTarget } from './test-database.ts';

/** A client that sends a request's headers, then its body one byte every 100 ms (never all of it). */
async function trickle(port: number, opts: { headersOnly?: boolean } = {}) {
  const socket: Socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let received = '';
  socket.on('data', (d: Buffer) => {
    received += d.toString();
  });
  socket.on('error', () => {}); // the server may reset the connection while we write
  // Not events.once: it rejects on 'error', and a reset is not what these tests are about.
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const head = [
    'POST /api/v1/auth/signup HTTP/1.1',
    `Host: 127.0.0.1:${port}`,
    'Content-Type: application/json',
    'Content-Length: 100000',
    '',
    '',
  ].join('\r\n');
  // Headers only: one header's value grows for ever and the blank line never comes.
  socket.write(opts.headersOnly ? `${head.slice(0, -2)}X-Slow: ` : head);
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(opts.headersOnly ? 'a' : ' ');
  }, 100);
  void closed.then(() => clearInterval(timer));
  return { closed, received: () => received };
}

const bodyOf = (raw: string) => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as unknown;

/** Issue 10 item 5: a trickled request is cut (408, §7 body, connection closed), also during shutdown. */
describe('slow request bodies', () => {
  const target = testDatabaseTarget();
  const dirs: string[] = [];
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const start = async (env: Record<string, string>) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sb-slow-'));
    dirs.push(dataDir);
    if (target.kind === 'pglite') cpSync(target.template, dataDir, { recursive: true });
    const server = await startServer({
      DATA_DIR: dataDir,
      ...(target.kind === 'pg' ? { DATABASE_URL: target.url, ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS } : {}),
      ...env,
    });
    servers.push(server);
    return server;
  };

  it('answers 408 RequestTimeoutError and closes the connection once REQUEST_TIMEOUT_MS has passed', async () => {
    const server = await start({ REQUEST_TIMEOUT_MS: '1000' });
    for (const headersOnly of [false, true]) {
      const client = await trickle(server.port, { headersOnly });
      await client.closed;
      expect(client.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(client.received()).toContain('\r\nConnection: close\r\n');
      expect(bodyOf(client.received())).toEqual({
        error: 'RequestTimeoutError',
        message: 'The request did not arrive in full within 1000 ms (REQUEST_TIMEOUT_MS)',
        statusCode: 408,
      });
    }
    // The service goes on answering others.
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  }, 60_000);

  it('does not hold shutdown: a trickled body is cut after SHUTDOWN_TIMEOUT_MS / 2 and the process exits 0', async () => {
    const server = await start({ REQUEST_TIMEOUT_MS: '600000', SHUTDOWN_TIMEOUT_MS: '6000' });
    const client = await trickle(server.port);
    await new Promise((r) => setTimeout(r, 300));
    server.child.kill('SIGTERM');
    await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(await server.exited).toEqual({ code: 0, signal: null });
    const messages = server.logs.map((l) => l.msg);
    expect(messages).toContain('Switchboard stopped: in-flight requests finished, database closed');
    expect(messages).not.toContain('shutdown timed out; exiting');
  }, 60_000);
});
