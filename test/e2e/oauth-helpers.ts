import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { App } from '../../src/http/types.ts';
import type { TestHarness } from '../harness.ts';

/** Helpers of the OAuth end-to-end tests: a listening app, a cookie-keeping "browser" over fetch, an MCP SDK OAuth client. */

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** An app of the harness listening on loopback, its BASE_URL being that address (issuer checks need it). */
export async function listeningApp(
  h: TestHarness,
  env: Record<string, string> = {},
): Promise<{ app: App; base: string }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const app = await h.extraApp({ BASE_URL: base, ...env });
  await app.listen({ port, host: '127.0.0.1' });
  return { app, base };
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** A browser without JavaScript: keeps cookies by name, follows nothing by itself. */
export class Browser {
  readonly cookies = new Map<string, string>();
  /** Every URL requested, in order. */
  readonly visited: string[] = [];
  constructor(readonly base: string) {}

  async request(url: string, init: { method?: string; form?: FormFields } = {}): Promise<Response> {
    const target = new URL(url, this.base);
    this.visited.push(target.pathname);
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(
        Object.entries(init.form).flatMap(([k, v]) =>
          (Array.isArray(v) ? v : [v]).map((one): [string, string] => [k, one]),
        ),
      ).toString();
    }
    const res = await fetch(target, {
      method: init.method ?? (body ? 'POST' : 'GET'),
      headers,
      body,
      redirect: 'manual',
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=Thu, 01 Jan 1970/i.test(a));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }

  /** Follows redirects until one leaves our origin (the app's redirect URI) or a page answers. */
  async follow(url: string, init: { method?: string; form?: FormFields } = {}): Promise<FollowResult> {
    let res = await this.request(url, init);
    let hops = 0;
    while (res.status >= 300 && res.status < 400) {
      const location = res.headers.get('location') ?? '';
      const next = new URL(location, this.base);
      if (next.origin !== new URL(this.base).origin || hops++ > 15) return { redirect: next.href, status: res.status };
      res = await this.request(next.href);
    }
    return { page: await res.text(), status: res.status, url: res.url };
  }
}

/** Form fields; a list repeats the field (checkboxes). */
export type FormFields = Record<string, string | string[]>;

export type FollowResult = { redirect: string; status: number } | { page: string; status: number; url: string };

export function csrfOf(page: string): string {
  const m = /name="csrf" value="([^"]+)"/.exec(page);
  if (!m?.[1]) throw new Error(`no CSRF field in page: ${page.slice(0, 400)}`);
  return m[1];
}

export function formAction(page: string, contains: string): string {
  const m = new RegExp(`<form method="post" action="([^"]*${contains}[^"]*)"`).exec(page);
  if (!m?.[1]) throw new Error(`no form with action ${contains}`);
  return m[1];
}

/**
 * Drives sign-in and consent as a person would (forms, no JavaScript) from an authorization URL to the
 * redirect back to the app. `consent: 'deny'` presses Deny; `consentForm` is what the person set on the consent
 * screen besides (the knowledge-base choice).
 */
export async function authorizeInBrowser(
  browser: Browser,
  authorizationUrl: string,
  user: { email: string; password: string },
  opts: { consent?: 'allow' | 'deny'; consentForm?: FormFields } = {},
): Promise<{ redirect: string; sawConsent: boolean; consentPage?: string }> {
  let step = await browser.follow(authorizationUrl);
  let sawConsent = false;
  let consentPage: string | undefined;
  for (let i = 0; i < 6; i++) {
    if ('redirect' in step) return { redirect: step.redirect, sawConsent, ...(consentPage ? { consentPage } : {}) };
    const page = step.page;
    if (page.includes('/login"')) {
      step = await browser.follow(formAction(page, '/login'), {
        form: { csrf: csrfOf(page), email: user.email, password: user.password },
      });
    } else if (page.includes('/confirm"')) {
      sawConsent = true;
      consentPage = page;
      const action = opts.consent === 'deny' ? formAction(page, '/abort') : formAction(page, '/confirm');
      const extra = opts.consent === 'deny' ? {} : (opts.consentForm ?? {});
      step = await browser.follow(action, { form: { csrf: csrfOf(page), ...extra } });
    } else {
      throw new Error(
        `unexpected page (${step.status}): ${page.slice(page.indexOf('<main'), page.indexOf('<main') + 600)}`,
      );
    }
  }
  throw new Error('too many steps');
}

export function decodeJwt(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const [h = '', p = ''] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(h, 'base64url').toString()),
    payload: JSON.parse(Buffer.from(p, 'base64url').toString()),
  };
}

/** Runs the whole code flow for a configured client and answers the token response. */
export async function obtainTokens(
  base: string,
  config: import('openid-client').Configuration,
  user: { email: string; password: string },
  params: Record<string, string> & { redirect_uri: string },
) {
  const client = await import('openid-client');
  const { verifier, challenge } = pkcePair();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
    ...params,
  });
  const { redirect, consentPage } = await authorizeInBrowser(new Browser(base), url.href, user);
  const tokens = await client.authorizationCodeGrant(config, new URL(redirect), {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  return { tokens, consentPage };
}

/**
 * What an MCP client keeps between the steps of its OAuth flow (in memory here), as the MCP SDK's `auth()` uses
 * it. With `clientMetadataUrl` the client names itself by that Client ID Metadata Document; without it, it
 * registers dynamically.
 */
export class MemoryOAuthClient implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  readonly redirectUrl = 'http://127.0.0.1:9/mcp-callback';
  readonly clientMetadataUrl?: string;
  constructor(
    private readonly clientName: string,
    clientMetadataUrl?: string,
  ) {
    if (clientMetadataUrl) this.clientMetadataUrl = clientMetadataUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.clientName,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}
