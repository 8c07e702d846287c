import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { afterEach, describe, expect, it } from 'vitest';
import { fromPattern } from '../../../test/catalog/examples.ts';
import { loadConfig } from '../../config.ts';
import {
  checkProviderRules,
  connectionVarNames,
  loadProviderCatalog,
  ProviderCatalogError,
  providerCredentials,
  providerCredentialVariables,
  SHIPPED_PROVIDERS_DIR,
} from './catalog.ts';
import { type JsonSchema, ProviderDefinition as ProviderDefinitionSchema, URL_PLACEHOLDER } from './definition.ts';
import { buildToolRequest } from './request.ts';

const catalog = loadProviderCatalog({ dirs: [], env: {} });

const REQUIRED_PROVIDERS = [
  'gmail',
  'google-calendar',
  'google-drive',
  'github',
  'slack',
  'notion',
  'linear',
  'jira',
  'hubspot',
  'salesforce',
  'outlook',
  'dropbox',
  'asana',
  'airtable',
  'discord',
];

/** Smallest arguments a tool accepts: each required parameter with a value of its type. */
function sampleArgs(parameters: {
  properties: Record<string, JsonSchema>;
  required: string[];
}): Record<string, unknown> {
  const sample = (s: JsonSchema): unknown => {
    if (s.enum) return s.enum[0];
    if (s.examples?.length) return s.examples[0];
    const type = Array.isArray(s.type) ? s.type[0] : s.type;
    switch (type) {
      case 'integer':
      case 'number':
        return s.minimum ?? 1;
      case 'boolean':
        return true;
      case 'array':
        return [s.items ? sample(s.items) : 'x'];
      case 'object': {
        // Nested required properties (generated schemas: Box `parent: {id}`) are filled in too.
        const out: Record<string, unknown> = { Name: 'x' };
        for (const r of s.required ?? []) out[r] = sample(s.properties?.[r] ?? { type: 'string' });
        return out;
      }
      default:
        if (s.format === 'date-time') return '2024-05-01T10:00:00Z';
        if (s.format === 'date') return '2024-05-01';
        if (s.format === 'uuid') return '123e4567-e89b-42d3-a456-426614174000';
        if (s.pattern?.startsWith('^app')) return 'appABC123';
        if (s.pattern?.startsWith('^rec')) return 'recABC123';
        if (s.pattern === '^[0-9]+$') return '123456';
        if (s.pattern === '^[A-Za-z0-9]{15,18}$') return '001000000000001AAA';
        if (s.pattern?.startsWith('^[A-Za-z]')) return 'Account';
        if (s.format === 'email') return 'someone@example.com';
        if (s.format === 'uri') return 'https://example.com/x';
        if (s.pattern && new RegExp(s.pattern, 'u').test('sample')) return 'sample';
        if (s.pattern && new RegExp(s.pattern, 'u').test('123456')) return '123456';
        if (s.pattern && new RegExp(s.pattern, 'u').test(fromPattern(s.pattern))) return fromPattern(s.pattern);
        return 'sample-value';
    }
  };
  return Object.fromEntries(parameters.required.map((name) => [name, sample(parameters.properties[name] ?? {})]));
}

const SAMPLE_VARS: Record<string, string> = {
  cloudId: '11111111-2222-3333-4444-555555555555',
  siteUrl: 'https://example.atlassian.net',
  instanceUrl: 'https://example.my.salesforce.com',
  baseUri: 'https://na3.docusign.net',
  apiEndpoint: 'https://us6.api.mailchimp.com',
  apiDomain: 'https://acme.pipedrive.com',
  loginDomain: 'login',
  region: 'com',
  site: 'acme',
  teamId: 'T123',
  hubId: '42',
};

