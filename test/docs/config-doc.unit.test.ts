import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIG_DOC_PATH, renderConfigurationDoc } from '../../scripts/docs/config-doc.ts';
import { EnvSchema } from '../../src/config-env.ts';
import { CONNECTION_SETTING_VARS } from '../../src/modules/connections/settings.ts';

describe('docs/configuration.md', () => {
  it('is what `npm run docs:config` makes of src/config.ts today', () => {
    // On a failure: run `npm run docs:config` and commit docs/configuration.md.
    expect(readFileSync(CONFIG_DOC_PATH, 'utf8')).toBe(renderConfigurationDoc());
  });

  it('has a row, with a default and a meaning, for every variable the service reads', () => {
    const text = readFileSync(CONFIG_DOC_PATH, 'utf8');
    const names = [...Object.keys(EnvSchema.shape), ...Object.values(CONNECTION_SETTING_VARS).map((v) => v.name)];
    for (const name of names) {
      const row = text.split('\n').find((line) => line.startsWith(`| \`${name}\` |`));
      expect(row, name).toBeDefined();
      const [, , def, meaning] = (row ?? '').split(/(?<!\\)\|/).map((c) => c.trim());
      expect(def, `${name}'s default`).toBeTruthy();
      expect(meaning, `${name}'s meaning`).toBeTruthy();
    }
    expect(text).toContain('`PROVIDER_<ID>_CLIENT_ID`');
  });
});
