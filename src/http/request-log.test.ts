import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type TestHarness, testConfig } from '../../test/harness.ts';
import { buildApp, loggerOptions } from '../app.ts';

/**
 * Issue 10 item 7: a provider's authorization `code` and our `state` arrive in the callback's query string;
 * they are credentials for a few minutes and must not be written to the request logs.
 */
describe('request logs', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('carry no provider code or state, on the callback and on the authorization endpoint', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const app = await buildApp({
      config: testConfig(mkdtempSync(join(tmpdir(), 'sb-reqlog-')), { LOG_LEVEL: 'info' }),
      database: h.database,
      keyRing: h.keyRing,
      logger: { ...(loggerOptions('info') as object), stream } as never,
    });
    try {
      const code = 'provider-code-0123456789';
      const state = 'ost_state0123456789abcdef';
      const cb = await app.inject({ method: 'GET', url: `/api/v1/connections/callback?code=${code}&state=${state}` });
      expect(cb.statusCode).toBe(400);
      await app.inject({ method: 'GET', url: `/oauth/authorize?client_id=app_x&state=${state}&response_type=code` });
      const text = lines.join('');
      expect(text).toContain('"url":"/api/v1/connections/callback?code=[REDACTED]&state=[REDACTED]"');
      expect(text).toContain('state=[REDACTED]');
      expect(text).not.toContain(code);
      expect(text).not.toContain(state);
    } finally {
      await app.close();
    }
  });
});
