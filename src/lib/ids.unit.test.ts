import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newId, newSecretToken, sha256Hex } from './ids.ts';

describe('ids', () => {
  it('sha256Hex is SHA-256 in lowercase hex (FIPS 180-2 test vectors)', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    // A string is hashed as UTF-8.
    expect(sha256Hex('é')).toBe(
      createHash('sha256')
        .update(Buffer.from([0xc3, 0xa9]))
        .digest('hex'),
    );
  });

  it('new ids and tokens are prefixed, URL-safe and distinct', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newId('request')));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^req_[A-Za-z0-9_-]{22}$/);
    expect(newSecretToken('pat')).toMatch(/^pat_[A-Za-z0-9_-]{43}$/);
  });
});
