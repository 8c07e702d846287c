import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthSettings, ProviderDefinition } from '../../src/modules/providers/definition.ts';
import { setPath } from '../../src/modules/providers/json-path.ts';

/**
 * One fake that stands in for any provider of the catalog, on loopback. `pointAt` rewrites a provider file so
 * every URL it names (authorization, token, user info, revocation, API base URLs) goes to the fake, the
 * original host kept as the first path segment (`https://api.box.com/2.0` becomes
 * `http://127.0.0.1:PORT/api.box.com/2.0`). The fake then answers by what a request is: an authorization
 * request (`response_type=code`) is approved with a redirect, a token request (`grant_type`) gets tokens where
 * the provider file says its token answer keeps them, the user-info URL answers the identity at the file's
 * paths, and anything else is an API call, recorded and answered with `apiAnswer`.
 */

export interface AnyApiRequest {
  method: string;
  /** Path without the host segment, with the query. */
  path: string;
  host: string;
  authorization: string | undefined;
  /** Every header, names lower-case (a token sent in a header of its own, Figma's `x-figma-token`). */
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface AnyProviderFake {
  url: string;
  apiRequests: AnyApiRequest[];
  /** "Who am I" calls of pasted tokens, answered with the identity at the file's `apiKey.whoami` paths. */
  whoamiRequests: Array<{
    providerId: string;
    path: string;
    search: string;
    headers: Record<string, string | string[] | undefined>;
  }>;
  /** The JSON the next API calls answer. */
  apiAnswer: unknown;
  pointAt(def: ProviderDefinition): ProviderDefinition;
  close(): Promise<void>;
}

const firstPath = (p: string | string[]) => (Array.isArray(p) ? (p[0] as string) : p);

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startAnyProviderFake(): Promise<AnyProviderFake> {
  // Per rewritten provider: its user-info path and where its token and identity fields go.
  const userInfo = new Map<string, Set<ProviderDefinition>>();
  const tokenShapes = new Map<string, Set<ProviderDefinition>>();
  const issued = new Map<string, ProviderDefinition>();
  // Token providers' "who am I" (apiKey.whoami): the path with `{field}` as one segment, and the body if any.
  const whoamis: Array<{ path: RegExp; method: string; body: string | undefined; def: ProviderDefinition }> = [];
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake.invalid');
    const body = await readBody(req);
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (req.method === 'GET' && url.searchParams.get('response_type') === 'code') {
      const back = new URL(url.searchParams.get('redirect_uri') ?? '');
      back.searchParams.set('code', randomBytes(8).toString('hex'));
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      res.writeHead(302, { location: back.toString() });
      res.end();
      return;
    }
    // Suites share token and user-info URLs (Google, Microsoft): the client id says which provider asks,
    // and the access token it gets says who asks for user info.
    const clientId = clientIdOf(req, body);
    const tokenDef = [...(tokenShapes.get(url.pathname) ?? [])].find((d) => `client-${d.id}` === clientId);
    if (req.method === 'POST' && tokenDef?.oauth && /grant_type/.test(body)) {
      const answer: Record<string, unknown> = {};
      const tr = tokenDef.oauth.tokenResponse;
      const accessToken = `fake-access-${randomBytes(6).toString('hex')}`;
      issued.set(accessToken, tokenDef);
      setPath(answer, firstPath(tr.accessToken), accessToken);
      setPath(answer, firstPath(tr.refreshToken), `fake-refresh-${randomBytes(6).toString('hex')}`);
      setPath(answer, firstPath(tr.expiresIn), 3600);
      if (!tokenDef.oauth.userInfo.url) setIdentity(answer, tokenDef);
      json(200, answer);
      return;
    }
    const whoami = whoamis.find(
      (w) => w.method === req.method && w.path.test(url.pathname) && (w.body === undefined || w.body === body),
    );
    if (whoami?.def.apiKey) {
      fake.whoamiRequests.push({
        providerId: whoami.def.id,
        path: url.pathname,
        search: url.search,
        headers: { ...req.headers },
      });
      const answer: Record<string, unknown> = {};
      setIdentity(answer, whoami.def, whoami.def.apiKey.whoami.fields);
      json(200, asList(answer));
      return;
    }
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    // A token the fake did not issue (pasted as bearerToken) is taken when one provider owns the URL.
    const owners = [...(userInfo.get(url.pathname) ?? [])];
    // User info is asked with `Bearer`; a pasted token sent another way (`Bot`, a bare key) is an API call.
    const infoDef =
      owners.length && bearer ? (issued.get(bearer) ?? (owners.length === 1 ? owners[0] : undefined)) : undefined;
    if (infoDef) {
      const answer: Record<string, unknown> = {};
      setIdentity(answer, infoDef);
      json(200, asList(answer));
      return;
    }
    const [, host = '', ...rest] = url.pathname.split('/');
    fake.apiRequests.push({
      method: req.method ?? 'GET',
      host,
      path: `/${rest.join('/')}${url.search}`,
      authorization: req.headers.authorization,
      headers: { ...req.headers },
      body,
    });
    json(200, fake.apiAnswer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const rewrite = (u: string) => u.replace(/^https?:\/\/([^/]+)/, (_m, host: string) => `${origin}/${host}`);

  const fake: AnyProviderFake = {
    url: origin,
    apiRequests: [],
    whoamiRequests: [],
    apiAnswer: {},
    pointAt(def) {
      const copy = structuredClone(def);
      const o = copy.oauth;
      if (o) {
        o.authorizationUrl = rewrite(o.authorizationUrl);
        o.tokenUrl = rewrite(o.tokenUrl);
        if (o.revocationUrl) o.revocationUrl = rewrite(o.revocationUrl);
        // A user-info URL on a host the token answer names (Pipedrive's api_domain) is not the fake's to answer.
        if (o.userInfo.url?.startsWith('http')) {
          o.userInfo.url = rewrite(o.userInfo.url);
          const infoPath = new URL(o.userInfo.url).pathname;
          userInfo.set(infoPath, (userInfo.get(infoPath) ?? new Set()).add(copy));
        }
        const tokenPath = new URL(o.tokenUrl).pathname;
        tokenShapes.set(tokenPath, (tokenShapes.get(tokenPath) ?? new Set()).add(copy));
      }
      if (copy.apiKey) {
        copy.apiKey.whoami.url = rewrite(copy.apiKey.whoami.url);
        if (copy.apiKey.baseUrl) copy.apiKey.baseUrl = rewrite(copy.apiKey.baseUrl);
        // The path only: a who-am-I may carry a query (`?limit=1`).
        const parts = copy.apiKey.whoami.url
          .replace(/^https?:\/\/[^/]+/, '')
          .replace(/\?.*$/, '')
          .split(/\{[^}]+\}/);
        whoamis.push({
          path: new RegExp(`^${parts.map((p) => p.replace(/[.*+?^$()|[\]\\]/g, '\\$&')).join('[^/]+')}$`),
          method: copy.apiKey.whoami.method,
          body: copy.apiKey.whoami.body === undefined ? undefined : JSON.stringify(copy.apiKey.whoami.body),
          def: copy,
        });
      }
      copy.api.baseUrl = rewrite(copy.api.baseUrl);
      for (const tool of copy.tools) if (tool.request.baseUrl) tool.request.baseUrl = rewrite(tool.request.baseUrl);
      return copy;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return fake;
}

/** The client id of a token request: in the form body, or in HTTP Basic. */
function clientIdOf(req: IncomingMessage, body: string): string | undefined {
  const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (basic) return decodeURIComponent(Buffer.from(basic, 'base64').toString('utf8').split(':')[0] ?? '');
  const form = new URLSearchParams(body).get('client_id');
  if (form) return form;
  try {
    return (JSON.parse(body) as { client_id?: string }).client_id;
  } catch {
    return undefined;
  }
}

/** The identity at the provider file's user-info paths (the first path of each list). */
function setIdentity(
  answer: Record<string, unknown>,
  def: ProviderDefinition,
  given?: OAuthSettings['userInfo']['fields'],
): void {
  const f = given ?? def.oauth?.userInfo.fields ?? def.apiKey?.whoami.fields;
  if (!f) return;
  if (f.email) setAt(answer, firstPath(f.email), `someone@${def.id}.example`);
  if (f.displayName) setAt(answer, firstPath(f.displayName), `Someone at ${def.label}`);
  // Last: where the id is also the e-mail address or the name (ConfigCat, Clerk), the id is what is asked for.
  setAt(answer, firstPath(f.providerUserId), `user-${def.id}`);
}

/** An identity at `[0].id` (Supabase's organizations) is answered as the list it is. */
function asList(answer: Record<string, unknown>): unknown {
  const keys = Object.keys(answer);
  return keys.length && keys.every((k) => /^\d+$/.test(k)) ? keys.map((k) => answer[k]) : answer;
}

/** `setPath`, also through list indexes (Klaviyo's `data[0].id`): the lists are made as needed. */
function setAt(answer: Record<string, unknown>, path: string, value: unknown): void {
  if (!/\[\d+\]/.test(path)) {
    setPath(answer, path, value);
    return;
  }
  const segs = path.match(/[^.[\]]+|\[\d+\]/g) ?? [];
  let node: Record<string, unknown> | unknown[] = answer;
  segs.forEach((seg, i) => {
    const key: string | number = seg.startsWith('[') ? Number(seg.slice(1, -1)) : seg;
    const next = segs[i + 1];
    const container = node as Record<string | number, unknown>;
    if (next === undefined) container[key] = value;
    else {
      container[key] ??= next.startsWith('[') ? [] : {};
      node = container[key] as Record<string, unknown> | unknown[];
    }
  });
}
