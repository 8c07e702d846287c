import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Config } from '../../config.ts';
import { sha256Hex } from '../../lib/ids.ts';

/**
 * Binds a connection authorization to the browser that runs it (login CSRF, issue 10). The initiate answer's
 * `authorizationUrl` is ours (`GET /api/v1/connections/authorize?state=`): opening it, once, sets a cookie
 * holding a random nonce whose hash is stored with the state, then redirects to the provider. The callback
 * completes only when the browser bringing the state back holds that cookie, so a state started by one
 * person cannot be completed in another's browser (linking the victim's provider account into the
 * attacker's account).
 */

/** Where the cookie is sent: the callback only. */
export const BINDING_COOKIE_PATH = '/api/v1/connections/callback';

/** One cookie per authorization, so two flows in one browser (two tabs) do not overwrite each other. */
export function bindingCookieName(stateHash: string): string {
  return `sb_conn_${stateHash.slice(0, 16)}`;
}

/** The first-party URL the initiate answer gives: it sets the cookie, then sends the browser to the provider. */
export function startUrl(config: Pick<Config, 'baseUrl'>, state: string): string {
  return `${config.baseUrl}/api/v1/connections/authorize?state=${encodeURIComponent(state)}`;
}

export function newBinding(): { nonce: string; hash: string } {
  const nonce = randomBytes(32).toString('base64url');
  return { nonce, hash: sha256Hex(nonce) };
}

/** Whether the cookies of this request hold the nonce the state was bound to. */
export function bindingMatches(
  stateHash: string,
  storedHash: string | null,
  cookies: Readonly<Record<string, string | undefined>>,
): boolean {
  const nonce = cookies[bindingCookieName(stateHash)];
  if (!storedHash || !nonce) return false;
  const a = Buffer.from(sha256Hex(nonce), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
