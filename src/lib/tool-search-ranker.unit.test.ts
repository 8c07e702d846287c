import { describe, expect, it } from 'vitest';
import { lexicalRanking, rankTools, type SearchableTool } from './tool-search.ts';
import { BEST_MATCHED, FEATURES, modelScore, type RankerModel, RERANKED } from './tool-search-ranker.ts';
import { keptWordVectors } from './tool-search-vectors.ts';

const tool = (name: string, description: string, source = 'demo'): SearchableTool => ({ name, description, source });

describe('the tool search ranker', () => {
  it('scores a standardised weighted sum of the features', () => {
    const model: RankerModel = { features: ['a', 'b'], mean: [1, 0], scale: [2, 1], weights: [3, -1] };
    // (5 - 1) / 2 * 3 + (4 - 0) / 1 * -1 = 6 - 4
    expect(modelScore(model, [5, 4])).toBe(2);
    // A scale of 0 (a feature constant over the training set) divides by 1.
    expect(modelScore({ ...model, scale: [0, 1] }, [5, 0])).toBe(12);
  });

  it('has one feature name per feature, each once', () => {
    expect(new Set(FEATURES).size).toBe(FEATURES.length);
  });

  it('re-orders the candidates only (the first thirty, then the best word matches), with scores in order', () => {
    const n = RERANKED + BEST_MATCHED + 10;
    const tools = Array.from({ length: n }, (_, i) =>
      tool(`list_invoices_${i}`, `List invoices ${'of a customer '.repeat(1 + (i % 7))}(variant ${i}).`),
    );
    tools.push(tool('send_invoice', 'Send an invoice to a customer by email.'));
    const q = 'send the invoice to the customer';
    const limit = RERANKED + BEST_MATCHED + 5;
    const ranked = rankTools(tools, q, limit);
    expect(ranked).toHaveLength(limit);
    expect(ranked[0]?.tool.name).toBe('send_invoice');
    // After the candidates, the lexical ranking's own order and scores.
    const lexical = lexicalRanking(tools, q, limit);
    const k = RERANKED + BEST_MATCHED;
    expect(lexical.candidates).toHaveLength(k);
    expect(ranked.slice(k)).toEqual(lexical.rest);
    expect(new Set(ranked.slice(0, k).map((r) => r.tool))).toEqual(new Set(lexical.candidates.map((c) => c.tool)));
    const scores = ranked.map((r) => r.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(new Set(ranked.map((r) => r.tool.name)).size).toBe(ranked.length);
  });

  it('also re-orders a tool whose words match best when the bonuses of a named provider push it past the thirty', () => {
    const tools = Array.from({ length: RERANKED + 5 }, (_, i) =>
      tool(`list_widgets_${i}`, `List the widgets of a shelf (variant ${i}).`, 'acme'),
    );
    tools.push(tool('send_invoice', 'Send an invoice to a customer by email.', 'billing'));
    const q = 'send the invoice to the customer from acme';
    const lexical = lexicalRanking(tools, q, RERANKED + 1);
    const first = lexical.candidates.slice(0, RERANKED).map((c) => c.tool.name);
    expect(first).not.toContain('send_invoice');
    expect(lexical.candidates.slice(RERANKED).map((c) => c.tool.name)).toContain('send_invoice');
  });

  it('answers a request with no known word, or with one tool, without the model', () => {
    expect(rankTools([tool('list_invoices', 'List invoices.')], 'invoices', 3).map((r) => r.tool.name)).toEqual([
      'list_invoices',
    ]);
    expect(rankTools([tool('a', 'A thing.'), tool('b', 'B thing.')], 'zzqx', 3)).toEqual([]);
  });

  it('keeps no vector for a word the vectors do not know, whatever requests say', () => {
    const tools = [tool('list_invoices', 'List invoices.'), tool('send_invoice', 'Send an invoice.')];
    rankTools(tools, 'send invoices', 3);
    const before = keptWordVectors();
    for (let i = 0; i < 200; i++) rankTools(tools, `invoices zq${i}xv qq${i}zz`, 3);
    expect(keptWordVectors()).toBe(before);
    // A word the vectors know is kept once (no other test says it: the suite shares a process).
    rankTools(tools, 'invoices volcano', 3);
    rankTools(tools, 'volcano invoices', 3);
    expect(keptWordVectors()).toBe(before + 1);
  });
});
