import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent, request } from 'undici';

/**
 * The one way to fetch a URL a user gave us (knowledge sources, custom tool code, webhooks): the SSRF guard of
 * ARCHITECTURE.md. Only http(s); the host is resolved once per connection and every address it resolves to
 * must be public, and the connection goes to that checked address (no second lookup an attacker's DNS could
 * answer differently); IP literals in any spelling are checked the same way; redirects are followed by hand
 * and each target checked again; the body is capped in bytes and the whole fetch in time.
 */

export class SafeFetchError extends Error {
  constructor(
    message: string,
    /** `blocked` (the guard refused), `too-large`, `timeout`, `redirects`, `network`. */
    readonly reason: 'blocked' | 'too-large' | 'timeout' | 'redirects' | 'network',
  ) {
    super(message);
  }
}

const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this" network; 0.0.0.0 reaches the local host
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local, AWS's IPv6 metadata fd00:ec2::254 among them
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['2001:db8::', 32], // documentation
  ['100::', 64], // discard
  ['::ffff:0:0:0', 96], // IPv4-translated (RFC 6145, 2765), 0:0:0:0:ffff:0:a.b.c.d: a translator may reach it
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv6');
}

/** The IPv4 address an IPv6 address carries (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64, 6to4), if any. */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const groups = expandIpv6(lower);
  if (!groups) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups;
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && (g5 === 0xffff || g5 === 0))
    return v4(g6 ?? 0, g7 ?? 0);
  if (g0 === 0x64 && g1 === 0xff9b) return v4(g6 ?? 0, g7 ?? 0); // NAT64
  if (g0 === 0x2002) return v4(g1 ?? 0, g2 ?? 0); // 6to4
  return undefined;
}

function expandIpv6(address: string): number[] | undefined {
  if (isIP(address) !== 6) return undefined;
  let text = address;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4?.[1]) {
    const [a, b, c, d] = v4[1].split('.').map(Number);
    text = text.replace(
      v4[1],
      `${(((a ?? 0) << 8) | (b ?? 0)).toString(16)}:${(((c ?? 0) << 8) | (d ?? 0)).toString(16)}`,
    );
  }
  const [head, tail] = text.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined ? (tail ? tail.split(':') : []) : [];
  const missing = 8 - h.length - t.length;
  const all = tail !== undefined ? [...h, ...Array(missing).fill('0'), ...t] : h;
  return all.length === 8 ? all.map((g) => Number.parseInt(g || '0', 16)) : undefined;
}

/** Whether an IP address may be connected to: public unicast only. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 4) return !BLOCKED.check(address, 'ipv4');
  const v4 = embeddedIpv4(address);
  if (v4 !== undefined) return !BLOCKED.check(v4, 'ipv4');
  return !BLOCKED.check(address, 'ipv6');
}

export interface SafeFetchOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';
  headers?: Record<string, string>;
  body?: string;
  /** Largest body read (default 5 MB); a longer one fails with `too-large`, or is cut there with `truncate`. */
  maxBytes?: number;
  /** Keep the first `maxBytes` of a longer body instead of failing (a webhook receiver's answer, only logged). */
  truncate?: boolean;
  /** For the whole fetch, redirects included (default 15 s). */
  timeoutMs?: number;
  /** Redirects followed, each target checked again (default 5). */
  maxRedirects?: number;
  /** `host:port` pairs reachable even on private addresses (operators' own services; tests' loopback fakes). */
  allowHosts?: readonly string[];
  /** PEM of a CA trusted besides the system's, for allow-listed hosts only (a test's self-signed server). */
  ca?: string;
  signal?: AbortSignal;
}

export interface SafeResponse {
  status: number;
  /** The URL that answered, after redirects. */
  url: string;
  headers: Record<string, string>;
  body: Buffer;
}

function hostKey(url: URL): string {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `${url.hostname.replace(/^\[|\]$/g, '')}:${port}`;
}

/** A dispatcher whose every connection resolves the host itself and refuses non-public addresses. */
function guardedAgent(allowed: boolean, ca?: string): Agent {
  return new Agent({
    connect: {
      ...(ca ? { ca } : {}),
      lookup(hostname, options, callback) {
        dnsLookup(hostname, { all: true, family: options.family ?? 0 }, (err, addresses: LookupAddress[]) => {
          if (err) return callback(err, '', 4);
          const usable = allowed ? addresses : addresses.filter((a) => isPublicAddress(a.address));
          if (usable.length === 0 || (!allowed && usable.length !== addresses.length)) {
            return callback(
              new SafeFetchError(`${hostname} resolves to an address that may not be fetched`, 'blocked'),
              '',
              4,
            );
          }
          const first = usable[0];
          // Node asks for one address or for all of them, depending on its own options.
          if ((options as { all?: boolean }).all)
            return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
          return callback(null, first?.address ?? '', first?.family ?? 4);
        });
      },
    },
  });
}

const PUBLIC_AGENT = guardedAgent(false);
const ALLOWED_AGENT = guardedAgent(true);
/** Allow-listed hosts reached with one more trusted CA (tests' self-signed servers), by CA. */
const CA_AGENTS = new Map<string, Agent>();

