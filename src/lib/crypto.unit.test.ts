import { createCipheriv, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createKeyRing, generateKeySpec, loadKeyRing, parseKeys } from './crypto.ts';

const a = generateKeySpec('a');
const b = generateKeySpec('b');

/** Rebuilds a sealed value with one part changed. */
function withPart(sealed: string, index: number, change: (part: Buffer) => Buffer): string {
  const parts = sealed.split('.');
  parts[index] = change(Buffer.from(parts[index] ?? '', 'base64url')).toString('base64url');
  return parts.join('.');
}

describe('key ring (AES-256-GCM)', () => {
  it('round-trips with a fresh IV each time; the sealed text names its key', () => {
    const ring = createKeyRing(parseKeys(a));
    const one = ring.encrypt('secret-token ✓', 'conn_1');
    const two = ring.encrypt('secret-token ✓', 'conn_1');
    expect(one).not.toBe(two);
    expect(one).toMatch(/^v1\.a\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    expect(one).not.toContain('secret');
    expect(ring.decrypt(one, 'conn_1')).toBe('secret-token ✓');
    expect(ring.decrypt(ring.encrypt('', 'x'), 'x')).toBe('');
  });

  it('binds a ciphertext to its row: another row id does not open it', () => {
    const ring = createKeyRing(parseKeys(a));
    const sealed = ring.encrypt('token', 'conn_1');
    expect(() => ring.decrypt(sealed, 'conn_2')).toThrow('Unsupported state or unable to authenticate data');
    expect(() => ring.decrypt(sealed, '')).toThrow();
  });

  it('rotates: a new first key seals, an old key still opens; a removed key does not', () => {
    const sealedWithA = createKeyRing(parseKeys(a)).encrypt('x', 'id');
    const rotated = createKeyRing(parseKeys(`${b},${a}`));
    expect(rotated.currentKeyId).toBe('b');
    expect(rotated.decrypt(sealedWithA, 'id')).toBe('x');
    const sealedWithB = rotated.encrypt('y', 'id');
    expect(sealedWithB.split('.')[1]).toBe('b');
    expect(createKeyRing(parseKeys(b)).decrypt(sealedWithB, 'id')).toBe('y');
    expect(() => createKeyRing(parseKeys(b)).decrypt(sealedWithA, 'id')).toThrow('Unknown encryption key "a"');
    // Same id, other key material: refused, not garbage.
    expect(() => createKeyRing(parseKeys(generateKeySpec('a'))).decrypt(sealedWithA, 'id')).toThrow();
  });

  it('refuses tampering: a flipped bit anywhere, a cut tag, a swapped key id, a bad format', () => {
    const ring = createKeyRing(parseKeys(`${a},${b}`));
    const sealed = ring.encrypt('attack at dawn', 'id');
    const flip = (buf: Buffer, at: number) => {
      const copy = Buffer.from(buf);
      copy[at] = (copy[at] ?? 0) ^ 1;
      return copy;
    };
    const bodyLength = Buffer.from(sealed.split('.')[3] ?? '', 'base64url').length;
    for (let i = 0; i < bodyLength; i++) {
      expect(() =>
        ring.decrypt(
          withPart(sealed, 3, (p) => flip(p, i)),
          'id',
        ),
      ).toThrow();
    }
    expect(() =>
      ring.decrypt(
        withPart(sealed, 2, (p) => flip(p, 0)),
        'id',
      ),
    ).toThrow();
    // GCM accepts tags as short as 4 bytes unless told otherwise: every shortened tag must be refused.
    for (const cut of [1, 4, 8, 12]) {
      expect(() =>
        ring.decrypt(
          withPart(sealed, 3, (p) => p.subarray(0, p.length - cut)),
          'id',
        ),
      ).toThrow();
    }
    expect(() =>
      ring.decrypt(
        withPart(sealed, 3, (p) => p.subarray(p.length - 4)),
        'id',
      ),
    ).toThrow();
    expect(() => ring.decrypt(sealed.replace('.a.', '.b.'), 'id')).toThrow();
    expect(() =>
      ring.decrypt(
        withPart(sealed, 2, (p) => p.subarray(0, 8)),
        'id',
      ),
    ).toThrow('Malformed ciphertext');
    for (const bad of ['', 'v1.a', 'v2.a.AAAA.AAAA', sealed.replace(/^v1/, 'v0')]) {
      expect(() => ring.decrypt(bad, 'id'), bad).toThrow();
    }
  });

  it('refuses a genuine but truncated tag (4 bytes are guessable), accepting the full one', () => {
    const key = parseKeys(a).get('a') ?? Buffer.alloc(0);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from('id'));
    const body = Buffer.concat([cipher.update(''), cipher.final(), cipher.getAuthTag()]);
    const sealed = (tag: Buffer) => ['v1', 'a', iv.toString('base64url'), tag.toString('base64url')].join('.');
    const ring = createKeyRing(parseKeys(a));
    expect(ring.decrypt(sealed(body), 'id')).toBe('');
    for (const length of [4, 8, 12, 15]) {
      expect(() => ring.decrypt(sealed(body.subarray(0, length)), 'id'), String(length)).toThrow(
        'Malformed ciphertext',
      );
    }
  });

  it('refuses malformed key specs, naming the variable', () => {
    expect(() => parseKeys('nokey')).toThrow('ENCRYPTION_KEYS: each entry must be "keyId:base64Key"');
    expect(() => parseKeys('k:c2hvcnQ=')).toThrow('ENCRYPTION_KEYS: key "k" must be 32 bytes (base64), got 5');
    expect(() => parseKeys('bad id!:AAAA')).toThrow('ENCRYPTION_KEYS: bad key id "bad id!"');
    expect(() => parseKeys(' , ')).toThrow('ENCRYPTION_KEYS: no key given');
  });

  it('on the embedded default, generates a key file once (owner-only) and reuses it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-keys-'));
    try {
      const first = loadKeyRing(undefined, dir);
      const file = join(dir, 'encryption-keys');
      expect(first.generatedAt).toBe(file);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const sealed = first.ring.encrypt('kept', 'row');
      const second = loadKeyRing(undefined, dir);
      expect(second.generatedAt).toBeUndefined();
      expect(second.ring.decrypt(sealed, 'row')).toBe('kept');
      expect(readFileSync(file, 'utf8')).toMatch(/^[A-Za-z0-9_-]+:[A-Za-z0-9+/]{43}=\n$/);
      // ENCRYPTION_KEYS wins over the file.
      expect(loadKeyRing(b, dir).ring.currentKeyId).toBe('b');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
