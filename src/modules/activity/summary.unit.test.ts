import { describe, expect, it } from 'vitest';
import { SUMMARY_LIMIT, summarize } from './service.ts';

describe('activity summaries', () => {
  it('replaces values under credential keys and redacts token shapes anywhere', () => {
    const jwt = `eyJ${'a'.repeat(20)}.${'b'.repeat(20)}.${'c'.repeat(20)}`;
    const out = summarize({
      query: 'open issues',
      api_key: 'plain-looking-value',
      nested: { Authorization: 'Basic abc', list: [`token is ghp_${'x'.repeat(36)}`], refreshToken: 'r' },
      note: `see ${jwt}`,
    });
    expect(JSON.parse(out ?? '')).toEqual({
      query: 'open issues',
      api_key: '[REDACTED]',
      nested: { Authorization: '[REDACTED]', list: ['token is [REDACTED]'], refreshToken: '[REDACTED]' },
      note: 'see [REDACTED]',
    });
    expect(summarize(undefined)).toBeNull();
  });

  it('is bounded: long values, deep nesting and huge arrays end up at most SUMMARY_LIMIT characters', () => {
    expect(summarize('x'.repeat(10_000))).toHaveLength(SUMMARY_LIMIT);
    let deep: unknown = 'bottom';
    for (let i = 0; i < 5000; i++) deep = { d: deep };
    expect((summarize(deep) ?? '').length).toBeLessThanOrEqual(SUMMARY_LIMIT);
    expect((summarize({ rows: Array.from({ length: 100_000 }, (_, i) => ({ i })) }) ?? '').length).toBeLessThanOrEqual(
      SUMMARY_LIMIT,
    );
    // A token cut in half by the bound is redacted before it is cut.
    const late = `${'y'.repeat(SUMMARY_LIMIT - 10)} pat_${'z'.repeat(40)}`;
    expect(summarize(late)).not.toContain('zzzzzz');
  });
});
