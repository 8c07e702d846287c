import { expect } from 'vitest';
import { call, type TestUser } from '../../../test/harness.ts';
import type { App } from '../../http/types.ts';

/** Helpers shared by the connections tests (not loaded by the service). */

export const APP_REDIRECT = 'http://localhost:8080/app/connections';

/**
 * The whole connect journey through the API and the fake provider's real HTTP: initiate, follow the
 * authorization URL (the fake approves with a redirect to our callback), call the callback, and answer
 * where the callback sent the browser.
 */
export async function authorize(
  app: App,
  token: string,
  body: Record<string, unknown> = { providerId: 'acme', redirectUrl: APP_REDIRECT },
  path = '/api/v1/connections/initiate',
): Promise<URL> {
  const init = await call(app, 'POST', path, { token, body });
  expect(init.statusCode, init.body).toBe(200);
  const { authorizationUrl } = init.json() as { authorizationUrl: string };
  const { providerUrl, cookie } = await openAuthorizationUrl(app, authorizationUrl);
  const approved = await fetch(providerUrl, { redirect: 'manual' });
  expect(approved.status).toBe(302);
  const toCallback = new URL(approved.headers.get('location') ?? '');
  expect(toCallback.pathname).toBe('/api/v1/connections/callback');
  const cb = await app.inject({
    method: 'GET',
    url: `${toCallback.pathname}${toCallback.search}`,
    headers: { cookie },
  });
  expect(cb.statusCode, cb.body).toBe(302);
  return new URL(String(cb.headers.location));
}

/**
 * What the user's browser does with an initiate answer's `authorizationUrl` (ours): opens it, keeps the
 * binding cookie it sets, and is sent on to the provider. Answers the provider's URL and a Cookie header.
 */
export async function openAuthorizationUrl(
  app: App,
  authorizationUrl: string,
): Promise<{ providerUrl: string; cookie: string }> {
  const url = new URL(authorizationUrl);
  expect(url.pathname).toBe('/api/v1/connections/authorize');
  const res = await app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
  expect(res.statusCode, res.body).toBe(302);
  const set = res.cookies as { name: string; value: string }[];
  expect(set).toHaveLength(1);
  const cookie = set.map((c) => `${c.name}=${c.value}`).join('; ');
  return { providerUrl: String(res.headers.location), cookie };
}

/** Connects `acme` for the user and answers the connection id. */
export async function connectAcme(app: App, user: TestUser, providerId = 'acme'): Promise<string> {
  const back = await authorize(app, user.sessionToken, { providerId, redirectUrl: APP_REDIRECT });
  const id = back.searchParams.get('connectionId');
  expect(id, back.toString()).toMatch(/^conn_/);
  return id as string;
}

export function execute(
  app: App,
  token: string,
  connectionId: string,
  toolName: string,
  args: Record<string, unknown> = {},
  providerId = 'acme',
) {
  return call(app, 'POST', `/api/v1/providers/${providerId}/tools/${toolName}/execute`, {
    token,
    body: { connectionId, arguments: args },
  });
}
