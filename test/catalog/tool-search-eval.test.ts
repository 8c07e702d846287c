import { describe, expect, it } from 'vitest';
import { evaluateToolSearch, loadToolSearchSet, type ToolSearchSet } from '../../bench/tool-search-eval.ts';
import { loadConfig } from '../../src/config.ts';
import { providerCatalog } from '../../src/modules/providers/catalog.ts';

/**
 * `npm run eval:tool-search` as a floor (issue 41 item 3): the tool search (`GET /providers/tools/search`, the
 * agent's `find_tools`) keeps an acceptable tool in its top 3 over the whole catalog at least as often as when
 * measured (docs/tool-search.md). Each held-out set was committed before the search was changed for it and never
 * tuned on (its misses are never printed); its floor is what it measured last. The sets, in the order they were
 * written, with their least size and their floor (top-3 hits):
 * - tuning: tuned on; it holds the first held-out set of an earlier catalog too (looked at, so no longer unseen).
 * - held-out, held-out-2, held-out-3: before the tools' examples (requests in users' words, 29 November 2026)
 *   109 of 145, 96 of 136 and 150 of 193; with them 136, 124 and 176; 137, 124 and 176 now.
 * - held-out-4: by an author who never saw the search's code or runs; 145 of 160 as it came, 148 since the named
 *   provider's bonus became relative (29 November, afternoon).
 * - tuning-2: by another such author, tuned on from its first run (177 of 200 as it came; three requests that
 *   an earlier set holds word for word taken out: 181 of 197 since).
 * - held-out-5: by a third, who saw only the catalog's tool list; first scored after that change: 125 of 159
 *   (one request the first held-out set holds taken out; the search before the change: 123); 127 after the next.
 * - tuning-3: by a fourth, asked for held-out-5's kind of requests (everyday words of ten kinds of users), tuned on
 *   from its first run (148 of 198 as it came); tuning-4 by a fifth, the same way (168 of 197; the round tuned on
 *   it was not kept).
 * - all nine since the word-vector re-ranking of the first ten (chosen on the tuning sets, 29 November, evening):
 *   top-3 up on held-out-2 to held-out-5 (128, 177, 150, 128) and down by one on held-out (136), top-1 up on
 *   four held-out sets and level on held-out-4 (583 -> 611 of 793); tuning 471 -> 468, the other tuning sets up.
 * - held-out-6: by a sixth author who saw only the catalog's tool list, committed before its first figure, after
 *   that change: 148 of 163 (three requests earlier sets hold word for word taken out; the search before the
 *   re-ranking: 143).
 * - held-out-7: by a seventh, the same way: 156 of 166 (four requests earlier sets hold taken out; the search
 *   before the re-ranking: 152).
 * - tuning-5: by an eighth, for the next round of tuning; its lookup-only labels completed with the tools that act
 *   (by another author, who saw only it and the tool list): 175 of 200 (the search before the re-ranking: 168).
 * - held-out-8 and held-out-9: by two more authors who saw only the tool list, committed before their first figure,
 *   with tuning-6 to tuning-9 by four more, the same way, for training (29 November, night).
 * - all since the learned ranker of the first thirty (`npm run train:tool-search`, trained on the nine tuning sets
 *   alone; 29 November, night). Held-out top-3 1,422 -> 1,452 of 1,558, top-1 1,199 -> 1,288.
 * - all since three more examples a tool (9,227, by eight authors who saw only each tool's description and
 *   examples, never a set) and the ranker learned again (30 November). Leave-one-set-out over the tuning sets
 *   1,908 -> 1,944 of 2,051; held-out top-3 1,452 -> 1,476 of 1,558 (held-out-6 down by one, to 150), top-1
 *   1,288 -> 1,303.
 * - all since the ranker's candidates include the ten best word matches after the thirty (30 November): the floors
 *   below. Leave one set out 1,944 -> 1,949; held-out top-3 1,476 -> 1,478 (held-out-8 238 -> 240), top-1 1,304.
 * - tuning-10 to tuning-12: by three more authors who saw only the tool list (30 November), scored by the ranker
 *   as it was, which never learned from them: 199, 198 and 202 (two authors' lookup-only labels completed with the
 *   tools that act, by others who saw only the set and the tool list; as first labelled 199, 192 and 164).
 * - all since five phrases read (who reports to someone, pull up, open an issue, r/name, convos; chosen on
 *   tuning-10 to tuning-12's misses), the ranker learned again: leave one training set out 1,949 -> 1,950; then the
 *   held-out sets scored once: top-3 1,478 -> 1,481 of 1,558 (95.1%; held-out-4, -8 and -9 one more each), top-1
 *   1,304 -> 1,307. The floors below.
 */
const SETS: Array<{ name: ToolSearchSet; size: number; floor: number }> = [
  { name: 'tuning', size: 100, floor: 472 },
  { name: 'held-out', size: 120, floor: 140 },
  { name: 'held-out-2', size: 100, floor: 131 },
  { name: 'held-out-3', size: 150, floor: 187 },
  { name: 'held-out-4', size: 150, floor: 152 },
  { name: 'tuning-2', size: 190, floor: 195 },
  { name: 'held-out-5', size: 150, floor: 144 },
  { name: 'tuning-3', size: 190, floor: 181 },
  { name: 'tuning-4', size: 190, floor: 189 },
  { name: 'held-out-6', size: 160, floor: 150 },
  { name: 'held-out-7', size: 160, floor: 161 },
  { name: 'tuning-5', size: 200, floor: 188 },
  { name: 'tuning-6', size: 190, floor: 185 },
  { name: 'tuning-7', size: 190, floor: 181 },
  { name: 'held-out-8', size: 240, floor: 241 },
  { name: 'tuning-8', size: 190, floor: 177 },
  { name: 'tuning-9', size: 190, floor: 187 },
  { name: 'held-out-9', size: 180, floor: 175 },
  { name: 'tuning-10', size: 200, floor: 200 },
  { name: 'tuning-11', size: 200, floor: 201 },
  { name: 'tuning-12', size: 200, floor: 202 },
];

describe('tool search quality over the whole catalog (top-3)', () => {
  const loaded = SETS.map((s) => ({ ...s, set: loadToolSearchSet(s.name) }));

  it('has its sets at their sizes, each request apart from every earlier set, naming real tools', () => {
    const catalog = providerCatalog(loadConfig({}));
    const known = new Set(
      catalog.providers.flatMap((p) => p.definition.tools.map((t) => `${p.definition.id}/${t.name}`)),
    );
    const earlier = new Set<string>();
    for (const { name, size, set } of loaded) {
      expect(set.length, name).toBeGreaterThanOrEqual(size);
      const mine = new Set(set.map((e) => e.q.toLowerCase()));
      expect(mine.size, `${name}: a request twice`).toBe(set.length);
      for (const q of mine) expect(earlier.has(q), `${name}: ${q}`).toBe(false);
      for (const q of mine) earlier.add(q);
      for (const e of set) {
        expect(e.ok.length, e.q).toBeGreaterThan(0);
        for (const tool of e.ok) expect(known.has(tool), `${e.q}: ${tool}`).toBe(true);
      }
    }
  });

  // No held-out set's misses are printed: it must not steer changes to the search.
  for (const { name, set, floor } of loaded) {
    it(`puts an acceptable tool in the top 3 for at least ${floor} of the ${name} set's requests`, () => {
      const r = evaluateToolSearch(set);
      const tuned = name.startsWith('tuning');
      expect(r.top3, tuned ? r.misses.join('\n') : `${r.top3} of ${r.total}`).toBeGreaterThanOrEqual(floor);
    });
  }
});
