import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { openRuntime } from '../src/runtime.ts';
import { call, testConfig } from './harness.ts';
import { testDatabaseTarget } from './test-database.ts';

/**
 * The embedded default keeps its data across a restart: the same start-up path as `npm start` (open the data
 * directory, migrate, load or generate the key file), twice over one DATA_DIR. PGlite only: PostgreSQL's
 * durability is the server's.
 */
describe.runIf(testDatabaseTarget().kind === 'pglite')('embedded data directory', () => {
  it('an account, its balance, its ledger, its tokens and the encryption key survive a restart', async () => {
    const target = testDatabaseTarget();
    const dir = mkdtempSync(join(tmpdir(), 'sb-restart-'));
    // A migrated data directory, as a first start leaves it (a copy: initdb takes seconds).
    cpSync(target.template, dir, { recursive: true });
    // No ENCRYPTION_KEYS: the embedded default generates a key file on first start.
    const config = testConfig(dir, { ENCRYPTION_KEYS: '' });
    try {
      const first = await openRuntime(config);
      expect(first.generatedKeyFile).toBe(join(dir, 'encryption-keys'));
      const sealed = first.keyRing.encrypt('provider-refresh-token', 'conn_1');
      let app = await buildApp({ config, database: first.database, keyRing: first.keyRing });
      const signup = await call(app, 'POST', '/api/v1/auth/signup', {
        body: { email: 'Restart@Example.test', password: 'restart-password', name: 'Restart' },
      });
      expect(signup.statusCode).toBe(201);
      const { session_token: session, account } = signup.json();
      const pat = await call(app, 'POST', '/api/v1/auth/pat', {
        token: session,
        body: { name: 'kept', scopes: ['account'] },
      });
      const token = pat.json().personal_access_token;
      await app.close();
      await first.database.close();

      const second = await openRuntime(config);
      expect(second.generatedKeyFile).toBeUndefined();
      expect(existsSync(join(dir, 'pgdata'))).toBe(true);
      expect(second.keyRing.decrypt(sealed, 'conn_1')).toBe('provider-refresh-token');
      app = await buildApp({ config, database: second.database, keyRing: second.keyRing });
      try {
        const me = await call(app, 'GET', '/api/v1/accounts/me', { token });
        expect(me.statusCode).toBe(200);
        expect(me.json()).toEqual(account);
        expect(me.json().creditBalance).toBe(100000);
        expect((await call(app, 'GET', '/api/v1/accounts/me', { token: session })).statusCode).toBe(200);
        const ledger = await call(app, 'GET', '/api/v1/credit-transactions', { token });
        expect(ledger.json().data).toEqual([expect.objectContaining({ type: 'grant', amount: 100000 })]);
        const signin = await call(app, 'POST', '/api/v1/auth/authenticate', {
          body: { email: 'restart@example.test', password: 'restart-password' },
        });
        expect(signin.statusCode).toBe(200);
      } finally {
        await app.close();
        await second.database.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
