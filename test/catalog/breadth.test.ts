import { describe, expect, it } from 'vitest';
import { loadProviderCatalog } from '../../src/modules/providers/catalog.ts';
import type { ProviderDefinition } from '../../src/modules/providers/definition.ts';

/**
 * The catalog's breadth (issue 41): how many vendors and tools it holds, that the apps users look for are in
 * it, and that each provider names the documentation its OAuth facts come from.
 */

const catalog = loadProviderCatalog({ dirs: [], env: {} });
const defs = catalog.providers.map((p) => p.definition);

/** Second-level labels under which a registrable domain takes three labels (example.co.uk). */
const TWO_LABEL_SUFFIXES = new Set(['co.uk', 'com.au', 'co.jp', 'com.br', 'co.nz']);

/**
 * The vendor of a provider: the registrable domain of its API's base URL, or, when the host is a connection
 * variable (Salesforce's instance, DocuSign's account server), of its token URL.
 */
function vendorOf(def: ProviderDefinition): string {
  // A field with a default stands for its usual value (Zoho's `accounts.zoho.{region}`: com).
  const usual = (url: string) =>
    url.replace(/\{([^}]+)\}/g, (m, name) => def.finalizeFields.find((f) => f.name === name)?.default ?? m);
  const fixedHost = (url: string) =>
    /^https:\/\/[^/{]+(\/|$)/.test(usual(url)) ? new URL(usual(url)).hostname : undefined;
  const host =
    fixedHost(def.api.baseUrl.replace(/\{[^}]+\}\./, '')) ??
    fixedHost((def.oauth?.tokenUrl ?? '').replace(/\{[^}]+\}\./, ''));
  if (!host) throw new Error(`${def.id}: no fixed host`);
  const labels = host.split('.');
  const two = labels.slice(-2).join('.');
  return TWO_LABEL_SUFFIXES.has(two) ? labels.slice(-3).join('.') : two;
}

/** The apps issue 41 names, each a provider of the catalog. */
const NAMED_APPS = [
  'google-docs',
  'google-drive',
  'confluence',
  'monday',
  'clickup',
  'pipedrive',
  'zoho-crm',
  'zendesk',
  'intercom',
  'shopify',
  'quickbooks',
  'xero',
  'docusign',
  'calendly',
  'gitlab',
  'mailchimp',
  'reddit',
  'linkedin',
  'todoist',
  'webflow',
  'wordpress',
  'typeform',
  'miro',
  'canva',
  'sentry',
  'pagerduty',
  'supabase',
  'attio',
  'klaviyo',
];

describe('catalog breadth', () => {
  it('counts vendors by the registrable domain of their API', () => {
    const byId = new Map(defs.map((d) => [d.id, d]));
    const of = (id: string) => vendorOf(byId.get(id) as ProviderDefinition);
    expect(of('gmail')).toBe('googleapis.com');
    expect(of('google-docs')).toBe('googleapis.com');
    expect(of('outlook')).toBe('microsoft.com');
    expect(of('salesforce')).toBe('salesforce.com');
    expect(of('docusign')).toBe('docusign.com');
    expect(of('zendesk')).toBe('zendesk.com');
    expect(of('shopify')).toBe('myshopify.com');
    // A host made of a connection value before the vendor's domain (a Braze instance, an Algolia application).
    expect(of('braze')).toBe('braze.com');
    expect(of('algolia')).toBe('algolia.net');
  });

  it('holds at least 100 vendors and 3,400 tools', () => {
    const vendors = new Set(defs.map(vendorOf));
    const tools = defs.reduce((n, d) => n + d.tools.length, 0);
    expect(vendors.size).toBeGreaterThanOrEqual(100);
    expect(tools).toBeGreaterThanOrEqual(3400);
  });

  it('has every app issue 41 names, each with at least 5 tools', () => {
    for (const id of NAMED_APPS) {
      const def = catalog.get(id)?.definition;
      expect(def, id).toBeDefined();
      expect(def?.tools.length, id).toBeGreaterThanOrEqual(5);
    }
  });

  it('lets Google Docs be read, created, appended to and edited, and Drive take an upload', () => {
    const tools = (id: string) => catalog.get(id)?.definition.tools.map((t) => t.name) ?? [];
    expect(tools('google-docs')).toEqual(
      expect.arrayContaining(['get_document', 'create_document', 'append_text', 'replace_text']),
    );
    expect(tools('google-drive')).toEqual(expect.arrayContaining(['create_file', 'upload_file_content']));
  });

  it('names, for every provider, the documentation of its OAuth facts', () => {
    expect(defs.length).toBeGreaterThan(100);
    for (const def of defs) {
      // A token-only provider names its page on tokens instead.
      expect(def.authType === 'api_key' ? def.sources?.apiKey : def.sources?.oauth, def.id).toMatch(/^https:\/\//);
    }
  });

  it('connects Intercom workspaces in the EU and Australia, DocuSign developer accounts and the Square sandbox', () => {
    const def = (id: string) => catalog.get(id)?.definition as ProviderDefinition;
    const field = (id: string) => def(id).finalizeFields[0];
    expect(field('intercom')).toMatchObject({ name: 'apiHost', default: 'api' });
    expect(def('intercom').api.baseUrl).toBe('https://{apiHost}.intercom.io');
    expect(def('intercom').oauth?.tokenUrl).toBe('https://{apiHost}.intercom.io/auth/eagle/token');
    expect(def('intercom').apiKey?.fields.map((f) => f.name)).toEqual(['apiHost']);
    expect(field('docusign')).toMatchObject({ name: 'accountServer', default: 'account' });
    expect(def('docusign').oauth?.authorizationUrl).toBe('https://{accountServer}.docusign.com/oauth/auth');
    expect(field('square')).toMatchObject({ name: 'squareHost', default: 'squareup' });
    expect(def('square').api.baseUrl).toBe('https://connect.{squareHost}.com');
    for (const [id, values] of [
      ['intercom', ['api', 'api.eu', 'api.au']],
      ['docusign', ['account', 'account-d']],
      ['square', ['squareup', 'squareupsandbox']],
    ] as const) {
      const re = new RegExp(`^(?:${field(id)?.pattern})$`);
      for (const v of values) expect(re.test(v), `${id} ${v}`).toBe(true);
      expect(re.test('evil.com'), id).toBe(false);
    }
  });
});
