import { describe, expect, it } from 'vitest';
import { evaluateToolSearch, loadToolSearchSet } from '../../bench/tool-search-eval.ts';
import { loadConfig } from '../../src/config.ts';
import { providerCatalog } from '../../src/modules/providers/catalog.ts';

/**
 * `npm run eval:tool-search` as a floor (issue 41 item 3): the tool search (`GET /providers/tools/search`, the
 * agent's `find_tools`) keeps an acceptable tool in its top 3 over the whole catalog at least as often as when
 * measured (docs/tool-search.md). The held-out set was committed before any tuning and never tuned on; its
 * floor is set from its one measurement.
 */
describe('tool search quality over the whole catalog (top-3)', () => {
  const tuning = loadToolSearchSet('tuning');
  const heldOut = loadToolSearchSet('held-out');
  const heldOut2 = loadToolSearchSet('held-out-2');

  it('has a tuning set and two held-out sets of at least 100 requests each (held-out 120), apart, naming real tools', () => {
    const catalog = providerCatalog(loadConfig({}));
    const known = new Set(
      catalog.providers.flatMap((p) => p.definition.tools.map((t) => `${p.definition.id}/${t.name}`)),
    );
    expect(heldOut.length).toBeGreaterThanOrEqual(120);
    expect(heldOut2.length).toBeGreaterThanOrEqual(100);
    expect(tuning.length).toBeGreaterThanOrEqual(100);
    const tuned = new Set(tuning.map((e) => e.q.toLowerCase()));
    const firstHeldOut = new Set(heldOut.map((e) => e.q.toLowerCase()));
    for (const e of heldOut) expect(tuned.has(e.q.toLowerCase()), e.q).toBe(false);
    for (const e of heldOut2)
      expect(tuned.has(e.q.toLowerCase()) || firstHeldOut.has(e.q.toLowerCase()), e.q).toBe(false);
    for (const e of [...tuning, ...heldOut, ...heldOut2]) {
      expect(e.ok.length, e.q).toBeGreaterThan(0);
      for (const name of e.ok) expect(known.has(name), `${e.q}: ${name}`).toBe(true);
    }
  });

  // Measured after the first round of tuning (180 providers): 107 of 145 (73.8%); after the one further round,
  // driven by the tuning set only: 109 (75.2%). Requests in users' own words ("shoot my landlord an email",
  // "catch me up on the channel") are harder than the earlier sets; the goal was 95%.
  it('puts an acceptable tool in the top 3 for at least 109 of the 145 held-out requests (75.2%)', () => {
    const r = evaluateToolSearch(heldOut);
    // No misses printed: the held-out set must not steer changes to the search.
    expect(r.top3).toBeGreaterThanOrEqual(109);
  });

  // Written and committed before any change to the search, measured unseen: 96 of 136 (70.6%).
  it('puts an acceptable tool in the top 3 for at least 96 of the 136 requests of the second held-out set', () => {
    expect(evaluateToolSearch(heldOut2).top3).toBeGreaterThanOrEqual(96);
  });

  // The tuning set holds the first held-out set too (looked at, so no longer unseen): 94.2% of 414 before the
  // search was tuned on it, 96.9% after; with 63 requests in everyday words added for a second round, 95.2% of 477.
  it('and for at least 95% of the tuning requests', () => {
    const r = evaluateToolSearch(tuning);
    expect(r.top3 / r.total, r.misses.join('\n')).toBeGreaterThanOrEqual(0.95);
  });
});
