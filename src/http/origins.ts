import type { Config } from '../config.ts';

/** The loopback host names a browser may use for a server on this machine. */
export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** The host name of an origin or `host[:port]` value, or '' when it does not parse. */
export function hostnameOf(value: string): string {
  try {
    return new URL(value.includes('://') ? value : `http://${value}`).hostname;
  } catch {
    return '';
  }
}

/**
 * The origins this service is served at: `BASE_URL`'s and `APP_URL`'s, and, for each of them on a loopback host,
 * its other loopback spellings at the same port (`http://localhost:8080` is also `http://127.0.0.1:8080` and
 * `http://[::1]:8080`): the address a user types and the one the listen log prints reach the same server.
 */
export function servedOrigins(config: Pick<Config, 'baseUrl' | 'appUrl'>): ReadonlySet<string> {
  const origins = new Set<string>();
  for (const raw of [config.baseUrl, config.appUrl]) {
    const url = new URL(raw);
    origins.add(url.origin);
    if (!LOOPBACK_HOSTS.has(url.hostname)) continue;
    for (const host of ['localhost', '127.0.0.1', '[::1]']) {
      const alias = new URL(url.origin);
      alias.hostname = host;
      origins.add(alias.origin);
    }
  }
  return origins;
}
