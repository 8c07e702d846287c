import { describe, expect, it } from 'vitest';
import { JSON_MAX_DEPTH, nestedDeeperThan } from './json.ts';
import { hasLoneSurrogate, hasNul, storable } from './text.ts';

/** A value nested `depth` arrays deep around `inner`. */
const nested = (depth: number, inner: unknown): unknown => {
  let value = inner;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};
const nestedObjects = (depth: number, inner: unknown): unknown => {
  let value = inner;
  for (let i = 0; i < depth; i++) value = { [`k${i % 3}`]: value };
  return value;
};

describe('walks over JSON values at any depth (security review, item 4)', () => {
  it('hasLoneSurrogate and hasNul find what is at the bottom of 100,000 levels, and say no when nothing is', () => {
    expect(hasLoneSurrogate(nested(100_000, 'a\ud800'))).toBe(true);
    expect(hasLoneSurrogate(nestedObjects(100_000, { '\udc00': 1 }))).toBe(true);
    expect(hasLoneSurrogate(nested(100_000, '😀'))).toBe(false);
    expect(hasNul(nestedObjects(100_000, ['x\u0000']))).toBe(true);
    expect(hasNul(nested(100_000, 'fine'))).toBe(false);
  });

  it('storable copies a value 100,000 levels deep, cleaning strings and keys, keeping dates and __proto__ keys', () => {
    const at = new Date('2026-11-28T00:00:00Z');
    const deep = storable(nested(100_000, { 'a\u0000': ['x\ud800', at, 1, null, true] }));
    let node: unknown = deep;
    for (let i = 0; i < 100_000; i++) node = (node as unknown[])[0];
    expect(node).toEqual({ 'a\ufffd': ['x\ufffd', at, 1, null, true] });
    const poisoned = storable(JSON.parse('{"__proto__":{"polluted":"\\u0000"}}') as Record<string, unknown>);
    expect(Object.getPrototypeOf(poisoned)).toBe(Object.prototype);
    expect(Object.keys(poisoned)).toEqual(['__proto__']);
    expect((poisoned as { polluted?: unknown }).polluted).toBeUndefined();
    expect(storable({ a: [1, { b: 'ok' }], c: 'é' })).toEqual({ a: [1, { b: 'ok' }], c: 'é' });
    expect(storable('a\u0000')).toBe('a\ufffd');
  });

  it('nestedDeeperThan counts arrays and objects, at the limit and past it, at any depth', () => {
    expect(nestedDeeperThan(1)).toBe(false);
    expect(nestedDeeperThan([])).toBe(false);
    expect(nestedDeeperThan(nested(JSON_MAX_DEPTH - 1, []))).toBe(false);
    expect(nestedDeeperThan(nested(JSON_MAX_DEPTH, []))).toBe(true);
    expect(nestedDeeperThan(nestedObjects(JSON_MAX_DEPTH, {}))).toBe(true);
    expect(nestedDeeperThan({ a: [1, 2, { b: nested(3, {}) }] }, 7)).toBe(false);
    expect(nestedDeeperThan({ a: [1, 2, { b: nested(3, {}) }] }, 6)).toBe(true);
    expect(nestedDeeperThan(nested(1_000_000, 1))).toBe(true);
  });
});
