import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { Config, ProvidersConfig } from '../../config.ts';
import { PACKAGE_ROOT } from '../../lib/paths.ts';
import { DEFAULT_CATALOG_CACHE, openCatalogCache } from './catalog-cache.ts';
import {
  type FinalizeField,
  type ProviderDefinition,
  ProviderDefinition as ProviderDefinitionSchema,
  type ToolDefinition,
  URL_PLACEHOLDER,
  VALUE_PLACEHOLDER,
} from './definition.ts';
import { getPath } from './json-path.ts';

/**
 * The connector catalog is data: one JSON file per provider in the shipped `providers/` directory, then in
 * each `PROVIDERS_DIR` directory in order; a later file with the same id replaces the earlier one. Every
 * file is validated at start-up and all problems are reported at once, each naming its file and field; a
 * file validated before with the same name and text, by the same code, is taken from the cache
 * (`catalog-cache.ts`).
 */

export const SHIPPED_PROVIDERS_DIR = join(PACKAGE_ROOT, 'providers');

export interface CatalogProvider {
  definition: ProviderDefinition;
  /** The file it came from, for messages. */
  file: string;
  /** The SVG the service serves at `/providers/logos/<id>.svg`, when the file's directory has one. */
  logoSvg?: string | undefined;
}

export interface ProviderCatalog {
  /** In a stable order: popular first, then by label. */
  providers: readonly CatalogProvider[];
  get(id: string): CatalogProvider | undefined;
}

export class ProviderCatalogError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid provider catalog:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ProviderCatalogError';
  }
}

function issuePath(path: ReadonlyArray<PropertyKey>): string {
  return path.reduce<string>(
    (acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : acc ? `${acc}.${String(seg)}` : String(seg)),
    '',
  );
}

const urlNames = (s: string) => [...s.matchAll(URL_PLACEHOLDER)].map((m) => m[2] as string);
const valueNames = (s: string) => [...s.matchAll(VALUE_PLACEHOLDER)].map((m) => m[1] as string);

/** Every `{{name}}` used by a template, with `item` allowed inside `$each` and names of `$if`/`$each`. */
function templateNames(template: unknown, inEach: boolean, out: Array<{ name: string; inEach: boolean }>): void {
  if (typeof template === 'string') {
    for (const name of valueNames(template)) out.push({ name, inEach });
  } else if (Array.isArray(template)) {
    for (const t of template) templateNames(t, inEach, out);
  } else if (template && typeof template === 'object') {
    const obj = template as Record<string, unknown>;
    if ('$each' in obj) {
      out.push({ name: String(obj.$each), inEach });
      templateNames(obj.template, true, out);
      return;
    }
    if ('$if' in obj) {
      for (const n of Array.isArray(obj.$if) ? obj.$if : [obj.$if]) out.push({ name: String(n), inEach });
    }
    for (const [k, v] of Object.entries(obj)) if (k !== '$if') templateNames(v, inEach, out);
  }
}

/**
 * Connection variables a provider defines: finalize fields, token-answer values, discovered values; for a
 * token-only provider, the fields given with the token.
 */
export function connectionVarNames(def: ProviderDefinition): Set<string> {
  return new Set([
    ...(def.oauth ? [] : (def.apiKey?.fields ?? []).map((f) => f.name)),
    ...def.finalizeFields.map((f) => f.name),
    ...Object.keys(def.oauth?.tokenResponse.vars ?? {}),
    ...Object.keys(def.oauth?.discovery?.vars ?? {}),
  ]);
}

/** Connection variables the authorization or token URL is built from: they must be known before OAuth. */
export function beforeAuthorization(def: ProviderDefinition): Set<string> {
  return new Set(def.oauth ? [...urlNames(def.oauth.authorizationUrl), ...urlNames(def.oauth.tokenUrl)] : []);
}

/**
 * The provider's connection fields a user gives before authorization: those its authorization or token URL
 * is built from (a subdomain; required in `providerParams` unless they have a default), and those with a
 * default or optional (a Salesforce login domain, an Atlassian site). Other fields are asked after OAuth
 * (the pending connection).
 */
export function connectFields(def: ProviderDefinition): FinalizeField[] {
  const names = beforeAuthorization(def);
  return def.finalizeFields.filter((f) => names.has(f.name) || f.optional || f.default !== undefined);
}

/**
 * A connection's variables with the defaults of the fields it lacks: a connection made before a field was
 * added (Salesforce's login domain) keeps refreshing on the host it always used.
 */
