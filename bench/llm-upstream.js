import { createServer } from 'node:http';

/**
 * The upstream of `npm run bench -- llm-gateway`: an OpenAI-compatible chat completions server, as cheap as it
 * can be, that answers after the latency its model names: `bench-instant` at once, `bench-slow` after 200 ms
 * (as real models do), for the whole answer or, streamed, before the first chunk. Plain JavaScript, its own
 * process; prints its URL (…/v1), serves until SIGTERM. Arguments: the port (0, the default: any free one) and
 * a jitter in ms (default 0): `bench-slow` then answers after 200 ms plus or minus up to that much, uniformly.
 */
const LATENCY = { 'bench-instant': 0, 'bench-slow': 200 };
const JITTER = Number(process.argv[3] ?? 0);
const usage = { prompt_tokens: 7, completion_tokens: 1, total_tokens: 8 };

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (d) => chunks.push(d));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json"}}');
      return;
    }
    const model = String(body.model ?? '');
    const base = { id: 'chatcmpl-bench', created: Math.floor(Date.now() / 1000), model };
    const answer = () => {
      if (!body.stream) {
        const payload = JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage,
        });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
        res.end(payload);
        return;
      }
      const chunk = (delta, finish = null) =>
        `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(chunk({ role: 'assistant', content: 'o' }));
      res.write(chunk({ content: 'k' }));
      res.write(chunk({}, 'stop'));
      if (body.stream_options?.include_usage) {
        res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
      }
      res.end('data: [DONE]\n\n');
    };
    const nominal = LATENCY[model] ?? 0;
    const latency = nominal && nominal + Math.round((Math.random() * 2 - 1) * JITTER);
    if (latency) setTimeout(answer, latency);
    else answer();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/v1\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
