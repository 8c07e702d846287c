import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../lib/paths.ts';

/**
 * Evaluation of a prompt-injection detector on the labelled corpus in test/fixtures/injection-corpus.json.
 * Each item carries its attack family (or the kind of ordinary request), its language and its split: the
 * `tuning` part may be looked at while writing rules, the `heldout` part only measures them.
 */
export interface CorpusItem {
  text: string;
  label: 'attack' | 'benign';
  family: string;
  lang: string;
  split: 'tuning' | 'heldout';
}

/** An item of a set that is wholly one split (injection-tuning-v2.json, injection-heldout-v2.json). */
export type LabelledItem = Omit<CorpusItem, 'split'>;

function readItems<T>(file: string): T[] {
  const raw = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'test', 'fixtures', file), 'utf8')) as { items: T[] };
  return raw.items;
}

export function loadInjectionCorpus(): CorpusItem[] {
  return readItems<CorpusItem>('injection-corpus.json');
}

/**
 * The second corpus, in two files: `heldout` was written (and committed) before the detector was changed for
 * it and is only measured; `tuning` is what the rules of the second round were written on.
 */
export function loadInjectionSetV2(split: 'tuning' | 'heldout'): LabelledItem[] {
  return readItems<LabelledItem>(`injection-${split}-v2.json`);
}

export interface Rate {
  hit: number;
  total: number;
}

export interface Evaluation {
  attacks: Rate;
  falseAlarms: Rate;
  byFamily: Record<string, Rate>;
  byLang: Record<string, Rate>;
  missed: string[];
  flaggedBenign: string[];
}

function bump(map: Record<string, Rate>, key: string, hit: boolean): void {
  const r = map[key] ?? { hit: 0, total: 0 };
  r.total += 1;
  if (hit) r.hit += 1;
  map[key] = r;
}

/** Detection rate on attacks (overall, per family, per language) and false-alarm rate on ordinary texts. */
export function evaluate(items: readonly LabelledItem[], flagged: (text: string) => boolean): Evaluation {
  const ev: Evaluation = {
    attacks: { hit: 0, total: 0 },
    falseAlarms: { hit: 0, total: 0 },
    byFamily: {},
    byLang: {},
    missed: [],
    flaggedBenign: [],
  };
  for (const item of items) {
    const hit = flagged(item.text);
    if (item.label === 'attack') {
      ev.attacks.total += 1;
      if (hit) ev.attacks.hit += 1;
      else ev.missed.push(item.text);
      bump(ev.byFamily, item.family, hit);
      bump(ev.byLang, item.lang, hit);
    } else {
      ev.falseAlarms.total += 1;
      if (hit) {
        ev.falseAlarms.hit += 1;
        ev.flaggedBenign.push(item.text);
      }
    }
  }
  return ev;
}

const pct = (r: Rate): string => `${r.hit}/${r.total} (${((100 * r.hit) / Math.max(1, r.total)).toFixed(1)}%)`;

export function formatEvaluation(title: string, ev: Evaluation): string {
  const lines = [
    `${title}: attacks blocked ${pct(ev.attacks)}, false alarms ${pct(ev.falseAlarms)}`,
    `  by family: ${Object.entries(ev.byFamily)
      .map(([k, r]) => `${k} ${pct(r)}`)
      .join(', ')}`,
    `  by language: ${Object.entries(ev.byLang)
      .map(([k, r]) => `${k} ${pct(r)}`)
      .join(', ')}`,
  ];
  return lines.join('\n');
}