export function withFieldDefaults(
  def: Pick<ProviderDefinition, 'finalizeFields'>,
  vars: Readonly<Record<string, string>>,
): Record<string, string> {
  const defaults = def.finalizeFields.filter((f) => f.default !== undefined).map((f) => [f.name, f.default]);
  return { ...Object.fromEntries(defaults), ...vars };
}

/** Cross-field rules zod cannot see field by field; answers `field: message` lines. */
export function checkProviderRules(def: ProviderDefinition): string[] {
  const problems: string[] = [];
  const vars = connectionVarNames(def);
  const checkVarsIn = (field: string, url: string | undefined, extra: string[] = []) => {
    for (const name of url ? urlNames(url) : []) {
      if (!vars.has(name) && !extra.includes(name)) {
        problems.push(
          `${field}: {${name}} is not a connection variable (finalizeFields, tokenResponse.vars, discovery)`,
        );
      }
    }
  };
  if (def.authType === 'oauth' && !def.oauth) problems.push('oauth: required when authType is "oauth"');
  if (def.authType === 'api_key') {
    if (def.oauth) problems.push('oauth: a provider with authType "api_key" has no oauth block');
    if (!def.apiKey) problems.push('apiKey: required when authType is "api_key"');
    if (def.finalizeFields.length > 0) problems.push('finalizeFields: only OAuth connections are finalized');
  }
  checkVarsIn('oauth.authorizationUrl', def.oauth?.authorizationUrl);
  checkVarsIn('oauth.tokenUrl', def.oauth?.tokenUrl);
  checkVarsIn('oauth.refreshUrl', def.oauth?.refreshUrl);
  checkVarsIn('oauth.revocationUrl', def.oauth?.revocationUrl, ['clientId']);
  checkVarsIn('oauth.userInfo.url', def.oauth?.userInfo.url, ['accessToken']);
  checkVarsIn('oauth.discovery.url', def.oauth?.discovery?.url);
  checkVarsIn('oauth.discovery.select.equals', def.oauth?.discovery?.select?.equals);
  // A token-only provider's API base is checked against its fields below.
  if (def.oauth) checkVarsIn('api.baseUrl', def.api.baseUrl);
  for (const [name, value] of Object.entries(def.api.headers)) {
    if (valueNames(value).length) problems.push(`api.headers.${name}: provider headers cannot use arguments`);
    else checkVarsIn(`api.headers.${name}`, value);
  }

  problems.push(...checkApiKeyRules(def));
  problems.push(...checkFieldRules(def));

  const seen = new Set<string>();
  def.tools.forEach((tool, i) => {
    const at = `tools[${i}] (${tool.name})`;
    if (seen.has(tool.name)) problems.push(`${at}.name: duplicate tool name "${tool.name}"`);
    seen.add(tool.name);
    const params = tool.parameters.properties;
    const required = new Set(tool.parameters.required);
    for (const r of required) {
      if (!Object.hasOwn(params, r)) problems.push(`${at}.parameters.required: "${r}" is not a property`);
    }
    checkVarsIn(`${at}.request.baseUrl`, tool.request.baseUrl);
    for (const name of urlNames(tool.request.path)) {
      if (!Object.hasOwn(params, name)) {
        problems.push(`${at}.request.path: {${name}} is not a declared parameter`);
      } else if (!required.has(name) && params[name]?.default === undefined) {
        problems.push(`${at}.request.path: path parameter "${name}" must be required or have a default`);
      }
    }
    const used: Array<{ name: string; inEach: boolean }> = [];
    for (const v of Object.values(tool.request.query)) if (typeof v === 'string') templateNames(v, false, used);
    for (const v of Object.values(tool.request.headers)) templateNames(v, false, used);
    templateNames(tool.request.body, false, used);
    for (const { name, inEach } of used) {
      if (!Object.hasOwn(params, name) && !(inEach && name === 'item')) {
        problems.push(`${at}.request: {{${name}}} is not a declared parameter`);
      }
    }
    const referenced = new Set([...urlNames(tool.request.path), ...used.map((u) => u.name)]);
    for (const name of Object.keys(params)) {
      if (!referenced.has(name)) problems.push(`${at}.parameters.properties.${name}: not used by the request`);
    }
    if (tool.request.body !== undefined && tool.request.method === 'GET') {
      problems.push(`${at}.request.body: a GET request has no body`);
    }
    const p = tool.request.pagination;
    if (p.style === 'page' && !tool.response.listPath) {
      problems.push(`${at}.request.pagination: page style needs response.listPath to see the last page`);
    }
    if (
      p.style === 'cursor' &&
      p.in === 'body' &&
      (tool.request.body === undefined || tool.request.bodyFormat !== 'json')
    ) {
      problems.push(`${at}.request.pagination: a body cursor needs a JSON body`);
    }
    for (const [name, schema] of Object.entries(params)) {
      if (schema.default !== undefined && required.has(name)) {
        problems.push(`${at}.parameters.properties.${name}: a required parameter cannot have a default`);
      }
    }
  });
  return problems;
}