describe('shipped provider catalog', () => {
  it('parses every shipped file and holds the fifteen required providers', () => {
    const ids = catalog.providers.map((p) => p.definition.id);
    for (const id of REQUIRED_PROVIDERS) expect(ids).toContain(id);
    expect(ids.length).toBeGreaterThanOrEqual(15);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('lists popular providers first, then by label', () => {
    const list = catalog.providers.map((p) => p.definition);
    const firstNotPopular = list.findIndex((p) => !p.popular);
    expect(list.slice(firstNotPopular).every((p) => !p.popular)).toBe(true);
    const popularLabels = list.slice(0, firstNotPopular).map((p) => p.label);
    expect(popularLabels).toEqual([...popularLabels].sort((a, b) => a.localeCompare(b)));
  });

  describe.each(catalog.providers.map((p) => [p.definition.id, p] as const))('%s', (_id, entry) => {
    const def = entry.definition;

    it('has at least 4 tools with unique snake_case names, read and write modes declared', () => {
      expect(def.tools.length).toBeGreaterThanOrEqual(4);
      const names = def.tools.map((t) => t.name);
      expect(new Set(names).size).toBe(names.length);
      for (const name of names) expect(name).toMatch(/^[a-z][a-z0-9_]*$/);
      for (const t of def.tools) expect(['read', 'write']).toContain(t.mode);
    });

    it('has parameters that are valid JSON Schemas (compiled by Ajv in strict mode)', () => {
      const ajv = new Ajv({ strict: true, allErrors: true, validateFormats: false });
      for (const tool of def.tools) {
        expect(() => ajv.compile(tool.parameters), `${def.id}.${tool.name}`).not.toThrow();
        expect(tool.parameters.type).toBe('object');
        for (const [name, prop] of Object.entries(tool.parameters.properties)) {
          expect(prop.description, `${def.id}.${tool.name}.${name}`).toBeTruthy();
        }
      }
    });

    it('declares every path placeholder as a required (or defaulted) parameter', () => {
      for (const tool of def.tools) {
        for (const m of tool.request.path.matchAll(URL_PLACEHOLDER)) {
          const name = m[2] as string;
          const prop = tool.parameters.properties[name];
          expect(prop, `${def.id}.${tool.name}: {${name}}`).toBeDefined();
          expect(tool.parameters.required.includes(name) || prop?.default !== undefined).toBe(true);
        }
      }
    });

    it('builds a request on the API host for every tool from minimal arguments', () => {
      const vars = Object.fromEntries([...connectionVarNames(def)].map((v) => [v, SAMPLE_VARS[v] ?? 'sample']));
      for (const tool of def.tools) {
        const req = buildToolRequest(def, tool, sampleArgs(tool.parameters), { baseUrlVars: vars });
        const url = new URL(req.url);
        expect(url.protocol, `${def.id}.${tool.name}`).toBe('https:');
        expect(req.url).not.toMatch(/\{[^}]*\}/);
        // Form bodies (Stripe) are URL-encoded; others JSON.
        if (req.body !== undefined && req.headers['content-type'] === 'application/json') {
          expect(() => JSON.parse(req.body as string)).not.toThrow();
        }
        expect(req.method).toBe(tool.request.method);
      }
    });

    it.runIf(def.oauth !== undefined)('names the vendor documentation its OAuth facts were checked against', () => {
      expect(def.sources?.oauth, `${def.id}: sources.oauth`).toMatch(/^https:\/\/[a-z0-9.-]+\//);
    });

    it('has OAuth endpoints on https and, when hand-written, a hand-made logo served by the app', () => {
      // A token-only provider (authType api_key) has no OAuth endpoints at all.
      if (def.oauth) expect(def.oauth.authorizationUrl).toMatch(/^https:\/\//);
      if (def.oauth) expect(def.oauth.tokenUrl).toMatch(/^https:\/\//);
      expect(def.oauth === undefined).toBe(def.authType === 'api_key');
      // A leading variable is an origin read from the provider (Salesforce instance, DocuSign account server).
      expect(def.api.baseUrl).toMatch(/^(https:\/\/|\{(instanceUrl|baseUri|apiEndpoint|apiDomain)\})/);
      // Generated providers without a shipped logo get the monogram (service.test.ts checks it).
      if (def.origin === 'generated' && entry.logoSvg === undefined) return;
      expect(entry.logoSvg).toBeDefined();
      expect(entry.logoSvg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
      expect(entry.logoSvg).not.toMatch(/<script|on\w+=|href=/i);
      expect(Buffer.byteLength(entry.logoSvg ?? '')).toBeLessThan(2048);
    });
  });
});

describe('PROVIDERS_DIR', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'sb-providers-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const github = () => JSON.parse(readFileSync(join(SHIPPED_PROVIDERS_DIR, 'github.json'), 'utf8'));
  const problemsOf = (dirsToLoad: string[]): string[] => {
    try {
      loadProviderCatalog({ dirs: dirsToLoad, env: {} });
    } catch (err) {
      expect(err).toBeInstanceOf(ProviderCatalogError);
      return (err as ProviderCatalogError).problems;
    }
    return [];
  };

  it('adds a provider from another directory, with its own logo', () => {
    const dir = tempDir();
    const def = { ...github(), id: 'acme-tracker', label: 'Acme Tracker', popular: false };
    writeFileSync(join(dir, 'acme-tracker.json'), JSON.stringify(def));
    mkdirSync(join(dir, 'logos'));
    writeFileSync(join(dir, 'logos', 'acme-tracker.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    const c = loadProviderCatalog({ dirs: [dir], env: {} });
    expect(c.get('acme-tracker')?.definition.label).toBe('Acme Tracker');
    expect(c.get('acme-tracker')?.logoSvg).toBe('<svg xmlns="http://www.w3.org/2000/svg"/>');
    expect(c.providers.length).toBe(catalog.providers.length + 1);
  });

  it('lets a later file with the same id override, keeping the earlier logo when it brings none', () => {
    const first = tempDir();
    const second = tempDir();
    writeFileSync(join(first, 'github.json'), JSON.stringify({ ...github(), label: 'GitHub (first)' }));
    writeFileSync(join(second, 'github.json'), JSON.stringify({ ...github(), label: 'GitHub Enterprise' }));
    const c = loadProviderCatalog({ dirs: [first, second], env: {} });
    expect(c.get('github')?.definition.label).toBe('GitHub Enterprise');
    expect(c.get('github')?.file).toBe(join(second, 'github.json'));
    expect(c.get('github')?.logoSvg).toBe(catalog.get('github')?.logoSvg);
    expect(c.providers.filter((p) => p.definition.id === 'github')).toHaveLength(1);
  });

  it('fails naming the file and the field of a bad provider', () => {
    const dir = tempDir();
    const bad = github();
    bad.id = 'bad-provider';
    bad.oauth.tokenUrl = 'not a url';
    bad.tools[2].name = 'Search Issues';
    delete bad.tools[3].mode;
    writeFileSync(join(dir, 'bad-provider.json'), JSON.stringify(bad));
    const problems = problemsOf([dir]);
    const file = join(dir, 'bad-provider.json');
    expect(problems).toContain(
      `${file}: oauth.tokenUrl: must be an http(s) URL (placeholders like {subdomain} allowed)`,
    );
    expect(problems).toContain(
      `${file}: tools[2].name (tool Search Issues): must be snake_case, at most 64 characters`,
    );
    expect(problems.some((p) => p.startsWith(`${file}: tools[3].mode (tool list_repository_issues):`))).toBe(true);
  });

  it('reports cross-field faults: undeclared placeholders, unused and duplicate names, wrong file name', () => {
    const dir = tempDir();
    const bad = github();
    bad.tools[4].request.path = '/repos/{owner}/{repo}/issues/{number}';
    bad.tools[1].request.query.extra = '{{missing}}';
    bad.tools[0].parameters.properties.unused = { type: 'string', description: 'Never sent.' };
    bad.tools[5].name = bad.tools[6].name;
    bad.api.baseUrl = 'https://{tenant}.example.com';
    writeFileSync(join(dir, 'renamed.json'), JSON.stringify(bad));
    const problems = problemsOf([dir]);
    const file = join(dir, 'renamed.json');
    expect(problems).toEqual(
      expect.arrayContaining([
        `${file}: api.baseUrl: {tenant} is not a connection variable (finalizeFields, tokenResponse.vars, discovery)`,
        `${file}: tools[4] (get_issue).request.path: {number} is not a declared parameter`,
        `${file}: tools[1] (search_repositories).request: {{missing}} is not a declared parameter`,
        `${file}: tools[0] (list_my_repositories).parameters.properties.unused: not used by the request`,
        `${file}: tools[6] (create_issue).name: duplicate tool name "create_issue"`,
        `${file}: id: "github" must match the file name (github.json)`,
      ]),
    );
  });

  it('reports invalid JSON and a directory that does not exist, all at once', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'broken.json'), '{ "id": ');
    const missing = join(dir, 'nope');
    const problems = problemsOf([dir, missing]);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(new RegExp(`^${join(dir, 'broken.json')}: not valid JSON`));
    expect(problems[1]).toBe(`${missing}: PROVIDERS_DIR entry is not a directory`);
  });

  it('refuses unknown keywords in parameter schemas and keys in provider files', () => {
    const dir = tempDir();
    const bad = github();
    bad.tools[0].parameters.properties.sort.reqired = true;
    bad.colour = 'blue';
    writeFileSync(join(dir, 'github.json'), JSON.stringify(bad));
    const problems = problemsOf([dir]).join('\n');
    expect(problems).toContain('tools[0].parameters.properties.sort');
    expect(problems).toContain('reqired');
    expect(problems).toContain('colour');
  });

  it('reads PROVIDERS_DIR as a comma-separated list in config', () => {
    const a = tempDir();
    const b = tempDir();
    cpSync(join(SHIPPED_PROVIDERS_DIR, 'github.json'), join(b, 'github.json'));
    const config = loadConfig({ PROVIDERS_DIR: ` ${a} , ${b},` });
    expect(config.providers.dirs).toEqual([a, b]);
    expect(loadProviderCatalog(config.providers).get('github')?.file).toBe(join(b, 'github.json'));
  });
});

describe('client credentials', () => {
  it('names the variables after the id, upper-cased with other characters as _', () => {
    expect(providerCredentialVariables('google-calendar')).toEqual({
      clientId: 'PROVIDER_GOOGLE_CALENDAR_CLIENT_ID',
      clientSecret: 'PROVIDER_GOOGLE_CALENDAR_CLIENT_SECRET',
    });
    expect(providerCredentialVariables('github')).toEqual({
      clientId: 'PROVIDER_GITHUB_CLIENT_ID',
      clientSecret: 'PROVIDER_GITHUB_CLIENT_SECRET',
    });
  });

  it('are collected by config from PROVIDER_* variables; a provider needs both to be configured', () => {
    const config = loadConfig({
      PROVIDER_GITHUB_CLIENT_ID: 'gh-id',
      PROVIDER_GITHUB_CLIENT_SECRET: 'gh-secret',
      PROVIDER_SLACK_CLIENT_ID: 'only-the-id',
      PROVIDER_NOTION_CLIENT_ID: '',
      PROVIDERS_DIR: '',
      UNRELATED: 'x',
    });
    expect(config.providers.env).toEqual({
      PROVIDER_GITHUB_CLIENT_ID: 'gh-id',
      PROVIDER_GITHUB_CLIENT_SECRET: 'gh-secret',
      PROVIDER_SLACK_CLIENT_ID: 'only-the-id',
    });
    expect(config.providers.dirs).toEqual([]);
    expect(providerCredentials(config, 'github')).toEqual({ clientId: 'gh-id', clientSecret: 'gh-secret' });
    expect(providerCredentials(config, 'slack')).toBeUndefined();
    expect(providerCredentials(config, 'notion')).toBeUndefined();
  });
});

describe('apiKey rules', () => {
  const jira = catalog.get('jira')?.definition;
  const withKey = (apiKey: Record<string, unknown>) => {
    if (!jira?.apiKey) throw new Error('jira takes a token');
    return ProviderDefinitionSchema.parse({ ...jira, apiKey: { ...jira.apiKey, ...apiKey } });
  };

  it('Jira as shipped passes: {site} only names a label before atlassian.net', () => {
    expect(jira && checkProviderRules(jira)).toEqual([]);
  });

  it('a field may not stand for a whole origin or a host without the provider domain after it', () => {
    expect(checkProviderRules(withKey({ baseUrl: '{site}/rest/api/3' }))).toContain(
      "apiKey.baseUrl: a token connection's origin must be fixed (a field may only name a host label)",
    );
    expect(checkProviderRules(withKey({ baseUrl: 'https://{site}/rest/api/3' }))).toContain(
      "apiKey.baseUrl: a field in the host must be followed by the provider's domain ({site}.example.com)",
    );
    // api.{site}.com would let the user pick the domain: two fixed labels at least.
    expect(checkProviderRules(withKey({ baseUrl: 'https://api.{site}.com/rest' }))).toHaveLength(1);
    expect(checkProviderRules(withKey({ baseUrl: 'https://api.{site}.example.com/rest' }))).toEqual([]);
    // A field listing its only values may stand anywhere in the host (Square's sandbox: connect.{env}.com).
    const env = { name: 'env', label: 'Environment', pattern: 'squareup|squareupsandbox', default: 'squareup' };
    const listed = { fields: [...(jira?.apiKey?.fields ?? []), env], baseUrl: 'https://connect.{env}.com/rest' };
    expect(checkProviderRules(withKey(listed))).toEqual([]);
    const open = { ...env, pattern: '[a-z]+' };
    expect(checkProviderRules(withKey({ ...listed, fields: [...(jira?.apiKey?.fields ?? []), open] }))).toHaveLength(1);
    const whoami = { url: 'https://{site}.net/myself', fields: { providerUserId: 'accountId' } };
    expect(checkProviderRules(withKey({ whoami }))).toContain(
      "apiKey.whoami.url: a field in the host must be followed by the provider's domain ({site}.example.com)",
    );
  });

  it('URLs may use only the fields given with the token; basic auth names one of them', () => {
    const problems = checkProviderRules(withKey({ baseUrl: undefined, auth: { type: 'basic', username: 'login' } }));
    expect(problems).toContain(
      'api.baseUrl (used by token connections): {cloudId} is not an apiKey field or whoami var',
    );
    expect(problems).toContain('apiKey.auth.username: "login" is not one of apiKey.fields');
    const named = checkProviderRules(
      withKey({ fields: [{ name: 'token', label: 'Token', pattern: '.+' }], baseUrl: 'https://x.example.com' }),
    );
    expect(named).toContain('apiKey.fields: "token" is the token itself; name the field otherwise');
  });

  it('every shipped apiKey block passes, links to an https page, and at least 15 providers have one', () => {
    const keyed = catalog.providers.filter((p) => p.definition.apiKey);
    expect(keyed.length).toBeGreaterThanOrEqual(15);
    for (const p of keyed) expect(p.definition.apiKey?.docsUrl).toMatch(/^https:\/\/[a-z0-9.-]+\//);
  });
});

describe('connection fields in OAuth URLs', () => {
  const zendesk = catalog.get('zendesk')?.definition;
  const withOAuth = (oauth: Record<string, unknown>, finalizeFields?: unknown[]) => {
    if (!zendesk?.oauth) throw new Error('zendesk has OAuth');
    return ProviderDefinitionSchema.parse({
      ...zendesk,
      oauth: { ...zendesk.oauth, ...oauth },
      ...(finalizeFields ? { finalizeFields } : {}),
    });
  };
  const region = (pattern: string, extra: Record<string, unknown> = {}) => [
    { name: 'region', label: 'Region', pattern, ...extra },
    ...(zendesk?.finalizeFields ?? []),
  ];

  it('the shipped hosts pass: a label before the domain (Zendesk, Salesforce) or a list of values (Zoho)', () => {
    const ids = ['zendesk', 'salesforce', 'zoho-crm', 'shopify', 'jira', 'confluence', 'okta'];
    for (const id of [...ids, 'intercom', 'docusign', 'square', 'opsgenie']) {
      const def = catalog.get(id)?.definition;
      expect(def && checkProviderRules(def), id).toEqual([]);
    }
  });

  it('a typed field may not pick the domain or the whole origin', () => {
    expect(checkProviderRules(withOAuth({ tokenUrl: 'https://{subdomain}/oauth/tokens' }))).toEqual([
      "oauth.tokenUrl: {subdomain} must be followed by the provider's domain ({subdomain}.example.com) or its pattern list the only values (com|eu)",
    ]);
    expect(checkProviderRules(withOAuth({ authorizationUrl: '{subdomain}/oauth/authorize' }))).toEqual([
      'oauth.authorizationUrl: {subdomain} is typed by the user and cannot be a whole origin (a host label only)',
    ]);
    // A top-level domain from a list of values keeps the host on the vendor's domains; a free pattern does not.
    const tld = { authorizationUrl: 'https://accounts.example.{region}/auth' };
    expect(checkProviderRules(withOAuth(tld, region('com|eu|com\\.au')))).toEqual([]);
    expect(checkProviderRules(withOAuth(tld, region('[a-z.]+')))).toHaveLength(1);
  });

  it("a default must match its field's pattern, and refresh and selection URLs use connection variables", () => {
    expect(checkProviderRules(withOAuth({}, region('com|eu', { default: 'evil.com' })))).toEqual([
      'finalizeFields[0].default: "evil.com" does not match the field\'s pattern',
    ]);
    expect(checkProviderRules(withOAuth({ refreshUrl: 'https://{tenant}.zendesk.com/oauth/refresh' }))).toEqual([
      'oauth.refreshUrl: {tenant} is not a connection variable (finalizeFields, tokenResponse.vars, discovery)',
    ]);
  });
});
