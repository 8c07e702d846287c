import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliProblems, unknownSettings } from '../../scripts/docs/coverage.ts';
import { cliCommands } from '../../src/cli.ts';

describe('the docs name only settings and commands that exist, and every command', () => {
  it('every setting named in README.md and docs/ is one the service reads', () => {
    expect(unknownSettings()).toEqual([]);
  });

  it('every `switchboard` command and option named exists, and docs/cli.md shows each command', () => {
    expect(cliProblems()).toEqual([]);
  });

  const root = mkdtempSync(join(tmpdir(), 'doc-coverage-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (files: Record<string, string>) => {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
  };

  it('finds a made-up setting, a made-up command or option, and a command left out', () => {
    const shown = cliCommands()
      .map((c) => c.name)
      .filter((name) => name !== 'jobs retry');
    write({
      'README.md': 'Set `PORT`, `RATE_LIMIT_*`, `PROVIDER_GITHUB_CLIENT_ID` and `LLM_TEMPERATURE`; not `NOPE_*`.\n',
      'docs/cli.md': [
        ...shown.map((name) => `    npx switchboard ${name}`),
        '    npx switchboard token create --email a@b.c --colour red',
        '    npx switchboard users purge',
      ].join('\n'),
    });
    expect(unknownSettings(root)).toEqual([
      'README.md: LLM_TEMPERATURE is not a setting the service reads',
      'README.md: NOPE_* matches no setting',
    ]);
    expect(cliProblems(root)).toEqual([
      `docs/cli.md:${shown.length + 1}: switchboard token create has no option --colour`,
      `docs/cli.md:${shown.length + 2}: switchboard users purge is not a command`,
      'docs/cli.md: switchboard jobs retry is not shown',
    ]);
  });
});