function allowedAgent(ca: string | undefined): Agent {
  if (!ca) return ALLOWED_AGENT;
  let agent = CA_AGENTS.get(ca);
  if (!agent) {
    agent = guardedAgent(true, ca);
    CA_AGENTS.set(ca, agent);
  }
  return agent;
}

/**
 * A refusal of a non-public address, saying how an operator reaches a service of their own on purpose (a local
 * model server, a wiki on the office network): `SSRF_ALLOW_HOSTS` lists the `host:port` pairs that may be fetched.
 */
function notPublic(what: string, url: URL): SafeFetchError {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return new SafeFetchError(
    `${what}; to allow it on purpose, the operator adds ${url.hostname}:${port} to SSRF_ALLOW_HOSTS`,
    'blocked',
  );
}

function checkUrl(url: URL, allowHosts: readonly string[]): boolean {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SafeFetchError(`Only http and https URLs may be fetched, not ${url.protocol}`, 'blocked');
  }
  if (url.username || url.password) throw new SafeFetchError('URLs with credentials may not be fetched', 'blocked');
  const allowed = allowHosts.includes(hostKey(url));
  // WHATWG URL parsing already turned decimal, hex and short IPv4 spellings (2130706433, 0x7f.1) into dotted form.
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowed && isIP(host) && !isPublicAddress(host)) throw notPublic(`${host} is not a public address`, url);
  if (!allowed && (host === 'localhost' || host.endsWith('.localhost'))) {
    throw notPublic(`${host} is not a public address`, url);
  }
  return allowed;
}

/**
 * Checks a URL a user registers now, before anything fetches it (a webhook endpoint): what `safeFetch` would
 * refuse outright (scheme, credentials, a non-public literal or `localhost`), and a host whose addresses, as
 * DNS answers now, are not all public. A host that does not resolve passes: fetching it checks again.
 */
export async function checkFetchableUrl(input: string, allowHosts: readonly string[] = []): Promise<void> {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new SafeFetchError('Not a valid URL', 'blocked');
  }
  if (checkUrl(url, allowHosts)) return;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return;
  const addresses = await new Promise<LookupAddress[]>((resolve) =>
    dnsLookup(host, { all: true }, (err, found) => resolve(err ? [] : found)),
  );
  if (addresses.some((a) => !isPublicAddress(a.address))) {
    throw notPublic(`${host} resolves to an address that may not be fetched`, url);
  }
}

/** Fetches a user-given URL through the guard; see the module comment. */
export async function safeFetch(input: string, opts: SafeFetchOptions = {}): Promise<SafeResponse> {
  const maxBytes = opts.maxBytes ?? 5 * 1024 * 1024;
  const allowHosts = opts.allowHosts ?? [];
  const signal = AbortSignal.any([
    // AbortSignal.timeout refuses a fractional or negative delay with a RangeError.
    AbortSignal.timeout(Math.max(1, Math.ceil(opts.timeoutMs ?? 15_000))),
    ...(opts.signal ? [opts.signal] : []),
  ]);
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new SafeFetchError('Not a valid URL', 'blocked');
  }
  let method = opts.method ?? 'GET';
  let body = opts.body;
  for (let hop = 0; ; hop++) {
    const allowed = checkUrl(url, allowHosts);
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(url, {
        method,
        headers: { 'user-agent': 'Switchboard/1 (+fetcher)', ...opts.headers },
        ...(body !== undefined ? { body } : {}),
        signal,
        dispatcher: allowed ? allowedAgent(opts.ca) : PUBLIC_AGENT,
      });
    } catch (err) {
      throw toFetchError(err, signal);
    }
    const location = res.headers.location;
    if (res.statusCode >= 300 && res.statusCode < 400 && typeof location === 'string') {
      await res.body.dump();
      if (hop >= (opts.maxRedirects ?? 5)) throw new SafeFetchError('Too many redirects', 'redirects');
      url = new URL(location, url);
      if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
      }
      continue;
    }
    const declared = Number(res.headers['content-length'] ?? 0);
    if (declared > maxBytes && !opts.truncate) {
      await res.body.dump().catch(() => {});
      throw new SafeFetchError(`The answer is larger than ${maxBytes} bytes`, 'too-large');
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > maxBytes && opts.truncate) {
          chunks.push((chunk as Buffer).subarray(0, (chunk as Buffer).length - (size - maxBytes)));
          res.body.destroy();
          break;
        }
        if (size > maxBytes) {
          res.body.destroy();
          throw new SafeFetchError(`The answer is larger than ${maxBytes} bytes`, 'too-large');
        }
        chunks.push(chunk as Buffer);
      }
    } catch (err) {
      if (err instanceof SafeFetchError) throw err;
      throw toFetchError(err, signal);
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers))
      if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    return { status: res.statusCode, url: url.toString(), headers, body: Buffer.concat(chunks) };
  }
}

function toFetchError(err: unknown, signal: AbortSignal): SafeFetchError {
  if (err instanceof SafeFetchError) return err;
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof SafeFetchError) return cause;
  if (signal.aborted) return new SafeFetchError('The fetch took too long', 'timeout');
  return new SafeFetchError(`The fetch failed: ${(err as Error).message}`, 'network');
}
