import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { type Database, openDatabase } from '../src/db/client.ts';
import type { App } from '../src/http/types.ts';
import { createKeyRing, parseKeys } from '../src/lib/crypto.ts';
import { call, TEST_ENCRYPTION_KEYS, testConfig } from './harness.ts';
import { testDatabaseTarget } from './test-database.ts';

const run = promisify(execFile);
// The run's one key: on PostgreSQL every test file shares the database and its sealed secrets.
const KEYS = TEST_ENCRYPTION_KEYS;

/**
 * The real `switchboard` command, as a user runs it, against the run's database. Each run is a process that
 * loads tsx and opens the database (1-3 s), hence the long timeouts.
 */
describe('switchboard CLI', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let database: Database;
  let app: App;
  const target = testDatabaseTarget();

  const cli = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await run(process.execPath, ['bin/switchboard.js', ...args], {
        // Vitest sets BASE_URL=/ for Vite; the CLI reads the real setting.
        env: { ...process.env, ...env, BASE_URL: 'http://localhost:8080', LOG_LEVEL: 'error' },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'sb-cli-'));
    if (target.kind === 'pglite') cpSync(target.template, dataDir, { recursive: true });
    env = { DATA_DIR: dataDir, ENCRYPTION_KEYS: KEYS, ...(target.kind === 'pg' ? { DATABASE_URL: target.url } : {}) };
  });
  afterAll(async () => {
    await app?.close();
    await database?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints help and refuses bad usage with exit code 2', async () => {
    const helpOut = await cli('--help');
    expect(helpOut.code).toBe(0);
    expect(helpOut.stdout).toContain('account create');
    expect(helpOut.stdout).toContain('token create');
    const missing = await cli('token', 'create', '--email', 'x@example.test');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('Missing --scopes');
    expect((await cli('frobnicate')).code).toBe(2);
    const commandHelp = await cli('token', 'create', '--help');
    expect(commandHelp.code).toBe(0);
    expect(commandHelp.stdout).toContain('--expires-in');
    const keys = await cli('keys', 'generate', '--id', 'k2');
    expect(keys.code).toBe(0);
    expect(keys.stdout).toMatch(/^k2:[A-Za-z0-9+/]{43}=\n$/);
    expect(parseKeys(keys.stdout.trim()).get('k2')).toHaveLength(32);
  }, 60_000);

  it('creates an account and a PAT that then works against the API, and tops up once per key', async () => {
    const email = `cli-${Date.now()}@example.test`;
    const created = await cli(
      'account',
      'create',
      '--email',
      email,
      '--password',
      'cli-password',
      '--name',
      'Cli User',
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^Created account acc_\S+ <.+> with 100000 credits\.\n$/);
    const token = await cli('token', 'create', '--email', email.toUpperCase(), '--scopes', 'account,llm-all');
    expect(token.code).toBe(0);
    const pat = token.stdout.trim();
    expect(pat).toMatch(/^pat_[A-Za-z0-9_-]{43}$/);
    expect(token.stderr).toMatch(/^Created token \S+ \((account, llm-all|llm-all, account)\), expires \d{4}-/);
    const badScope = await cli('token', 'create', '--email', email, '--scopes', 'account,nope');
    expect(badScope).toMatchObject({ code: 2, stdout: '' });
    expect(badScope.stderr).toContain('--scopes: unknown scope nope');
    const tooLong = await cli(
      'token',
      'create',
      '--email',
      email,
      '--scopes',
      'account',
      '--expires-in',
      '99999999999',
    );
    expect(tooLong.code).toBe(2);
    expect(tooLong.stderr).toContain('--expires-in: must be at most');

    const addCredits = (who: string, amount: string, key: string) =>
      cli('credits', 'add', '--email', who, '--amount', amount, '--idempotency-key', key);
    const first = await addCredits(email, '250', `k-${email}`);
    expect(first.stdout).toContain('Added 250 credits: balance 100250');
    // The e-mail in any case; the same key adds nothing the second time.
    const again = await addCredits(email.toUpperCase(), '250', `k-${email}`);
    expect(again.stdout).toContain('nothing added');
    const nobody = await addCredits('nobody@example.test', '5', 'k-0');
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toContain('No account with e-mail nobody@example.test');
    const dup = await cli('account', 'create', '--email', email, '--password', 'cli-password');
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain('An account with this e-mail already exists');

    database =
      target.kind === 'pg' ? await openDatabase({ databaseUrl: target.url, dataDir }) : await openDatabase({ dataDir });
    app = await buildApp({ config: testConfig(dataDir), database, keyRing: createKeyRing(parseKeys(KEYS)) });
    const me = await call(app, 'GET', '/api/v1/accounts/me', { token: pat });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ email, name: 'Cli User', creditBalance: 100250 });
    if (target.kind === 'pglite') {
      // The embedded database is this process's now: a second opener would corrupt it, so the CLI refuses.
      const busy = await cli('account', 'create', '--email', `other-${email}`, '--password', 'cli-password');
      expect(busy.code).toBe(1);
      expect(busy.stderr).toContain(`is in use by process ${process.pid}`);
    }
  }, 180_000);
});
