import { describe, expect, it } from 'vitest';
import { cacheSeconds, clientFromDocument, clientIdUrlProblem, isMetadataDocumentId } from './client-metadata.ts';

const ID = 'https://app.example.com/oauth/client.json';
const doc = (extra: Record<string, unknown> = {}) => ({
  client_id: ID,
  client_name: 'Example',
  redirect_uris: ['https://app.example.com/cb'],
  ...extra,
});

describe('client ID metadata documents', () => {
  it('takes https client ids only as document URLs, and only well-formed ones', () => {
    expect(isMetadataDocumentId('app_123')).toBe(false);
    expect(isMetadataDocumentId('http://app.example.com/c.json')).toBe(false);
    expect(clientIdUrlProblem(ID)).toBeUndefined();
    expect(clientIdUrlProblem('https://app.example.com/c.json?v=2')).toBeUndefined();
    expect(clientIdUrlProblem('https://app.example.com')).toMatch(/must have a path/);
    expect(clientIdUrlProblem('https://app.example.com/')).toMatch(/must have a path/);
    expect(clientIdUrlProblem('https://app.example.com/c.json#x')).toMatch(/fragment/);
    expect(clientIdUrlProblem('https://u:p@app.example.com/c.json')).toMatch(/user name or password/);
    expect(clientIdUrlProblem('https://app.example.com/a/../c.json')).toMatch(/\. or \.\. path segments/);
    expect(clientIdUrlProblem('https://app.example.com/a/%2E%2E/c.json')).toMatch(/\. or \.\. path segments/);
    expect(clientIdUrlProblem('https://APP.example.com/c.json')).toMatch(/normal form: https:\/\/app\.example\.com/);
    expect(clientIdUrlProblem('https://app.example.com:443/c.json')).toMatch(/normal form/);
  });

  it("holds a document's Cache-Control max-age between one minute and one hour", () => {
    expect(cacheSeconds(undefined)).toBe(60);
    expect(cacheSeconds('no-store')).toBe(60);
    expect(cacheSeconds('public, max-age=0')).toBe(60);
    expect(cacheSeconds('public, max-age=600')).toBe(600);
    expect(cacheSeconds('max-age=31536000, immutable')).toBe(3600);
  });

  it('turns a valid document into a public third-party client, and names what is wrong with a bad one', () => {
    expect(clientFromDocument(ID, doc({ scope: 'universal-mcp-read agents-all nonsense' }))).toMatchObject({
      id: ID,
      name: 'Example',
      type: 'public',
      roles: ['third-party'],
      registeredVia: 'metadata-document',
      accountId: null,
      // agents-all is for white-label customers only; unknown scopes are dropped.
      allowedScopes: ['universal-mcp-read'],
    });
    expect(clientFromDocument(ID, doc({ client_name: undefined })).name).toBe('app.example.com');
    const refusals: [unknown, RegExp][] = [
      [[], /not a JSON object/],
      [doc({ client_id: `${ID}?x` }), /must be its own URL exactly/],
      [doc({ token_endpoint_auth_method: 'client_secret_post' }), /shared secrets are never allowed/],
      [doc({ token_endpoint_auth_method: 'private_key_jwt' }), /token_endpoint_auth_method "private_key_jwt"/],
      [doc({ client_secret: 'x' }), /must not contain client_secret/],
      [doc({ redirect_uris: [] }), /redirect_uris must be a non-empty array/],
      [doc({ redirect_uris: 'https://app.example.com/cb' }), /redirect_uris must be a non-empty array/],
      [doc({ redirect_uris: ['http://evil.example/cb'] }), /must use https/],
      [doc({ redirect_uris: ['https://app.example.com/cb#f'] }), /fragment/],
      [doc({ grant_types: ['client_credentials'] }), /grant_types may hold only/],
      [doc({ response_types: ['token'] }), /response_types may hold only code/],
      [doc({ client_name: 7 }), /client_name must be a string/],
      [doc({ client_name: 'a\u0000b' }), /NUL/],
    ];
    for (const [bad, reason] of refusals) expect(() => clientFromDocument(ID, bad)).toThrow(reason);
  });
});