/** Connection variables a token connection has: the fields given with the token and those `whoami` reads. */
export function apiKeyVarNames(def: ProviderDefinition): Set<string> {
  return new Set([...(def.apiKey?.fields ?? []).map((f) => f.name), ...Object.keys(def.apiKey?.whoami.vars ?? {})]);
}

/**
 * A host built from what a user types must stay on the provider's domain: a field may stand for a label of
 * the host only before a fixed domain (`https://{site}.atlassian.net`), never for the whole origin. With the
 * field's anchored pattern and `fillBaseUrl` (no `/`, `@`, `:` in a value) the request cannot leave it.
 */
const HOST_WITH_FIELD = /\}\.[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::\d+)?$/;

function checkApiKeyRules(def: ProviderDefinition): string[] {
  const k = def.apiKey;
  if (!k) return [];
  const problems: string[] = [];
  const fields = new Set(k.fields.map((f) => f.name));
  const vars = apiKeyVarNames(def);
  const checkUrl = (field: string, url: string | undefined, allowed: Set<string>) => {
    if (!url) return;
    for (const name of urlNames(url)) {
      if (!allowed.has(name)) problems.push(`${field}: {${name}} is not an apiKey field or whoami var`);
    }
    if (/^\{/.test(url)) {
      problems.push(`${field}: a token connection's origin must be fixed (a field may only name a host label)`);
      return;
    }
    const host = /^https?:\/\/([^/]*)/.exec(url)?.[1] ?? '';
    // As for OAuth hosts: a field whose pattern lists its only values (Square's squareup|squareupsandbox) may
    // stand anywhere in the host.
    const listed = urlNames(host).every((n) =>
      LITERAL_ALTERNATIVES.test(k.fields.find((f) => f.name === n)?.pattern ?? ''),
    );
    if (host.includes('{') && !HOST_WITH_FIELD.test(host) && !listed) {
      problems.push(`${field}: a field in the host must be followed by the provider's domain ({site}.example.com)`);
    }
  };
  checkUrl('apiKey.whoami.url', k.whoami.url, fields);
  checkUrl(
    k.baseUrl ? 'apiKey.baseUrl' : 'api.baseUrl (used by token connections)',
    k.baseUrl ?? def.api.baseUrl,
    vars,
  );
  def.tools.forEach((tool, i) => {
    checkUrl(`tools[${i}] (${tool.name}).request.baseUrl`, tool.request.baseUrl, vars);
  });
  if (k.auth.type === 'basic' && k.auth.username !== undefined && !fields.has(k.auth.username)) {
    problems.push(`apiKey.auth.username: "${k.auth.username}" is not one of apiKey.fields`);
  }
  if (k.auth.type === 'basic' && k.auth.username !== undefined && k.auth.password !== undefined) {
    problems.push('apiKey.auth.password: only without username (the token is then the user name)');
  }
  if (k.auth.type === 'query') {
    for (const [param, field] of Object.entries(k.auth.fields)) {
      if (!fields.has(field)) problems.push(`apiKey.auth.fields.${param}: "${field}" is not one of apiKey.fields`);
      if (param === k.auth.name) problems.push(`apiKey.auth.fields.${param}: the token's own parameter`);
    }
  }
  for (const f of k.fields) {
    // The form's own input for the token is named so.
    if (f.name === 'token') problems.push('apiKey.fields: "token" is the token itself; name the field otherwise');
    if (def.finalizeFields.some((o) => o.name === f.name && o.pattern !== f.pattern)) {
      problems.push(`apiKey.fields: "${f.name}" is also a finalize field with another pattern`);
    }
  }
  return problems;
}

/** A pattern that is a list of literal values (`com|eu|com\\.au`): whatever matches is one of them. */
const LITERAL_ALTERNATIVES = /^\^?(?:[A-Za-z0-9-]|\\\.)+(?:\|(?:[A-Za-z0-9-]|\\\.)+)*\$?$/;

/**
 * Fields the user types: a default must match its field's pattern, and a field in the host of a URL the
 * OAuth side or the API calls must keep the host on the provider's domain: followed by it
 * (`https://{subdomain}.zendesk.com`), or a pattern listing the only values (Zoho's `accounts.zoho.{region}`).
 * A whole origin (`{instanceUrl}`) comes only from the provider's answers (`tokenResponse.vars`, `discovery`).
 */
function checkFieldRules(def: ProviderDefinition): string[] {
  const problems: string[] = [];
  const lists: Array<[string, readonly FinalizeField[]]> = [
    ['finalizeFields', def.finalizeFields],
    ['apiKey.fields', def.apiKey?.fields ?? []],
  ];
  for (const [at, fields] of lists) {
    fields.forEach((f, i) => {
      if (f.default !== undefined && !new RegExp(`^(?:${f.pattern})$`, 'u').test(f.default)) {
        problems.push(`${at}[${i}].default: "${f.default}" does not match the field's pattern`);
      }
      if (f.default !== undefined && f.optional) {
        problems.push(`${at}[${i}].optional: a field with a default is never missing`);
      }
    });
  }
  const o = def.oauth;
  if (!o) return problems;
  const typed = new Map(def.finalizeFields.map((f) => [f.name, f]));
  const urls: Array<[string, string | undefined]> = [
    ['oauth.authorizationUrl', o.authorizationUrl],
    ['oauth.tokenUrl', o.tokenUrl],
    ['oauth.refreshUrl', o.refreshUrl],
    ['oauth.revocationUrl', o.revocationUrl],
    ['oauth.userInfo.url', o.userInfo.url],
    ['oauth.discovery.url', o.discovery?.url],
    ['api.baseUrl', def.api.baseUrl],
    ...def.tools.map((t, i): [string, string | undefined] => [
      `tools[${i}] (${t.name}).request.baseUrl`,
      t.request.baseUrl,
    ]),
  ];
  for (const [field, url] of urls) {
    if (!url) continue;
    const lead = /^\{([A-Za-z_][A-Za-z0-9_]*)\}/.exec(url)?.[1];
    if (lead && typed.has(lead)) {
      problems.push(`${field}: {${lead}} is typed by the user and cannot be a whole origin (a host label only)`);
      continue;
    }
    const host = /^https?:\/\/([^/]*)/.exec(url)?.[1] ?? '';
    const inHost = urlNames(host).filter((n) => typed.has(n));
    if (inHost.length && !HOST_WITH_FIELD.test(host)) {
      for (const name of inHost) {
        if (!LITERAL_ALTERNATIVES.test(typed.get(name)?.pattern ?? '')) {
          problems.push(
            `${field}: {${name}} must be followed by the provider's domain ({${name}}.example.com) or its pattern list the only values (com|eu)`,
          );
        }
      }
    }
  }
  return problems;
}

/** Reads and validates one file; answers the definition or the problems, each prefixed with the file. */
export function parseProviderFile(file: string, text: string = readFileSync(file, 'utf8')): ProviderDefinition {
  const name = basename(file);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ProviderCatalogError([`${file}: not valid JSON (${(err as Error).message})`]);
  }
  const parsed = ProviderDefinitionSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ProviderCatalogError(
      parsed.error.issues.map((i) => {
        const field = issuePath(i.path);
        const tool =
          i.path[0] === 'tools' && typeof i.path[1] === 'number' ? getPath(raw, `tools[${i.path[1]}].name`) : '';
        return `${file}: ${field || '(file)'}${tool ? ` (tool ${String(tool)})` : ''}: ${i.message}`;
      }),
    );
  }
  const def = parsed.data;
  const problems = checkProviderRules(def).map((p) => `${file}: ${p}`);
  if (name !== `${def.id}.json`) problems.push(`${file}: id: "${def.id}" must match the file name (${def.id}.json)`);
  if (problems.length) throw new ProviderCatalogError(problems);
  return def;
}

