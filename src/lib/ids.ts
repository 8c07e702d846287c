import { createHash, randomBytes } from 'node:crypto';

/** Type prefixes of every id and token; one place so a prefix is never reused for two kinds. */
export const ID_PREFIX = {
  account: 'acc',
  session: 'ses',
  pat: 'tok',
  creditTransaction: 'ctx',
  creditHold: 'hold',
  completion: 'chatcmpl',
  request: 'req',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

/** A random, URL-safe id with its type prefix: `acc_` + 128 bits in base64url. */
export function newId(kind: IdKind): string {
  return `${ID_PREFIX[kind]}_${randomBytes(16).toString('base64url')}`;
}

/** Bearer secrets: `pat_` / `sess_` + 256 random bits. Only their SHA-256 is ever stored. */
export function newSecretToken(prefix: 'pat' | 'sess'): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}
