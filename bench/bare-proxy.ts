import { Agent, createServer, request } from 'node:http';

/**
 * The floor of any gateway: a bare `node:http` server relaying each request's body to the upstream through a
 * keep-alive agent and piping the answer back (JSON or a stream alike). No framework, no auth, no billing, no
 * database. Run as its own process by the gateway benchmarks; prints its URL.
 */
const upstream = new URL(process.argv[2] ?? '');
const agent = new Agent({ keepAlive: true, keepAliveMsecs: 30_000, maxSockets: 256, maxFreeSockets: 256 });
const path = `${upstream.pathname.replace(/\/$/, '')}/chat/completions`;
const server = createServer((req, res) => {
  const out = request(
    {
      host: upstream.hostname,
      port: upstream.port,
      path,
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', ...lengthOf(req.headers['content-length']) },
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'] ?? 'application/json' });
      answer.pipe(res);
    },
  );
  out.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(out);
});
server.keepAliveTimeout = 60_000;

function lengthOf(length: string | undefined): Record<string, string> {
  return length ? { 'content-length': length } : {};
}

server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}\n`);
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
