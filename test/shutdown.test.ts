import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openTestDatabase, TEST_ENCRYPTION_KEYS, type TestDatabase } from './harness.ts';
import { type ServerProcess, startServer, startTestServer, type TestServer } from './server-process.ts';
import { testDatabaseTarget } from './test-database.ts';

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Whether a new TCP connection to the port is accepted or refused. */
async function probe(port: number): Promise<'accepted' | 'refused'> {
  const socket = connect(port, '127.0.0.1');
  try {
    await once(socket, 'connect');
    return 'accepted';
  } catch (err) {
    // Reset before it connected: the attempt was waiting in the backlog when the listener closed.
    if (['ECONNREFUSED', 'ECONNRESET'].includes((err as NodeJS.ErrnoException).code ?? '')) return 'refused';
    throw err;
  } finally {
    socket.destroy();
  }
}

/**
 * A real sign-up held open deterministically: its headers carry `Expect: 100-continue`, so the server answers
 * `100 Continue` once it has the request, and the body is sent only when the test calls `finish`.
 */
async function holdSignup(port: number, email: string) {
  const body = JSON.stringify({ email, password: 'shutdown-password', name: 'Shutdown' });
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let received = '';
  socket.on('data', (d: Buffer) => {
    received += d.toString();
  });
  const closed = once(socket, 'close');
  socket.write(
    [
      'POST /api/v1/auth/signup HTTP/1.1',
      `Host: 127.0.0.1:${port}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Expect: 100-continue',
      'Connection: close',
      '',
      '',
    ].join('\r\n'),
  );
  await waitFor(() => received.startsWith('HTTP/1.1 100 Continue'), 'the request to be accepted');
  return {
    /** Sends the body; the final answer's status and JSON body. */
    async finish(): Promise<{ status: number; body: unknown }> {
      socket.write(body);
      await closed;
      const final = received.slice(received.indexOf('\r\n\r\n') + 4);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(final)?.[1]);
      return { status, body: JSON.parse(final.slice(final.indexOf('\r\n\r\n') + 4)) };
    },
  };
}

/**
 * The real entry point (`src/main.ts`, as `npm start` runs it) under SIGTERM. The in-flight request is a real
 * sign-up held open deterministically: its headers carry `Expect: 100-continue`, so the server answers
 * `100 Continue` once it has the request, and the body is sent only after the signal has closed the listener.
 */
describe('process lifecycle', () => {
  const target = testDatabaseTarget();
  const servers: ServerProcess[] = [];
  const testServers: TestServer[] = [];
  const databases: TestDatabase[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop('SIGKILL');
    for (const t of testServers) await t.close();
    for (const d of databases) await d.close();
  });
  /**
   * A database of its own, handed over to the server processes: on PostgreSQL their background jobs would
   * otherwise work on the rows of the test files running beside this one.
   */
  const ownDatabase = async (): Promise<Record<string, string>> => {
    const testDb = await openTestDatabase({ privateDatabase: true });
    databases.push(testDb);
    await testDb.handOver();
    return { ...testDb.env, ...(target.kind === 'pg' ? { ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS } : {}) };
  };

  it('SIGTERM finishes the in-flight request, refuses new connections, closes the database and exits 0', async () => {
    // The drain has its own test below.
    const t = await startTestServer({ env: { LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '0' } });
    testServers.push(t);
    const server = t.server;

    const email = `shutdown-${Date.now()}@example.test`;
    const held = await holdSignup(server.port, email);

    server.child.kill('SIGTERM');
    await waitFor(async () => (await probe(server.port)) === 'refused', 'the listener to close');
    expect(server.child.exitCode).toBeNull(); // still running: it waits for our request

    const final = await held.finish();
    expect(final.status).toBe(201);
    expect(final.body).toMatchObject({ token_type: 'Bearer', account: { email, creditBalance: 100000 } });

    expect(await server.exited).toEqual({ code: 0, signal: null });
    const messages = server.logs.map((l) => l.msg);
    const signalled = messages.indexOf('shutting down: finishing in-flight requests');
    const served = server.logs.findIndex((l) => l.msg === 'request' && l.statusCode === 201);
    const stopped = messages.indexOf('Switchboard stopped: in-flight requests finished, database closed');
    // The request line is written once the answer is out, so it may follow the last line; both follow the signal.
    expect(signalled).toBeGreaterThanOrEqual(0);
    expect(served).toBeGreaterThan(signalled);
    expect(stopped).toBeGreaterThan(signalled);

    // The same data directory (or database) starts again with the account the in-flight request created.
    const again = await t.start();
    const signin = await fetch(`${again.url}/api/v1/auth/authenticate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'shutdown-password' }),
    });
    expect(signin.status).toBe(200);
    // Figures for the README and the budgets (ARCHITECTURE.md); timing is the bench's to judge, not a test's.
    await new Promise((r) => setTimeout(r, 1000));
    console.info(
      `[${target.kind}] start to ready: ${server.startToReadyMs} ms, restart on the same data ${again.startToReadyMs} ms; idle RSS ${again.rssMb()} MB`,
    );
    // A fresh install says what it lacks, once each, after the ready line.
    const warnings = again.logs.filter((l) => l.level === 40);
    expect(warnings.map((l) => l.msg)).toEqual(
      expect.arrayContaining([
        'No LLM upstream is set: agent chat, the LLM gateway, scheduled tasks and knowledge compilation need one.',
        expect.stringMatching(/^No OAuth provider has operator credentials/),
      ]),
    );
    expect(warnings.find((l) => String(l.msg).startsWith('No LLM'))?.how).toContain('OPENAI_API_KEY');
    expect(await again.stop('SIGINT')).toEqual({ code: 0, signal: null });
  }, 180_000);

  it('SIGTERM drains first: /readyz answers 503 at once, the in-flight request finishes and new ones are served', async () => {
    // The window in which the checks below run; each takes milliseconds.
    const t = await startTestServer({ env: { LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '8000' } });
    testServers.push(t);
    const server = t.server;
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    const held = await holdSignup(server.port, `drain-held-${Date.now()}@example.test`);

    server.child.kill('SIGTERM');
    await waitFor(async () => (await fetch(`${server.url}/readyz`)).status === 503, '/readyz to turn 503');
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toBe('1');
    expect(await ready.json()).toEqual({
      error: 'ServiceUnavailableError',
      message: 'Draining: shutting down',
      statusCode: 503,
    });
    // Still serving while the balancer notices: new connections and requests that use the database.
    expect(await probe(server.port)).toBe('accepted');
    const signup = await fetch(`${server.url}/api/v1/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ email: `drain-new-${Date.now()}@example.test`, password: 'drain-password', name: 'D' }),
    });
    expect(signup.status).toBe(201);
    expect((await held.finish()).status).toBe(201);

    expect(await server.exited).toEqual({ code: 0, signal: null });
    const messages = server.logs.map((l) => l.msg);
    const draining = messages.findIndex((m) => String(m).startsWith('draining:'));
    expect(draining).toBeGreaterThanOrEqual(0);
    expect(messages.indexOf('shutting down: finishing in-flight requests')).toBeGreaterThan(draining);
    expect(messages).toContain('Switchboard stopped: in-flight requests finished, database closed');
  }, 120_000);

  it('a bad provider file stops start-up, read while the database opens, and the next start takes the data directory', async () => {
    const own = mkdtempSync(join(tmpdir(), 'sb-bad-provider-'));
    const providers = join(own, 'providers');
    mkdirSync(providers);
    writeFileSync(join(providers, 'broken.json'), '{ "id": "broken", ');
    try {
      const env = await ownDatabase();
      const failed = startServer({ ...env, PROVIDERS_DIR: providers });
      await expect(failed).rejects.toThrow(/server exited \(1\) before it was ready/);
      await expect(failed).rejects.toThrow(/broken\.json: not valid JSON/);
      // The embedded database's lock names a process that is gone: the next start takes it over.
      const fixed = await startServer(env);
      servers.push(fixed);
      expect((await fetch(`${fixed.url}/readyz`)).status).toBe(200);
      expect(await fixed.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  }, 120_000);
});
