import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type TestHarness } from '../../test/harness.ts';
import { rowsOf } from './rows.ts';

/**
 * The schema's plpgsql functions are batch writers that look their rows up by key, and each connection keeps their
 * plans: made before a table's first ANALYZE, such a plan read the table whole on every call (migration 0034). So
 * each of them runs with sequential scans off; a new one without it fails here.
 */
describe('the schema’s functions', () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('all plan their lookups by key, whatever the statistics say (enable_seqscan off)', async () => {
    const result = await h.database.db.execute(sql`
      SELECT p.proname AS name, coalesce(array_to_string(p.proconfig, ','), '') AS config
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
      WHERE n.nspname = 'public' AND l.lanname = 'plpgsql' ORDER BY p.proname`);
    const rows = rowsOf<{ name: string; config: string }>(result);
    expect(rows.map((r) => r.name)).toEqual([
      'agents_write_conversation_log',
      'agents_write_conversation_rows',
      'credits_take_lease',
      'credits_write_lease_batch',
    ]);
    expect(rows.filter((r) => r.config !== 'enable_seqscan=off')).toEqual([]);
  });
});