function listJsonFiles(dir: string): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new ProviderCatalogError([`${dir}: PROVIDERS_DIR entry is not a directory`]);
  }
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => join(dir, f));
}

/**
 * Loads the shipped catalog and the configured directories; throws one error listing every problem.
 * `cacheFile` keeps what validation answered (`null`: validate every file, keep nothing).
 */
export function loadProviderCatalog(
  settings: ProvidersConfig,
  shippedDir: string = SHIPPED_PROVIDERS_DIR,
  cacheFile: string | null = DEFAULT_CATALOG_CACHE,
): ProviderCatalog {
  const cache = openCatalogCache(cacheFile);
  const problems: string[] = [];
  const byId = new Map<string, CatalogProvider>();
  const dirs = [shippedDir, ...settings.dirs.map((d) => resolve(d))];
  for (const dir of dirs) {
    let files: string[];
    try {
      files = listJsonFiles(dir);
    } catch (err) {
      if (err instanceof ProviderCatalogError) problems.push(...err.problems);
      else throw err;
      continue;
    }
    const idsHere = new Set<string>();
    for (const file of files) {
      try {
        const text = readFileSync(file, 'utf8');
        let definition = cache.get(file, text);
        if (!definition) {
          definition = parseProviderFile(file, text);
          cache.set(file, text, definition);
        }
        if (idsHere.has(definition.id)) problems.push(`${file}: id: "${definition.id}" appears twice in ${dir}`);
        idsHere.add(definition.id);
        const logoFile = join(dir, 'logos', `${definition.id}.svg`);
        const logoSvg = existsSync(logoFile) ? readFileSync(logoFile, 'utf8') : byId.get(definition.id)?.logoSvg;
        byId.set(definition.id, { definition, file, logoSvg });
      } catch (err) {
        if (err instanceof ProviderCatalogError) problems.push(...err.problems);
        else problems.push(`${file}: ${(err as Error).message}`);
      }
    }
  }
  const prefixes = new Map<string, string>();
  for (const { definition, file } of byId.values()) {
    const other = prefixes.get(providerEnvPrefix(definition.id));
    if (other)
      problems.push(
        `${file}: id: "${definition.id}" and "${other}" share the variables ${providerEnvPrefix(definition.id)}*`,
      );
    prefixes.set(providerEnvPrefix(definition.id), definition.id);
  }
  cache.save();
  if (problems.length) throw new ProviderCatalogError(problems);
  const providers = [...byId.values()].sort(
    (a, b) =>
      Number(b.definition.popular) - Number(a.definition.popular) ||
      a.definition.label.localeCompare(b.definition.label),
  );
  return { providers, get: (id) => byId.get(id) };
}

