import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Stand-ins for the internet in sandbox tests: `origin` echoes what it receives as JSON (the sandbox may reach
 * it only because its host:port is in allowHosts, as SSRF_ALLOW_HOSTS would list it) and redirects
 * `/redirect-home` to `internalPort`, another loopback server holding "internal secret" that every sandbox
 * fetch must be refused.
 */
export interface FakeWeb {
  origin: string;
  allowHost: string;
  internalPort: number;
  /** URLs every sandbox fetch must refuse: loopback in every spelling, private ranges, metadata, file:. */
  refusedUrls: string[];
  close(): void;
}

const listen = (s: Server) =>
  new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port)));

export async function startFakeWeb(): Promise<FakeWeb> {
  let internalPort = 0;
  const server = createServer((req, res) => {
    if (req.url === '/redirect-home') {
      res.writeHead(302, { location: `http://127.0.0.1:${internalPort}/secret` }).end();
      return;
    }
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-fake': 'yes' });
      res.end(JSON.stringify({ method: req.method, url: req.url, body, auth: req.headers.authorization ?? null }));
    });
  });
  const internal = createServer((_req, res) => res.end('internal secret'));
  const port = await listen(server);
  internalPort = await listen(internal);
  const origin = `http://127.0.0.1:${port}`;
  const p = internalPort;
  return {
    origin,
    allowHost: `127.0.0.1:${port}`,
    internalPort,
    refusedUrls: [
      `http://127.0.0.1:${p}/`,
      `http://127.1:${p}/`,
      `http://0x7f.1:${p}/`,
      `http://0x7f000001:${p}/`,
      `http://2130706433:${p}/`,
      `http://017700000001:${p}/`,
      `http://127.0.0.2:${p}/`,
      `http://[::1]:${p}/`,
      `http://[::ffff:127.0.0.1]:${p}/`,
      `http://[::ffff:7f00:1]:${p}/`,
      `http://[::ffff:0:7f00:1]:${p}/`,
      `http://[0:0:0:0:0:0:0:1]:${p}/`,
      `http://localhost:${p}/`,
      `http://0.0.0.0:${p}/`,
      'http://10.1.2.3/',
      'http://172.16.0.1/',
      'http://192.168.1.1/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
      'file:///etc/passwd',
      `${origin}/redirect-home`,
    ],
    close() {
      server.close();
      internal.close();
    },
  };
}
