import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config.ts';
import { createKeyRing, generateKeySpec, parseKeys } from './crypto.ts';
import { redactSecrets } from './redact.ts';

describe('config', () => {
  it('has documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      baseUrl: 'http://localhost:8080',
      appUrl: 'http://localhost:8080',
      dataDir: './data',
      databaseUrl: undefined,
      logLevel: 'info',
      trustProxy: false,
      sessionTtlSeconds: 604800,
      rateLimits: { global: 100, auth: 10, llm: 30, mcp: 30, register: 5, windowMs: 60000, enabled: true },
      initialCredits: 100000,
    });
    expect(loadConfig({ PORT: '9000', BASE_URL: 'https://sb.example.com/' }).appUrl).toBe('https://sb.example.com');
  });

  it('names every bad variable at once', () => {
    try {
      loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud', DATABASE_URL: 'mysql://x', BASE_URL: 'not a url' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const problems = (err as ConfigError).problems.map((p) => p.split(':')[0]).sort();
      expect(problems).toEqual(['BASE_URL', 'DATABASE_URL', 'LOG_LEVEL', 'PORT']);
    }
  });

  it('requires ENCRYPTION_KEYS on PostgreSQL', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://localhost/x' })).toThrow(/ENCRYPTION_KEYS/);
  });

  it('reads TRUST_PROXY as a flag, a hop count or a list', () => {
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy).toEqual(['10.0.0.0/8', '127.0.0.1']);
  });
});

describe('key ring', () => {
  const a = generateKeySpec('a');
  const b = generateKeySpec('b');

  it('round-trips with a fresh IV each time, bound to its row', () => {
    const ring = createKeyRing(parseKeys(a));
    const one = ring.encrypt('secret-token', 'conn_1');
    const two = ring.encrypt('secret-token', 'conn_1');
    expect(one).not.toBe(two);
    expect(one).not.toContain('secret-token');
    expect(ring.decrypt(one, 'conn_1')).toBe('secret-token');
    expect(() => ring.decrypt(one, 'conn_2')).toThrow();
  });

  it('rotates: a new first key seals, the old one still opens; tampering fails', () => {
    const old = createKeyRing(parseKeys(a));
    const sealed = old.encrypt('x', 'id');
    const rotated = createKeyRing(parseKeys(`${b},${a}`));
    expect(rotated.currentKeyId).toBe('b');
    expect(rotated.decrypt(sealed, 'id')).toBe('x');
    expect(rotated.encrypt('y', 'id').split('.')[1]).toBe('b');
    const parts = sealed.split('.');
    const body = Buffer.from(parts[3] ?? '', 'base64url');
    body[0] = (body[0] ?? 0) ^ 1;
    expect(() => old.decrypt([parts[0], parts[1], parts[2], body.toString('base64url')].join('.'), 'id')).toThrow();
  });

  it('refuses malformed key specs', () => {
    expect(() => parseKeys('nokey')).toThrow(/keyId:base64Key/);
    expect(() => parseKeys('k:c2hvcnQ=')).toThrow(/32 bytes/);
  });
});

describe('redaction', () => {
  it('removes our tokens, JWTs and provider tokens, and keeps ordinary text', () => {
    const text = [
      'pat_AbCdEfGhIjKlMnOpQrStUvWxYz012345',
      'sess_AbCdEfGhIjKlMnOpQrStUvWxYz012345',
      'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlX2hlcmU',
      'ghp_0123456789abcdefghijABCDEFGHIJ',
      'xoxb-123456789012-abcdefghijkl',
      'ya29.a0AfH6SMBxxxxxxxxxxxxxxxxxxxxxxx',
      'sk-proj-abcdefghijklmnopqrstuvwxyz',
      'Authorization: Bearer abcdefghijklmnopqrstuvwxyz',
    ].join(' | ');
    const out = redactSecrets(text);
    expect(out).not.toMatch(/pat_Ab|sess_Ab|eyJhbGci|ghp_0|xoxb-1|ya29\.a0|sk-proj|Bearer abc/);
    expect(redactSecrets('The meeting is at 10:00 in room 4.')).toBe('The meeting is at 10:00 in room 4.');
  });
});
