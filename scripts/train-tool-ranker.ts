import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { evaluateToolSearch, loadToolSearchSet, type ToolSearchSet, TRAINING_SETS } from '../bench/tool-search-eval.ts';
import { loadConfig } from '../src/config.ts';
import { PACKAGE_ROOT, sourceFile } from '../src/lib/paths.ts';
import { lexicalRanking } from '../src/lib/tool-search.ts';
import { candidateFeatures, FEATURES, modelScore, type RankerModel, RERANKED } from '../src/lib/tool-search-ranker.ts';
import { providerCatalog } from '../src/modules/providers/catalog.ts';
import { catalogTools } from '../src/modules/providers/tool-search.ts';

/**
 * `npm run train:tool-search`: learns the tool search's ranker (src/lib/tool-search-ranker.ts) on the training sets
 * alone, never a held-out one, and writes src/lib/tool-ranker.json. Per request, the lexical ranking's first
 * `RERANKED` tools are the candidates; the weights maximise the likelihood of the acceptable ones under a softmax
 * over each request's candidates (ListNet's top-one form), with an L2 penalty, by Adam over the whole set.
 * `--cv` first scores each tuning set by a model trained on the others (what the held-out sets will see).
 */

const L2 = 0.01;
const EPOCHS = 600;
const RATE = 0.05;

interface Query {
  q: string;
  names: string[];
  set: ToolSearchSet;
  xs: number[][];
  ok: boolean[];
}

function queries(): Query[] {
  const tools = catalogTools(providerCatalog(loadConfig({})));
  const out: Query[] = [];
  for (const set of TRAINING_SETS) {
    for (const { q, ok } of loadToolSearchSet(set)) {
      const { candidates, request } = lexicalRanking(tools, q, RERANKED);
      const names = candidates.map((c) => `${c.tool.source}/${c.tool.name}`);
      out.push({ q, names, set, xs: candidateFeatures(candidates, request), ok: names.map((n) => ok.includes(n)) });
    }
  }
  return out;
}

function train(data: readonly Query[]): RankerModel {
  const d = FEATURES.length;
  const rows = data.flatMap((q) => q.xs);
  const mean = FEATURES.map((_, k) => rows.reduce((a, x) => a + (x[k] ?? 0), 0) / rows.length);
  const scale = FEATURES.map((_, k) => {
    const v = rows.reduce((a, x) => a + ((x[k] ?? 0) - (mean[k] ?? 0)) ** 2, 0) / rows.length;
    return Math.sqrt(v) || 1;
  });
  // Requests with no acceptable tool among their candidates teach nothing.
  const z = data
    .filter((q) => q.ok.some(Boolean))
    .map((q) => ({
      ok: q.ok,
      xs: q.xs.map((x) => Float64Array.from(x, (v, k) => (v - (mean[k] ?? 0)) / (scale[k] ?? 1))),
    }));
  const w = new Float64Array(d);
  const m = new Float64Array(d);
  const v = new Float64Array(d);
  const grad = new Float64Array(d);
  for (let epoch = 1; epoch <= EPOCHS; epoch++) {
    for (let k = 0; k < d; k++) grad[k] = L2 * (w[k] as number);
    for (const q of z) {
      const s = q.xs.map((x) => x.reduce((a, xk, k) => a + xk * (w[k] as number), 0));
      const top = Math.max(...s);
      const e = s.map((x) => Math.exp(x - top));
      const all = e.reduce((a, b) => a + b, 0);
      const pos = e.reduce((a, b, i) => a + (q.ok[i] ? b : 0), 0);
      q.xs.forEach((x, i) => {
        // The gradient of -log(pos / all) by the candidate's score.
        const g = ((e[i] as number) / all - (q.ok[i] ? (e[i] as number) / pos : 0)) / z.length;
        for (let k = 0; k < d; k++) grad[k] = (grad[k] as number) + g * (x[k] as number);
      });
    }
    for (let k = 0; k < d; k++) {
      const g = grad[k] as number;
      m[k] = 0.9 * (m[k] as number) + 0.1 * g;
      v[k] = 0.999 * (v[k] as number) + 0.001 * g * g;
      const step = (m[k] as number) / (1 - 0.9 ** epoch) / (Math.sqrt((v[k] as number) / (1 - 0.999 ** epoch)) + 1e-8);
      w[k] = (w[k] as number) - RATE * step;
    }
  }
  const round = (x: number) => Math.round(x * 1e5) / 1e5;
  return { features: [...FEATURES], mean: mean.map(round), scale: scale.map(round), weights: Array.from(w, round) };
}

function score(model: RankerModel, data: readonly Query[]): { top1: number; top3: number; total: number } {
  let top1 = 0;
  let top3 = 0;
  for (const q of data) {
    const order = q.xs
      .map((x, i) => ({ i, s: modelScore(model, x) }))
      .sort((a, b) => b.s - a.s)
      .map((x) => x.i);
    if (q.ok[order[0] ?? -1]) top1++;
    if (order.slice(0, 3).some((i) => q.ok[i])) top3++;
    else if (process.argv.includes('--misses')) {
      const at = order.findIndex((i) => q.ok[i]);
      console.log(
        `${q.set}: ${q.q} -> at ${at < 0 ? 'none' : at + 1} (${q.names[order[at] ?? -1] ?? ''}); got ${order
          .slice(0, 3)
          .map((i) => q.names[i])
          .join(', ')}`,
      );
    }
  }
  return { top1, top3, total: data.length };
}

const data = queries();
if (process.argv.includes('--cv')) {
  let hits = 0;
  for (const set of TRAINING_SETS) {
    const model = train(data.filter((q) => q.set !== set));
    const r = score(
      model,
      data.filter((q) => q.set === set),
    );
    hits += r.top3;
    console.log(`  ${set.padEnd(9)} trained on the others: top-1 ${r.top1}  top-3 ${r.top3} of ${r.total}`);
  }
  console.log(`  all training sets, each unseen: top-3 ${hits} of ${data.length}`);
}
const model = train(data);
const fit = score(model, data);
console.log(`  trained on all ${data.length}: top-1 ${fit.top1}  top-3 ${fit.top3}`);
if (!process.argv.includes('--dry-run')) {
  const file = sourceFile('lib', 'tool-ranker.json');
  writeFileSync(file, `${JSON.stringify(model, null, 2)}\n`);
  // In the repository's own format, so a retrained file's diff is its numbers alone.
  execFileSync(join(PACKAGE_ROOT, 'node_modules', '.bin', 'biome'), ['format', '--write', file], { stdio: 'ignore' });
  console.log(`  wrote src/lib/tool-ranker.json; scored as the search runs it:`);
  for (const set of TRAINING_SETS) {
    const r = evaluateToolSearch(loadToolSearchSet(set));
    console.log(`  ${set.padEnd(9)} top-3 ${r.top3} of ${r.total}`);
  }
}
