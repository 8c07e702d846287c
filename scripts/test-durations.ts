import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, relative } from 'node:path';

/**
 * Each test file's duration, slowest first: runs the suite (or the files named) with vitest's JSON reporter and
 * prints a table, with the machine's load average before and after (on a shared machine, compare shares, not
 * seconds). `npm run test:durations` (PGlite), `npm run test:durations -- --pg` (PostgreSQL, at
 * `TEST_DATABASE_URL`), `-- --from run.json` tabulates a JSON report made before, `-- --compare before.json`
 * adds a column from another report, `-- --out table.md` writes the table to a file too, `-- --top 15`
 * shortens it. Other arguments go to vitest (test files, `--maxWorkers=2`).
 */

interface JsonReport {
  numTotalTests: number;
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests?: number;
  startTime: number;
  testResults: {
    name: string;
    startTime: number;
    endTime: number;
    status: string;
    assertionResults: { status: string }[];
  }[];
}

interface Row {
  file: string;
  seconds: number;
  tests: number;
}

/**
 * A file's seconds. vitest's JSON report ends a file at its last test, before its `afterAll` hooks (closing apps
 * and databases); with one worker (the default on two cores) the files run one after another, so a file is
 * given the time until the next one starts, hooks included. With several workers, start to last test.
 */
function rowsOf(report: JsonReport): Row[] {
  const files = [...report.testResults].sort((a, b) => a.startTime - b.startTime);
  const sequential = files.every((f, i) => i === 0 || (files[i - 1]?.endTime ?? 0) <= f.startTime);
  return files
    .map((r, i) => ({
      file: relative(process.cwd(), r.name),
      seconds: Math.max(0, (sequential ? (files[i + 1]?.startTime ?? r.endTime) : r.endTime) - r.startTime) / 1000,
      tests: r.assertionResults.length,
    }))
    .sort((a, b) => b.seconds - a.seconds);
}

/** CPU seconds of this process's waited-for children (Linux: /proc/self/stat), or undefined elsewhere. */
function childCpuSeconds(): number | undefined {
  if (!existsSync('/proc/self/stat')) return undefined;
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command name: cutime and cstime are fields 16 and 17 of stat(5), in clock ticks (100 a second).
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

function parseArgs(argv: string[]) {
  const opts = { pg: false, from: '', compare: '', out: '', top: 0, vitest: [] as string[] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    const value = () => argv[++i] ?? '';
    if (a === '--pg') opts.pg = true;
    else if (a === '--from') opts.from = value();
    else if (a === '--compare') opts.compare = value();
    else if (a === '--out') opts.out = value();
    else if (a === '--top') opts.top = Number(value());
    else opts.vitest.push(a);
  }
  return opts;
}

function main(): number {
  const opts = parseArgs(process.argv.slice(2));
  const lines: string[] = [];
  let report: JsonReport;
  let status = 0;
  if (opts.from) {
    report = JSON.parse(readFileSync(opts.from, 'utf8')) as JsonReport;
    lines.push(`From ${opts.from}.`);
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'sb-durations-'));
    const json = join(dir, 'report.json');
    const env = { ...process.env };
    if (opts.pg) {
      env.TEST_DB = 'pg';
      env.TEST_DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test';
    }
    const loadBefore = load();
    const cpuBefore = childCpuSeconds();
    const started = Date.now();
    const run = spawnSync(
      'npx',
      ['vitest', 'run', '--reporter=dot', '--reporter=json', `--outputFile.json=${json}`, ...opts.vitest],
      { stdio: 'inherit', env },
    );
    const wall = (Date.now() - started) / 1000;
    const cpuAfter = childCpuSeconds();
    status = run.status ?? 1;
    if (!existsSync(json)) {
      console.error('vitest wrote no report');
      return status || 1;
    }
    report = JSON.parse(readFileSync(json, 'utf8')) as JsonReport;
    rmSync(dir, { recursive: true, force: true });
    const cpu = cpuBefore !== undefined && cpuAfter !== undefined ? `, ${(cpuAfter - cpuBefore).toFixed(0)} s CPU` : '';
    lines.push(
      `${opts.pg ? 'PostgreSQL' : 'PGlite'}: ${wall.toFixed(0)} s wall${cpu}; load average (1, 5, 15 min) ` +
        `${loadBefore} before, ${load()} after.`,
    );
  }
  const rows = rowsOf(report);
  const before = opts.compare
    ? new Map(rowsOf(JSON.parse(readFileSync(opts.compare, 'utf8')) as JsonReport).map((r) => [r.file, r]))
    : undefined;
  const sum = rows.reduce((s, r) => s + r.seconds, 0);
  lines.push(
    `${rows.length} files, ${report.numTotalTests} tests (${report.numPassedTests} passed, ` +
      `${report.numFailedTests} failed, ${report.numPendingTests + (report.numTodoTests ?? 0)} skipped); ` +
      `files' durations add up to ${sum.toFixed(0)} s.`,
    '',
    before ? '| # | file | tests | s | share | before s |' : '| # | file | tests | s | share |',
    before ? '|--:|------|------:|--:|------:|---------:|' : '|--:|------|------:|--:|------:|',
  );
  const shown = opts.top > 0 ? rows.slice(0, opts.top) : rows;
  shown.forEach((r, i) => {
    const share = `${((100 * r.seconds) / (sum || 1)).toFixed(1)}%`;
    const old = before ? ` ${before.get(r.file)?.seconds.toFixed(1) ?? '-'} |` : '';
    lines.push(`| ${i + 1} | ${r.file} | ${r.tests} | ${r.seconds.toFixed(1)} | ${share} |${old}`);
  });
  const text = lines.join('\n');
  console.log(`\n${text}`);
  if (opts.out) writeFileSync(opts.out, `${text}\n`);
  return status;
}

process.exitCode = main();
