import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type TestHarness } from '../../../test/harness.ts';
import { createKeyRing, generateKeySpec, parseKeys } from '../../lib/crypto.ts';
import { loadKeySet, rotateSigningKey } from './keys.ts';

describe('OAuth signing keys', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('keys sealed with another encryption key stop start-up with a message naming the fix', async () => {
    const stranger = createKeyRing(parseKeys(generateKeySpec('other')));
    await expect(loadKeySet(h.database.db, stranger, 600)).rejects.toThrow(
      /^OAuth key key_\S+ cannot be opened with ENCRYPTION_KEYS \(Unknown encryption key "\S+"\): keep every key/,
    );
  });

  it('rotation retires the signing key, publishes both, and deletes keys retired longer ago than the window', async () => {
    const first = await loadKeySet(h.database.db, h.keyRing, 600);
    const { kid, retired } = await rotateSigningKey(h.database.db, h.keyRing, 600);
    expect(retired).toContain(first.signing.kid);
    const after = await loadKeySet(h.database.db, h.keyRing, 600);
    expect(after.signing.kid).toBe(kid);
    expect(after.published.map((k) => k.kid)).toEqual(expect.arrayContaining([kid, first.signing.kid]));
    expect(after.published.every((k) => !('d' in k))).toBe(true);
    // Outside the window (0 s), the retired key is no longer published, and the next rotation deletes it.
    expect((await loadKeySet(h.database.db, h.keyRing, 0)).published.map((k) => k.kid)).not.toContain(
      first.signing.kid,
    );
    // On PostgreSQL the test files share one database: deleting keys other files' apps still use is not ours.
    if (h.database.driver !== 'pglite') return;
    await new Promise((r) => setTimeout(r, 5));
    const next = await rotateSigningKey(h.database.db, h.keyRing, 0);
    expect(next.deleted).toContain(first.signing.kid);
  });
});
