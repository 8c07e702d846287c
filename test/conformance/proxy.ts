import { createServer, request } from 'node:http';

/**
 * The conformance suite has no header option: this loopback proxy adds `Authorization: Bearer <token>` to
 * every request and relays it to the server. Usage: proxy.ts <listenPort> <targetOrigin> <token>
 */
const [port = '0', target = '', token = ''] = process.argv.slice(2);
const to = new URL(target);
const server = createServer((req, res) => {
  const upstream = request(
    {
      host: to.hostname,
      port: to.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, authorization: `Bearer ${token}` },
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', () => {
    res.writeHead(502);
    res.end();
  });
  req.pipe(upstream);
});
server.listen(Number(port), '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`${typeof addr === 'object' && addr ? addr.port : port}\n`);
});
