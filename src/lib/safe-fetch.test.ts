import { lookup } from 'node:dns/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkFetchableUrl, isPublicAddress, SafeFetchError, safeFetch } from './safe-fetch.ts';

/** The SSRF guard against a real loopback server: refused by default, reachable only when allowed by name. */
describe('safeFetch', () => {
  let server: Server;
  let port = 0;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits++;
      if (req.url === '/redirect-private') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      } else if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('x'.repeat(2_000));
      } else if (req.url === '/slow') {
        setTimeout(() => res.end('late'), 2_000);
      } else if (req.url === '/hop') {
        res.writeHead(301, { location: '/page' }).end();
      } else {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<p>hello</p>');
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const refused = async (url: string, reason: SafeFetchError['reason'] = 'blocked') => {
    const before = hits;
    const err = await safeFetch(url, { timeoutMs: 3_000 }).catch((e: unknown) => e);
    expect(err, url).toBeInstanceOf(SafeFetchError);
    expect((err as SafeFetchError).reason, `${url}: ${(err as Error).message}`).toBe(reason);
    // The server is up: a refusal is the guard's, not a failed connection.
    expect(hits, url).toBe(before);
  };

  it('truncate keeps the first maxBytes of a longer answer instead of failing', async () => {
    const allowHosts = [`127.0.0.1:${port}`];
    const cut = await safeFetch(`http://127.0.0.1:${port}/big`, { allowHosts, maxBytes: 100, truncate: true });
    expect(cut.status).toBe(200);
    expect(cut.body.toString()).toBe('x'.repeat(100));
    await expect(safeFetch(`http://127.0.0.1:${port}/big`, { allowHosts, maxBytes: 100 })).rejects.toMatchObject({
      reason: 'too-large',
    });
  });

  it('checkFetchableUrl refuses what a fetch would, without fetching; an allowed host passes', async () => {
    const before = hits;
    for (const url of [`http://127.0.0.1:${port}/`, `http://localhost:${port}/`, 'ftp://example.com/', 'nonsense']) {
      await expect(checkFetchableUrl(url), url).rejects.toMatchObject({ reason: 'blocked' });
    }
    await expect(checkFetchableUrl(`http://127.0.0.1:${port}/`, [`127.0.0.1:${port}`])).resolves.toBeUndefined();
    expect(hits).toBe(before);
  });

  it('refuses loopback in every spelling, private and metadata ranges, and other schemes', async () => {
    for (const host of [
      '127.0.0.1',
      '127.1',
      '2130706433',
      '0x7f000001',
      '0177.0.0.1',
      '0.0.0.0',
      '[::1]',
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '[0:0:0:0:0:ffff:7f00:1]',
      '[::ffff:0:7f00:1]', // IPv4-translated (RFC 6145), ::ffff:0:0:0/96
      '[::ffff:0:127.0.0.1]',
      'localhost',
      'app.localhost',
    ]) {
      await refused(`http://${host}:${port}/`);
    }
    for (const url of [
      'http://10.1.2.3/',
      'http://172.20.0.1/',
      'http://192.168.1.1/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
      'http://[fe80::1]/',
      'http://100.64.0.1/',
      'http://[64:ff9b::a9fe:a9fe]/',
      'http://[2002:7f00:1::]/',
      `file:///etc/passwd`,
      `ftp://127.0.0.1:${port}/`,
      `http://user:pw@example.com/`,
    ]) {
      await refused(url);
    }
  });

  it('refuses a hostname resolving to a non-public address (checked at connect time, not only in the URL)', async () => {
    // The machine's own name resolves to loopback or its private address on any host this runs on.
    const name = hostname();
    const { address } = await lookup(name);
    expect(isPublicAddress(address)).toBe(false);
    await refused(`http://${name}:${port}/`);
  });

  it('classifies addresses', () => {
    expect(isPublicAddress('93.184.216.34')).toBe(true);
    expect(isPublicAddress('2606:2800:220:1:248:1893:25c8:1946')).toBe(true);
    expect(isPublicAddress('::ffff:93.184.216.34')).toBe(true);
    expect(isPublicAddress('::ffff:10.0.0.1')).toBe(false);
    // The IPv4-translated range ::ffff:0:0:0/96 is refused whole, whatever IPv4 address it carries.
    expect(isPublicAddress('::ffff:0:7f00:1')).toBe(false);
    expect(isPublicAddress('::ffff:0:5db8:d822')).toBe(false);
    expect(isPublicAddress('0:0:0:0:ffff:0:a00:1')).toBe(false);
    expect(isPublicAddress('not an ip')).toBe(false);
  });

  it('fetches an allowed host; re-checks redirects; caps size and time', async () => {
    const allowHosts = [`127.0.0.1:${port}`];
    const ok = await safeFetch(`http://127.0.0.1:${port}/hop`, { allowHosts });
    expect(ok).toMatchObject({ status: 200, url: `http://127.0.0.1:${port}/page` });
    expect(ok.body.toString()).toBe('<p>hello</p>');
    const redirect = await safeFetch(`http://127.0.0.1:${port}/redirect-private`, { allowHosts }).catch(
      (e: unknown) => e,
    );
    expect(redirect).toMatchObject({
      reason: 'blocked',
      message:
        '169.254.169.254 is not a public address; to allow it on purpose, the operator adds 169.254.169.254:80 to SSRF_ALLOW_HOSTS',
    });
    await expect(safeFetch(`http://127.0.0.1:${port}/big`, { allowHosts, maxBytes: 1_000 })).rejects.toMatchObject({
      reason: 'too-large',
    });
    // A time left computed from performance.now() is fractional; the fetch still runs.
    const fractional = await safeFetch(`http://127.0.0.1:${port}/page`, { allowHosts, timeoutMs: 2_999.73 });
    expect(fractional.status).toBe(200);
    await expect(safeFetch(`http://127.0.0.1:${port}/slow`, { allowHosts, timeoutMs: 200 })).rejects.toMatchObject({
      reason: 'timeout',
    });
  });
});
