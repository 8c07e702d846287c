import { describe, expect, it } from 'vitest';
import { evaluateToolSearch, loadToolSearchSet } from '../../bench/tool-search-eval.ts';
import { loadConfig } from '../../src/config.ts';
import { providerCatalog } from '../../src/modules/providers/catalog.ts';

/**
 * `npm run eval:tool-search` as a floor (issue 41 item 3): the tool search (`GET /providers/tools/search`, the
 * agent's `find_tools`) keeps an acceptable tool in its top 3 over the whole catalog at least as often as when
 * measured (docs/tool-search.md). Each held-out set was committed before the search was changed for it and never
 * tuned on (its misses are never printed); its floor is what it measured with the tools' examples.
 */
describe('tool search quality over the whole catalog (top-3)', () => {
  const tuning = loadToolSearchSet('tuning');
  const heldOut = loadToolSearchSet('held-out');
  const heldOut2 = loadToolSearchSet('held-out-2');
  const heldOut3 = loadToolSearchSet('held-out-3');
  const heldOut4 = loadToolSearchSet('held-out-4');

  it('has a tuning set and four held-out sets of at least 100 requests each (held-out 120), apart, naming real tools', () => {
    const catalog = providerCatalog(loadConfig({}));
    const known = new Set(
      catalog.providers.flatMap((p) => p.definition.tools.map((t) => `${p.definition.id}/${t.name}`)),
    );
    expect(heldOut.length).toBeGreaterThanOrEqual(120);
    expect(heldOut2.length).toBeGreaterThanOrEqual(100);
    expect(heldOut3.length).toBeGreaterThanOrEqual(150);
    expect(heldOut4.length).toBeGreaterThanOrEqual(150);
    expect(tuning.length).toBeGreaterThanOrEqual(100);
    const tuned = new Set(tuning.map((e) => e.q.toLowerCase()));
    const firstHeldOut = new Set(heldOut.map((e) => e.q.toLowerCase()));
    for (const e of heldOut) expect(tuned.has(e.q.toLowerCase()), e.q).toBe(false);
    for (const e of heldOut2)
      expect(tuned.has(e.q.toLowerCase()) || firstHeldOut.has(e.q.toLowerCase()), e.q).toBe(false);
    const secondHeldOut = new Set(heldOut2.map((e) => e.q.toLowerCase()));
    const thirdHeldOut = new Set(heldOut3.map((e) => e.q.toLowerCase()));
    for (const e of heldOut3) {
      const q = e.q.toLowerCase();
      expect(tuned.has(q) || firstHeldOut.has(q) || secondHeldOut.has(q), e.q).toBe(false);
    }
    for (const e of heldOut4) {
      const q = e.q.toLowerCase();
      expect(tuned.has(q) || firstHeldOut.has(q) || secondHeldOut.has(q) || thirdHeldOut.has(q), e.q).toBe(false);
    }
    expect(new Set(heldOut4.map((e) => e.q.toLowerCase())).size).toBe(heldOut4.length);
    for (const e of [...tuning, ...heldOut, ...heldOut2, ...heldOut3, ...heldOut4]) {
      expect(e.ok.length, e.q).toBeGreaterThan(0);
      for (const name of e.ok) expect(known.has(name), `${e.q}: ${name}`).toBe(true);
    }
  });

  // No misses printed: a held-out set must not steer changes to the search. Before the tools' examples (requests
  // in users' words, 29 November 2026): 109 of 145, 96 of 136 and 150 of 193; with them: 136, 124 and 176.
  it('puts an acceptable tool in the top 3 for at least 136 of the 145 first held-out requests (93.8%)', () => {
    expect(evaluateToolSearch(heldOut).top3).toBeGreaterThanOrEqual(136);
  });

  it('puts an acceptable tool in the top 3 for at least 124 of the 136 requests of the second held-out set (91.2%)', () => {
    expect(evaluateToolSearch(heldOut2).top3).toBeGreaterThanOrEqual(124);
  });

  it('puts an acceptable tool in the top 3 for at least 176 of the 193 requests of the third held-out set (91.2%)', () => {
    expect(evaluateToolSearch(heldOut3).top3).toBeGreaterThanOrEqual(176);
  });

  // Written after the examples by an author who never saw the search's code or runs; first measured as it came.
  it('puts an acceptable tool in the top 3 for at least 145 of the 160 requests of the fourth held-out set (90.6%)', () => {
    expect(evaluateToolSearch(heldOut4).top3).toBeGreaterThanOrEqual(145);
  });

  // The tuning set holds the first held-out set of an earlier catalog too (looked at, so no longer unseen): 95.2%
  // of 477 before the tools' examples, 97.9% (467) with them.
  it('and for at least 467 of the 477 tuning requests (97.9%)', () => {
    const r = evaluateToolSearch(tuning);
    expect(r.top3, r.misses.join('\n')).toBeGreaterThanOrEqual(467);
  });
});
