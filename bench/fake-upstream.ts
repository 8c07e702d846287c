import { startFakeLlm } from '../test/fakes/llm-upstream.ts';

/** The fake OpenAI-compatible upstream as its own process, for benchmarks: prints its URL, serves until killed. */
const fake = await startFakeLlm();
process.stdout.write(`${fake.url}\n`);
// Unscripted requests answer "ok"; keep no history so memory stays flat under load.
setInterval(() => {
  fake.requests.length = 0;
}, 1000).unref();
process.on('SIGTERM', () => void fake.close().then(() => process.exit(0)));
