import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * AES-256-GCM key ring for secrets at rest. Each ciphertext names the key that sealed it, so keys rotate by
 * putting a new key first in `ENCRYPTION_KEYS` while older ones keep decrypting. The row id is bound as
 * associated data: a ciphertext copied into another row fails to open.
 */
export interface KeyRing {
  currentKeyId: string;
  encrypt(plaintext: string, associatedData: string): string;
  decrypt(sealed: string, associatedData: string): string;
}

const FORMAT = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Parses `kid:base64key[,kid:base64key...]`; the first key seals, all keys open. */
export function parseKeys(spec: string): Map<string, Buffer> {
  const keys = new Map<string, Buffer>();
  for (const part of spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const idx = part.indexOf(':');
    if (idx <= 0) throw new Error('ENCRYPTION_KEYS: each entry must be "keyId:base64Key"');
    const id = part.slice(0, idx);
    if (!/^[A-Za-z0-9_-]{1,32}$/.test(id)) throw new Error(`ENCRYPTION_KEYS: bad key id "${id}"`);
    const key = Buffer.from(part.slice(idx + 1), 'base64');
    if (key.length !== 32) throw new Error(`ENCRYPTION_KEYS: key "${id}" must be 32 bytes (base64), got ${key.length}`);
    keys.set(id, key);
  }
  if (keys.size === 0) throw new Error('ENCRYPTION_KEYS: no key given');
  return keys;
}

export function createKeyRing(keys: Map<string, Buffer>): KeyRing {
  const [currentKeyId, currentKey] = [...keys.entries()][0] ?? [];
  if (!currentKeyId || !currentKey) throw new Error('Key ring needs at least one key');
  return {
    currentKeyId,
    encrypt(plaintext, associatedData) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', currentKey, iv);
      cipher.setAAD(Buffer.from(associatedData));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return [FORMAT, currentKeyId, iv.toString('base64url'), body.toString('base64url')].join('.');
    },
    decrypt(sealed, associatedData) {
      const [format, keyId, ivText, bodyText] = sealed.split('.');
      if (format !== FORMAT || !keyId || !ivText || !bodyText) throw new Error('Malformed ciphertext');
      const key = keys.get(keyId);
      if (!key) throw new Error(`Unknown encryption key "${keyId}"`);
      const iv = Buffer.from(ivText, 'base64url');
      const body = Buffer.from(bodyText, 'base64url');
      if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new Error('Malformed ciphertext');
      // A fixed tag length: GCM would otherwise accept a tag cut to 4 bytes, which a forger can guess.
      const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(associatedData));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString(
        'utf8',
      );
    },
  };
}

export function generateKeySpec(id = `k${Date.now().toString(36)}`): string {
  return `${id}:${randomBytes(32).toString('base64')}`;
}

/**
 * Keys from `ENCRYPTION_KEYS`, or on the embedded default a key file under the data directory, generated on
 * first start (the caller warns: losing that file loses every stored secret).
 */
export function loadKeyRing(spec: string | undefined, dataDir: string): { ring: KeyRing; generatedAt?: string } {
  if (spec) return { ring: createKeyRing(parseKeys(spec)) };
  const file = join(dataDir, 'encryption-keys');
  if (existsSync(file)) return { ring: createKeyRing(parseKeys(readFileSync(file, 'utf8'))) };
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, `${generateKeySpec()}\n`, { mode: 0o600 });
  return { ring: createKeyRing(parseKeys(readFileSync(file, 'utf8'))), generatedAt: file };
}
