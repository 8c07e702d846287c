import Fastify from 'fastify';
import { Agent, request } from 'undici';

/**
 * The floor of any gateway: a bare fastify route relaying the body to the upstream and the answer back, no
 * auth, no billing. Run as its own process by bench/llm-gateway.ts; prints its URL.
 */
const upstream = process.argv[2] ?? '';
const agent = new Agent({ keepAliveTimeout: 30_000, connections: 256 });
const app = Fastify();
app.post('/chat/completions', async (req, reply) => {
  const res = await request(`${upstream}/chat/completions`, {
    method: 'POST',
    body: JSON.stringify(req.body),
    headers: { 'content-type': 'application/json' },
    dispatcher: agent,
  });
  reply.code(res.statusCode).header('content-type', String(res.headers['content-type'] ?? 'application/json'));
  return reply.send(res.body);
});
await app.listen({ port: 0, host: '127.0.0.1' });
const addr = app.server.address();
process.stdout.write(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
