import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Config } from '../../config.ts';
import type { Db, Executor } from '../../db/client.ts';
import type { KeyRing } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import * as repo from './repo.ts';

/**
 * Signing keys of the authorization server, sealed at rest with the key ring (row id as associated data).
 * The newest active key signs. Rotating retires the current key: it stays published at the JWKS (and keeps
 * verifying) for `retireAfterSeconds`, longer than any token it signed lives, and is then deleted.
 */
export interface PublicJwk {
  kty: string;
  kid: string;
  use: 'sig';
  alg: 'RS256';
  n: string;
  e: string;
}

export interface PrivateJwk extends PublicJwk {
  d: string;
  p: string;
  q: string;
  dp: string;
  dq: string;
  qi: string;
}

export interface KeySet {
  /** The key that signs now. */
  signing: PrivateJwk;
  /** Every key that still verifies (signing first): what `/.well-known/jwks.json` publishes. */
  published: PublicJwk[];
  /** Secrets that sign the server's cookies; the first signs, all verify. */
  cookieKeys: string[];
}

/** How long a retired signing key stays published: past the life of any token it signed (ID tokens too). */
export function retireAfterSeconds(deps: { config: Pick<Config, 'oauth'> }): number {
  return deps.config.oauth.accessTokenTtl + 300;
}

function newRsaKey(kid: string): PrivateJwk {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' }) as Omit<PrivateJwk, 'kid' | 'use' | 'alg'>;
  return { ...jwk, kid, use: 'sig', alg: 'RS256' };
}

function toPublic(jwk: PrivateJwk): PublicJwk {
  return { kty: jwk.kty, kid: jwk.kid, use: 'sig', alg: 'RS256', n: jwk.n, e: jwk.e };
}

async function insertSigningKey(db: Executor, keyRing: KeyRing): Promise<PrivateJwk> {
  const id = newId('signingKey');
  const jwk = newRsaKey(id);
  await repo.insertKey(db, {
    id,
    use: 'sig',
    secretCiphertext: keyRing.encrypt(JSON.stringify(jwk), id),
    publicJwk: toPublic(jwk) as unknown as Record<string, unknown>,
  });
  return jwk;
}

/** Loads the key set, creating the first signing key and cookie secret on first start. */
export async function loadKeySet(db: Db, keyRing: KeyRing, retireAfter: number): Promise<KeySet> {
  let rows = await repo.listKeys(db);
  const hasSigning = rows.some((r) => r.use === 'sig' && !r.retiredAt);
  const hasCookie = rows.some((r) => r.use === 'cookie');
  if (!hasSigning || !hasCookie) {
    // First start: one instance creates the keys while others starting at the same time wait (the key lock).
    await repo.withKeyLock(db, async (tx) => {
      const existing = await repo.listKeys(tx);
      if (!existing.some((r) => r.use === 'sig' && !r.retiredAt)) await insertSigningKey(tx, keyRing);
      if (!existing.some((r) => r.use === 'cookie')) {
        const id = newId('signingKey');
        await repo.insertKey(tx, {
          id,
          use: 'cookie',
          secretCiphertext: keyRing.encrypt(randomBytes(32).toString('base64url'), id),
        });
      }
    });
    rows = await repo.listKeys(db);
  }
  const cutoff = Date.now() - retireAfter * 1000;
  const active = rows.filter((r) => r.use === 'sig' && !r.retiredAt);
  const retired = rows.filter((r) => r.use === 'sig' && r.retiredAt && r.retiredAt.getTime() > cutoff);
  const current = active[0];
  if (!current) throw new Error('no active signing key');
  const open = (row: { id: string; secretCiphertext: string }) => {
    try {
      return keyRing.decrypt(row.secretCiphertext, row.id);
    } catch (err) {
      throw new Error(
        `OAuth key ${row.id} cannot be opened with ENCRYPTION_KEYS (${(err as Error).message}): ` +
          'keep every key that sealed stored secrets in ENCRYPTION_KEYS, newest first',
      );
    }
  };
  const signing = JSON.parse(open(current)) as PrivateJwk;
  const published = [...active, ...retired].map((r) => r.publicJwk as unknown as PublicJwk);
  const cookieKeys = rows.filter((r) => r.use === 'cookie').map(open);
  return { signing, published, cookieKeys };
}

/**
 * `switchboard keys rotate`: a new key signs from now on (instances pick it up within a minute); the old ones
 * keep verifying until their tokens have expired. Keys retired long enough ago are deleted.
 */
export async function rotateSigningKey(
  db: Db,
  keyRing: KeyRing,
  retireAfter: number,
): Promise<{ kid: string; retired: string[]; deleted: string[] }> {
  return repo.withKeyLock(db, async (tx) => {
    const now = new Date();
    const retired = await repo.retireSigningKeys(tx, now);
    const deleted = await repo.deleteSigningKeysRetiredBefore(tx, new Date(now.getTime() - retireAfter * 1000));
    const key = await insertSigningKey(tx, keyRing);
    return { kid: key.kid, retired, deleted };
  });
}

/** The kids in the database, oldest first: what an instance compares to notice a rotation. */
export async function currentKeyIds(db: Db): Promise<string> {
  const rows = await repo.signingKeyStates(db);
  return rows.map((r) => `${r.id}:${r.retiredAt ? 'r' : 'a'}`).join(',');
}
