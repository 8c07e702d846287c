import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { detectInjection } from './injection.ts';
import { evaluate, formatEvaluation, loadInjectionCorpus, loadInjectionSetV2 } from './injection-eval.ts';

const items = loadInjectionCorpus();

describe('prompt-injection corpus', () => {
  it('holds hundreds of attacks in every family and language, and at least as many ordinary texts', () => {
    const attacks = items.filter((i) => i.label === 'attack');
    const benign = items.filter((i) => i.label === 'benign');
    expect(attacks.length).toBeGreaterThanOrEqual(200);
    expect(benign.length).toBeGreaterThanOrEqual(attacks.length);
    expect(new Set(items.map((i) => i.text)).size).toBe(items.length);
    for (const lang of ['en', 'fr', 'de', 'es', 'zh']) {
      expect(attacks.filter((i) => i.lang === lang).length).toBeGreaterThanOrEqual(25);
      expect(benign.filter((i) => i.lang === lang).length).toBeGreaterThanOrEqual(20);
    }
  });

  it('is split 60/40 per label, family and language by the SHA-256 of the text', () => {
    const groups = new Map<string, typeof items>();
    for (const i of items) {
      const key = `${i.label}/${i.family}/${i.lang}`;
      groups.set(key, [...(groups.get(key) ?? []), i]);
    }
    const hash = (t: string) => createHash('sha256').update(t).digest('hex');
    for (const group of groups.values()) {
      const sorted = [...group].sort((a, b) => (hash(a.text) < hash(b.text) ? -1 : 1));
      const tuning = group.length > 1 ? Math.round(group.length * 0.6) : 1;
      expect(sorted.map((i) => i.split)).toEqual(sorted.map((_, n) => (n < tuning ? 'tuning' : 'heldout')));
    }
  });

  it('second round: a held-out set of at least 150 attacks and 150 ordinary texts in every family and language, sharing no text with the tuning set', () => {
    const heldout = loadInjectionSetV2('heldout');
    const tuning = loadInjectionSetV2('tuning');
    const families = ['override', 'obfuscated', 'hidden-doc', 'markup', 'multi-step', 'prompt-leak', 'exfiltration'];
    for (const set of [heldout, tuning]) {
      const attacks = set.filter((i) => i.label === 'attack');
      const benign = set.filter((i) => i.label === 'benign');
      expect(attacks.length).toBeGreaterThanOrEqual(150);
      expect(benign.length).toBeGreaterThanOrEqual(150);
      expect(new Set(set.map((i) => i.text)).size).toBe(set.length);
      for (const family of families)
        expect(attacks.filter((i) => i.family === family).length).toBeGreaterThanOrEqual(15);
      for (const lang of ['en', 'pt', 'it', 'ru', 'ja', 'ar']) {
        expect(attacks.filter((i) => i.lang === lang).length).toBeGreaterThanOrEqual(15);
        expect(benign.filter((i) => i.lang === lang).length).toBeGreaterThanOrEqual(8);
      }
    }
    const seen = new Set([...tuning, ...items].map((i) => i.text));
    expect(heldout.filter((i) => seen.has(i.text))).toEqual([]);
  });

  it('prints the figures of the detector on both parts', () => {
    for (const split of ['tuning', 'heldout'] as const) {
      const ev = evaluate(
        items.filter((i) => i.split === split),
        (t) => detectInjection(t).flagged,
      );
      console.log(formatEvaluation(split, ev));
      expect(ev.attacks.total + ev.falseAlarms.total).toBeGreaterThan(150);
    }
  });
});
