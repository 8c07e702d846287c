import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_SCHEMA_PATH, documentConfig, renderClientSchema, servedDocument } from '../scripts/client/schema.ts';
import { createKeyRing, parseKeys } from '../src/lib/crypto.ts';
import { openTestDatabase, TEST_ENCRYPTION_KEYS, type TestDatabase } from './harness.ts';

/** The typed client's types (packages/client) follow the routes: a route changed without regenerating fails here. */
describe('the typed client', () => {
  let testDb: TestDatabase;
  beforeAll(async () => {
    testDb = await openTestDatabase();
  });
  afterAll(() => testDb.close());

  it('has the types `npm run client:generate` makes from the /openapi.json the app serves', async () => {
    // With the settings the script makes the document with (the defaults), over this file's database.
    const keyRing = createKeyRing(parseKeys(TEST_ENCRYPTION_KEYS));
    const document = await servedDocument(documentConfig(testDb.dataDir), testDb.database, keyRing);
    const current = readFileSync(CLIENT_SCHEMA_PATH, 'utf8') === (await renderClientSchema(document));
    expect(current, 'packages/client/src/schema.ts is stale: run `npm run client:generate`').toBe(true);
  });
});
