import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accounts, oauthKeys } from '../../src/db/schema/index.ts';
import { openTestDatabase, TEST_ENCRYPTION_KEYS, type TestDatabase } from '../harness.ts';

const run = promisify(execFile);

/**
 * `switchboard keys rotate` and `switchboard client allow-whitelabel`, run as an operator runs them, on a
 * database of their own: rotating retires the instance's signing key, which other test files use meanwhile.
 */
describe('OAuth operator commands', () => {
  let testDb: TestDatabase;
  beforeAll(async () => {
    testDb = await openTestDatabase({ privateDatabase: true });
    await testDb.handOver(); // PGlite: the commands open the data directory themselves
  });
  afterAll(() => testDb.close());

  const cli = async (...args: string[]) => {
    const env = {
      ...process.env,
      ...testDb.env,
      ENCRYPTION_KEYS: TEST_ENCRYPTION_KEYS,
      BASE_URL: 'http://localhost:8080',
      LOG_LEVEL: 'error',
    };
    try {
      const { stdout, stderr } = await run(process.execPath, ['bin/switchboard.js', ...args], { env });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  it('keys rotate adds a signing key and retires the old one; allow-whitelabel opens the role', async () => {
    const email = `wl-${Date.now()}@example.test`;
    expect((await cli('account', 'create', '--email', email, '--password', 'long-password')).code).toBe(0);
    const first = await cli('keys', 'rotate');
    expect(first.code, first.stderr).toBe(0);
    const second = await cli('keys', 'rotate');
    expect(second.code, second.stderr).toBe(0);
    const kids = [first, second].map((r) => /^New signing key (key_\S+):/.exec(r.stdout)?.[1] ?? '');
    expect(second.stdout).toContain(`Retired ${kids[0]}`);
    const allowed = await cli('client', 'allow-whitelabel', '--email', email);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toContain('may now give its OAuth clients the whitelabel-customer role');
    expect((await cli('client', 'allow-whitelabel')).code).toBe(2);
    expect((await cli('client', 'allow-whitelabel', '--email', 'nobody@example.test')).code).toBe(1);

    // Closed with the test database.
    const database = await testDb.open();
    const rows = await database.db.select().from(oauthKeys).where(inArray(oauthKeys.id, kids));
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(kids[0] ?? '')?.retiredAt).toBeInstanceOf(Date);
    expect(byId.get(kids[1] ?? '')?.retiredAt).toBeNull();
    // Sealed at rest: the private key is not readable without the key ring.
    expect(byId.get(kids[1] ?? '')?.secretCiphertext).toMatch(/^v1\./);
    const [account] = await database.db.select().from(accounts).where(eq(accounts.email, email));
    expect(account?.allowWhitelabel).toBe(true);
  }, 120_000);
});
