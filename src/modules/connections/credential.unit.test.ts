import { describe, expect, it } from 'vitest';
import { OAuthSettings, type ProviderDefinition } from '../providers/definition.ts';
import { withCredential } from './api-key.ts';

/** How an OAuth access token reaches the API: `Authorization: Bearer` unless the provider says otherwise. */
describe('withCredential for OAuth connections', () => {
  const oauth = (extra: Record<string, unknown> = {}) =>
    OAuthSettings.parse({
      authorizationUrl: 'https://shop.example.test/admin/oauth/authorize',
      tokenUrl: 'https://shop.example.test/admin/oauth/access_token',
      userInfo: { fields: { providerUserId: 'id' } },
      ...extra,
    });
  const req = {
    method: 'GET' as const,
    url: 'https://shop.example.test/admin/api/shop.json',
    headers: { accept: 'x' },
  };
  const oauthConnection = { authType: 'oauth' as const, vars: {} };

  it('sends a bearer token by default', () => {
    const def = { oauth: oauth() } as Pick<ProviderDefinition, 'apiKey' | 'oauth'>;
    expect(withCredential(def, oauthConnection, req, 'tok').headers).toEqual({
      accept: 'x',
      authorization: 'Bearer tok',
    });
  });

  it("sends the token in the provider's own header (Shopify's X-Shopify-Access-Token), marked for redirects", () => {
    const def = { oauth: oauth({ apiAuth: { type: 'header', name: 'X-Shopify-Access-Token' } }) } as Pick<
      ProviderDefinition,
      'apiKey' | 'oauth'
    >;
    const out = withCredential(def, oauthConnection, req, 'shpat_1');
    expect(out.headers).toEqual({ accept: 'x', 'x-shopify-access-token': 'shpat_1' });
    expect(out.credentialHeaders).toEqual(['x-shopify-access-token']);
  });

  it('sends the token with another scheme (Zoho-oauthtoken)', () => {
    const def = { oauth: oauth({ apiAuth: { type: 'bearer', scheme: 'Zoho-oauthtoken' } }) } as Pick<
      ProviderDefinition,
      'apiKey' | 'oauth'
    >;
    expect(withCredential(def, oauthConnection, req, 'z1').headers.authorization).toBe('Zoho-oauthtoken z1');
  });

  it('refuses basic authentication for OAuth tokens', () => {
    expect(() => oauth({ apiAuth: { type: 'basic', username: 'email' } })).toThrow();
  });
});
