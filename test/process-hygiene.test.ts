import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_ENCRYPTION_KEYS } from './harness.ts';
import { type ServerProcess, startServer } from './server-process.ts';
import { testDatabaseTarget } from './test-database.ts';

/** The command lines of a process's children (Linux /proc). */
function childrenOf(pid: number): string[] {
  const out: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').trim());
    } catch {
      // the process ended meanwhile
    }
  }
  return out;
}

async function waitFor(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Issue 10 item 12: what the running service leaves behind and writes, as an operator sees it. */
describe('process hygiene of the started service', () => {
  const target = testDatabaseTarget();
  const dirs: string[] = [];
  const servers: ServerProcess[] = [];
  const others: ChildProcess[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop('SIGKILL');
    for (const o of others) o.kill('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const start = async (env: Record<string, string> = {}) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sb-hygiene-'));
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

  it('keeps no esbuild process once started, and logs oidc-provider’s warnings as JSON, not raw stderr', async () => {
    const server = await start();
    expect(childrenOf(server.child.pid ?? 0).filter((c) => c.includes('esbuild'))).toEqual([]);

    // The first OAuth request loads oidc-provider, which warns on Node 20.
    const meta = await fetch(`${server.url}/.well-known/oauth-authorization-server`);
    expect(meta.status).toBe(200);
    expect(server.stderr()).not.toContain('oidc-provider');
    if (Number(process.versions.node.split('.')[0]) < 22) {
      await waitFor(() => server.logs.some((l) => l.source === 'oidc-provider'), 'the oidc-provider warning');
      expect(server.logs.find((l) => l.source === 'oidc-provider')).toMatchObject({
        level: 40,
        msg: expect.stringContaining('Unsupported runtime'),
      });
    }
    expect(childrenOf(server.child.pid ?? 0).filter((c) => c.includes('esbuild'))).toEqual([]);
  }, 60_000);

  it('says once that Redis is unreachable, and once that it is back', async () => {
    // Redis's port is held until redis-server starts on it: a listener that resets every connection (Redis is
    // not reachable). A port only picked as free could be taken by another process in the seconds before
    // redis-server binds it (the two databases' suites run side by side), and the recovery would never come.
    const holder = createServer((socket) => socket.resetAndDestroy());
    holder.listen(0, '127.0.0.1');
    await once(holder, 'listening');
    const redisPort = (holder.address() as AddressInfo).port;
    const server = await start({ REDIS_URL: `redis://127.0.0.1:${redisPort}` });
    const about = (level: number) => server.logs.filter((l) => l.level === level && /redis/i.test(String(l.msg)));
    await waitFor(() => about(40).length > 0, 'the warning');
    // ioredis retries every 2 s at most: 7 s is several failed attempts.
    await new Promise((r) => setTimeout(r, 7000));
    expect(about(40).map((l) => l.msg)).toEqual([
      'Redis is not reachable: rate limits are not enforced until it is (the sign-in limit counts in the database)',
    ]);

    await new Promise((r) => holder.close(r));
    const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', ''], {
      stdio: 'ignore',
    });
    others.push(redis);
    await waitFor(() => about(30).length > 0, 'the recovery', 30_000);
    await new Promise((r) => setTimeout(r, 1000));
    expect(about(30).map((l) => l.msg)).toEqual(['Redis is reachable again: rate limits are enforced']);
    expect(about(40)).toHaveLength(1);
  }, 90_000);
});
