import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A provider that takes API tokens, on loopback: "Keyhole". Every workspace lives under `/w/<workspace>`;
 * requests authenticate with HTTP Basic (e-mail address and token), as Jira and Confluence take theirs.
 * `GET /w/<ws>/api/me` is the "who am I" call; `GET /w/<ws>/api/items` lists items. A token the fake does
 * not know, or one `revoke`d, is a 401 with Keyhole's own words.
 */

export interface ApiKeyRequest {
  method: string;
  path: string;
  authorization: string | undefined;
}

export interface ApiKeyFake {
  url: string;
  /** Tokens Keyhole accepts, each with the e-mail address it belongs to. */
  tokens: Map<string, { email: string; id: string; name: string }>;
  requests: ApiKeyRequest[];
  /** Answer every request with this status (503: down), until cleared. */
  failWith: number | undefined;
  revoke(token: string): void;
  close(): Promise<void>;
}

function drain(req: IncomingMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    req.on('data', () => {});
    req.on('end', () => resolve());
    req.on('error', reject);
  });
}

export async function startApiKeyFake(): Promise<ApiKeyFake> {
  const server: Server = createServer(async (req, res) => {
    await drain(req);
    const url = new URL(req.url ?? '/', 'http://fake.invalid');
    fake.requests.push({ method: req.method ?? 'GET', path: url.pathname, authorization: req.headers.authorization });
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (fake.failWith) return json(fake.failWith, { message: 'Keyhole is down for maintenance' });
    const m = /^\/w\/([a-z0-9-]+)\/api(\/.*)$/.exec(url.pathname);
    if (!m) return json(404, { message: 'No such workspace' });
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const [email, token] = basic ? Buffer.from(basic, 'base64').toString('utf8').split(':') : [];
    const user = token ? fake.tokens.get(token) : undefined;
    if (!user || user.email !== email) return json(401, { message: 'Token invalid or revoked for this e-mail' });
    if (m[2] === '/me') return json(200, { accountId: user.id, displayName: user.name, emailAddress: user.email });
    if (m[2] === '/items') return json(200, { items: [{ id: 'k-1', title: `Item of ${m[1]}` }] });
    return json(404, { message: 'Not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake: ApiKeyFake = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tokens: new Map(),
    requests: [],
    failWith: undefined,
    revoke(token) {
      fake.tokens.delete(token);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return fake;
}

/** Keyhole's provider file: OAuth it never completes (no client is configured), and an `apiKey` block. */
export function keyholeProvider(url: string): Record<string, unknown> {
  return {
    id: 'keyhole',
    label: 'Keyhole',
    description: 'A fake provider that takes API tokens with an e-mail address, per workspace.',
    category: 'testing',
    authType: 'oauth',
    allowMultipleConnections: true,
    apiKey: {
      label: 'API token',
      help: 'Profile > Security > API tokens.',
      docsUrl: 'https://keyhole.example/settings/tokens',
      fields: [
        {
          name: 'workspace',
          label: 'Workspace',
          description: 'The name in your Keyhole address.',
          placeholder: 'acme',
          pattern: '[a-z0-9][a-z0-9-]{0,30}',
        },
        { name: 'email', label: 'E-mail address', pattern: '[^\\s@:]+@[A-Za-z0-9.-]+' },
      ],
      auth: { type: 'basic', username: 'email' },
      baseUrl: `${url}/w/{workspace}/api`,
      whoami: {
        url: `${url}/w/{workspace}/api/me`,
        fields: { providerUserId: 'accountId', email: 'emailAddress', displayName: 'displayName' },
      },
    },
    oauth: {
      authorizationUrl: `${url}/authorize`,
      tokenUrl: `${url}/token`,
      // Were it called for a pasted token, the fake would record it: it must not be.
      revocationUrl: `${url}/revoke`,
      revocation: { auth: 'bearer', format: 'none' },
      userInfo: { url: `${url}/userinfo`, fields: { providerUserId: 'id' } },
    },
    api: { baseUrl: `${url}/api` },
    tools: [
      {
        name: 'list_items',
        description: 'List the items of the connected Keyhole workspace, with ids and titles.',
        mode: 'read',
        parameters: { type: 'object', properties: {}, required: [] },
        request: { method: 'GET', path: '/items' },
        response: { listPath: 'items', fields: ['id', 'title'] },
      },
    ],
  };
}

/** A PROVIDERS_DIR holding the given provider files (no OAuth client: token connections need none). */
export function apiKeyProvidersEnv(definitions: Array<Record<string, unknown>>): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-key-providers-'));
  for (const d of definitions) writeFileSync(join(dir, `${String(d.id)}.json`), JSON.stringify(d, null, 2));
  return { PROVIDERS_DIR: dir };
}
