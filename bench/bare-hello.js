import Fastify from 'fastify';

/**
 * The baseline of the API benchmarks: a bare fastify app with one JSON route, no plugins, no logging, started
 * the way the service starts (its own process, plain JavaScript: `npm start` runs a bundle, not tsx).
 * Prints its URL; serves until SIGTERM.
 */
const app = Fastify();
app.get('/hello', async () => ({ hello: 'world' }));
await app.listen({ port: Number(process.argv[2] ?? 0), host: '127.0.0.1' });
const addr = app.server.address();
process.stdout.write(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
