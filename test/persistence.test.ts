import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { openDatabase } from '../src/db/client.ts';
import { createKeyRing, generateKeySpec, parseKeys } from '../src/lib/crypto.ts';
import { call, testConfig } from './harness.ts';

/** The embedded default keeps its data across a restart (PGlite only: PostgreSQL is durable by nature). */
describe.runIf(inject('testDatabase').kind === 'pglite')('embedded data directory', () => {
  it('an account and its balance survive closing and reopening the database', async () => {
    const target = inject('testDatabase') as { template: string };
    const dir = mkdtempSync(join(tmpdir(), 'sb-restart-'));
    cpSync(target.template, dir, { recursive: true });
    const keyRing = createKeyRing(parseKeys(generateKeySpec('p')));
    try {
      let database = await openDatabase({ dataDir: dir });
      let app = await buildApp({ config: testConfig(dir), database, keyRing });
      const signup = await call(app, 'POST', '/api/v1/auth/signup', {
        body: { email: 'restart@example.test', password: 'restart-password', name: 'Restart' },
      });
      const token = signup.json().session_token;
      await app.close();
      await database.close();

      database = await openDatabase({ dataDir: dir });
      app = await buildApp({ config: testConfig(dir), database, keyRing });
      const me = await call(app, 'GET', '/api/v1/accounts/me', { token });
      expect(me.statusCode).toBe(200);
      expect(me.json()).toMatchObject({ email: 'restart@example.test', creditBalance: 100000 });
      await app.close();
      await database.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
