import { describe, expect, it } from 'vitest';
import { retryAfterSeconds } from './dates.ts';

describe('retryAfterSeconds', () => {
  const now = Date.parse('2026-11-25T08:00:00Z');

  it('reads delay-seconds and HTTP dates, never below zero', () => {
    expect(retryAfterSeconds('7', now)).toBe(7);
    expect(retryAfterSeconds('1.5', now)).toBe(1.5);
    expect(retryAfterSeconds('-3', now)).toBe(0);
    expect(retryAfterSeconds('Wed, 25 Nov 2026 08:00:30 GMT', now)).toBe(30);
    expect(retryAfterSeconds('Wed, 25 Nov 2026 07:59:00 GMT', now)).toBe(0);
    expect(retryAfterSeconds(['12', '99'], now)).toBe(12);
  });

  it('answers undefined for a missing, blank or unreadable header', () => {
    for (const v of [undefined, '', '  ', 'soon', []]) expect(retryAfterSeconds(v, now)).toBeUndefined();
  });
});