/** The catalogs this process loaded, by their directory list (the files are read at start-up only). */
const catalogs = new Map<string, ProviderCatalog>();

/**
 * The catalog for a configuration, loaded once a process for its directories (at start-up: buildApp calls this
 * before listening), so a change to the files takes effect at the next start. Another app in the same process over
 * the same directories (a test harness each) shares it, and the tool search index built over it.
 */
export function providerCatalog(config: Pick<Config, 'providers'>): ProviderCatalog {
  const key = JSON.stringify(config.providers.dirs.map((d) => resolve(d)));
  let catalog = catalogs.get(key);
  if (!catalog) {
    catalog = loadProviderCatalog(config.providers);
    catalogs.set(key, catalog);
  }
  return catalog;
}

// ---- client credentials ----

/** `PROVIDER_<ID>_`: the id upper-cased, each run of other characters than letters and digits as `_`. */
export function providerEnvPrefix(providerId: string): string {
  return `PROVIDER_${providerId.toUpperCase().replace(/[^A-Z0-9]+/g, '_')}_`;
}

/** The variables an operator sets to make a provider connectable (for the 422 of `initiate`). */
export function providerCredentialVariables(providerId: string): { clientId: string; clientSecret: string } {
  const prefix = providerEnvPrefix(providerId);
  return { clientId: `${prefix}CLIENT_ID`, clientSecret: `${prefix}CLIENT_SECRET` };
}

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

/** The provider's OAuth client, or undefined when either variable is unset ("not configured"). */
export function providerCredentials(
  config: Pick<Config, 'providers'>,
  providerId: string,
): ClientCredentials | undefined {
  const names = providerCredentialVariables(providerId);
  const clientId = config.providers.env[names.clientId];
  const clientSecret = config.providers.env[names.clientSecret];
  return clientId && clientSecret ? { clientId, clientSecret } : undefined;
}

/** Whether OAuth connections can be made now: an OAuth provider with operator credentials. */
export function isProviderConfigured(config: Pick<Config, 'providers'>, providerId: string): boolean {
  if (providerCatalog(config).get(providerId)?.definition.oauth === undefined) return false;
  return providerCredentials(config, providerId) !== undefined;
}

/** The tool of a provider by name. */
export function findTool(provider: ProviderDefinition, toolName: string): ToolDefinition | undefined {
  return provider.tools.find((t) => t.name === toolName);
}
