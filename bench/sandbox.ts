import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { DEFAULT_SANDBOX_OPTIONS, Sandbox, type SandboxLanguage } from '../src/code-runner/index.ts';
import type { BenchResult, Figure } from './lib.ts';

/**
 * What a sandbox run costs around the code itself, per language: wall time from `run()` to its answer, cold (a
 * new sandbox: worker thread and QuickJS, or Pyodide's first load, snapshot and a process) and warm (workers
 * up; for Python a process loaded from the snapshot and waiting). Baseline: a bare `node -e` process running the
 * same code (JavaScript as is; for Python the same code through Pyodide loaded in that process, as a plain
 * script would), started fresh each time as a one-off script is. The code: a loop summing 0..99,999.
 */

const exec = promisify(execFile);
const JS = 'let s = 0; for (let i = 0; i < 100000; i++) s += i; return s;';
const TS = 'let s: number = 0; for (let i: number = 0; i < 100000; i++) s += i; return s;';
const PY = 'result = sum(i for i in range(100000))';
const EXPECTED = 4_999_950_000;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
};

async function timeRun(
  sandbox: Sandbox,
  language: SandboxLanguage,
  code: string,
): Promise<{ ms: number; billed: number }> {
  const t0 = performance.now();
  const r = await sandbox.run({ language, code, args: {}, secrets: {} });
  const ms = performance.now() - t0;
  if (r.error || r.result !== EXPECTED)
    throw new Error(`${language} run failed: ${JSON.stringify(r.error ?? r.result)}`);
  return { ms, billed: r.durationMs };
}

async function bare(args: string[]): Promise<number> {
  const t0 = performance.now();
  const { stdout } = await exec(process.execPath, args, { env: {} });
  if (Number(stdout.trim()) !== EXPECTED) throw new Error(`bare run printed ${stdout}`);
  return performance.now() - t0;
}

export async function sandboxBenchmark(): Promise<BenchResult> {
  const pyodide = pathToFileURL(createRequire(import.meta.url).resolve('pyodide/pyodide.mjs')).href;
  const bareJs = ['-e', `console.log((() => { ${JS} })())`];
  const barePy = [
    '--input-type=module',
    '-e',
    `const { loadPyodide } = await import(${JSON.stringify(pyodide)}); const py = await loadPyodide(); py.runPython(${JSON.stringify(PY)}); console.log(py.globals.get('result'));`,
  ];
  const figures: Figure[] = [];
  const notes: string[] = [];
  const rounds = { cold: { js: 5, py: 3 }, warm: { js: 20, py: 5 } };

  const jsBaseline: number[] = [];
  for (let i = 0; i < rounds.cold.js; i++) jsBaseline.push(await bare(bareJs));
  const pyBaseline: number[] = [];
  for (let i = 0; i < rounds.cold.py; i++) pyBaseline.push(await bare(barePy));

  for (const [language, code] of [
    ['javascript', JS],
    ['typescript', TS],
  ] as const) {
    const cold: number[] = [];
    for (let i = 0; i < rounds.cold.js; i++) {
      const sandbox = new Sandbox(DEFAULT_SANDBOX_OPTIONS);
      cold.push((await timeRun(sandbox, language, code)).ms);
      await sandbox.close();
    }
    const sandbox = new Sandbox(DEFAULT_SANDBOX_OPTIONS);
    await timeRun(sandbox, language, code);
    const warm: { ms: number; billed: number }[] = [];
    for (let i = 0; i < rounds.warm.js; i++) warm.push(await timeRun(sandbox, language, code));
    await sandbox.close();
    const baseline = median(jsBaseline);
    figures.push({ name: `${language} cold (median of ${rounds.cold.js})`, unit: 'ms', value: median(cold), baseline });
    figures.push({
      name: `${language} warm (median of ${rounds.warm.js})`,
      unit: 'ms',
      value: median(warm.map((w) => w.ms)),
      baseline,
    });
    notes.push(`${language}: billed durationMs of a warm run, median ${median(warm.map((w) => w.billed))} ms`);
  }

  const coldPy: number[] = [];
  for (let i = 0; i < rounds.cold.py; i++) {
    const sandbox = new Sandbox(DEFAULT_SANDBOX_OPTIONS);
    coldPy.push((await timeRun(sandbox, 'python', PY)).ms);
    await sandbox.close();
  }
  const sandbox = new Sandbox(DEFAULT_SANDBOX_OPTIONS);
  const warmPy: { ms: number; billed: number }[] = [];
  for (let i = 0; i < rounds.warm.py; i++) {
    await sandbox.warmPython();
    warmPy.push(await timeRun(sandbox, 'python', PY));
  }
  await sandbox.close();
  const pyBase = median(pyBaseline);
  figures.push({
    name: `python cold (median of ${rounds.cold.py})`,
    unit: 'ms',
    value: median(coldPy),
    baseline: pyBase,
  });
  figures.push({
    name: `python warm (median of ${rounds.warm.py})`,
    unit: 'ms',
    value: median(warmPy.map((w) => w.ms)),
    baseline: pyBase,
  });
  notes.push(`python: billed durationMs of a warm run, median ${median(warmPy.map((w) => w.billed))} ms`);
  notes.push(
    `baseline: javascript/typescript rows \`node -e\` of the same JavaScript (median of ${rounds.cold.js}); python rows \`node -e\` loading Pyodide and running the same Python (median of ${rounds.cold.py})`,
  );
  return {
    title: 'Code sandbox: wall time of one run (sum of 0..99,999), cold and warm, per language',
    baseline: 'bare node -e',
    figures,
    notes,
  };
}
