import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadProviderCatalog, ProviderCatalogError, SHIPPED_PROVIDERS_DIR } from './catalog.ts';

const SOME = ['github.json', 'slack.json', 'notion.json'];

describe('the validated catalog cache', () => {
  let dir: string;
  let shipped: string;
  let cacheFile: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sb-catalog-cache-'));
    shipped = join(dir, 'providers');
    for (const f of SOME) cpSync(join(SHIPPED_PROVIDERS_DIR, f), join(shipped, f));
    cacheFile = join(dir, 'dist', 'provider-catalog.json');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const load = (dirs: string[] = [], cache: string | null = cacheFile) =>
    loadProviderCatalog({ dirs, env: {} }, shipped, cache);
  const definitions = (c: ReturnType<typeof load>) => c.providers.map((p) => p.definition);
  const readCache = () =>
    JSON.parse(readFileSync(cacheFile, 'utf8')) as { validator: string; entries: Record<string, { label: string }> };
  /** Marks every cached definition, so that a load answering the mark is known to have read the cache. */
  const markCache = (validator?: string) => {
    const stored = readCache();
    for (const entry of Object.values(stored.entries)) entry.label = `${entry.label} (cached)`;
    writeFileSync(cacheFile, JSON.stringify({ ...stored, validator: validator ?? stored.validator }));
  };

  it('answers what validation answers, and serves the next load from the file it wrote', () => {
    const validated = definitions(load([], null));
    expect(existsSync(cacheFile)).toBe(false);
    expect(definitions(load())).toStrictEqual(validated);
    expect(Object.keys(readCache().entries)).toHaveLength(SOME.length);
    expect(definitions(load())).toStrictEqual(validated);
    markCache();
    expect(load().get('github')?.definition.label).toBe('GitHub (cached)');
    expect(definitions(load([], null))).toStrictEqual(validated);
  });

  it('validates again a file whose text changed since it was cached, and reports its problems', () => {
    const extra = join(dir, 'extra');
    cpSync(join(SHIPPED_PROVIDERS_DIR, 'linear.json'), join(extra, 'linear.json'));
    expect(load([extra]).get('linear')?.file).toBe(join(extra, 'linear.json'));
    const def = JSON.parse(readFileSync(join(extra, 'linear.json'), 'utf8'));
    def.api.baseUrl = 'not a url';
    writeFileSync(join(extra, 'linear.json'), JSON.stringify(def));
    let problems: string[] = [];
    try {
      load([extra]);
    } catch (err) {
      expect(err).toBeInstanceOf(ProviderCatalogError);
      problems = (err as ProviderCatalogError).problems;
    }
    expect(problems).toEqual([
      `${join(extra, 'linear.json')}: api.baseUrl: must be an http(s) URL (placeholders like {subdomain} allowed)`,
    ]);
    // A file of the same text under another name is another entry: the id must match the file name.
    cpSync(join(SHIPPED_PROVIDERS_DIR, 'linear.json'), join(extra, 'linear.json'));
    load([extra]);
    cpSync(join(extra, 'linear.json'), join(extra, 'linear-copy.json'));
    expect(() => load([extra])).toThrow('id: "linear" must match the file name (linear.json)');
  });

  it('discards a cache written by another validator, and one that is not JSON', () => {
    load();
    markCache('another validator');
    expect(load().get('github')?.definition.label).toBe('GitHub');
    expect(readCache().validator).not.toBe('another validator');
    writeFileSync(cacheFile, '{"validator": ');
    expect(load().get('slack')?.definition.label).toBe('Slack');
    expect(Object.keys(readCache().entries)).toHaveLength(SOME.length);
  });

  it('keeps only the entries of the last load, and writes nothing with no cache file', () => {
    const extra = join(dir, 'extra');
    cpSync(join(SHIPPED_PROVIDERS_DIR, 'linear.json'), join(extra, 'linear.json'));
    load([extra]);
    expect(Object.keys(readCache().entries)).toHaveLength(SOME.length + 1);
    load();
    expect(Object.keys(readCache().entries)).toHaveLength(SOME.length);
    rmSync(join(dir, 'dist'), { recursive: true });
    load([], null);
    expect(existsSync(join(dir, 'dist'))).toBe(false);
  });

  it('fingerprints all the code validation runs: its own folder imports nothing else that decides', () => {
    // The fingerprint covers zod's version and every source of src/modules/providers. An import from elsewhere
    // that validation calls would let a change there go unseen: list it here only if it cannot change an answer.
    const folder = join(import.meta.dirname);
    const outside = new Set<string>();
    for (const f of readdirSync(folder).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))) {
      const text = readFileSync(join(folder, f), 'utf8');
      for (const m of text.matchAll(/^import (type )?[^;]*?from '(\.\.\/[^']+)';/gms)) {
        if (!m[1]) outside.add(`${f} -> ${m[2]}`);
      }
    }
    expect(
      [...outside].filter((i) => i.startsWith('catalog') || i.startsWith('schema') || i.startsWith('json-path')),
    ).toEqual([
      'catalog-cache.ts -> ../../lib/ids.ts',
      'catalog-cache.ts -> ../../lib/paths.ts',
      'catalog-cache.ts -> ../../lib/write-atomically.js',
      'catalog.ts -> ../../lib/paths.ts',
    ]);
  });
});
