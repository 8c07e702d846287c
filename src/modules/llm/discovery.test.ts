import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { createHarness, createUser, type TestHarness } from '../../../test/harness.ts';
import { DEFAULT_CUSTOM_RATES } from '../../llm-upstreams/catalog.ts';

/** `LLM_BASE_URL` without `LLM_MODELS`: the models come from the upstream's own `GET /models`. */
describe('LLM model discovery', () => {
  let fake: FakeLlm;
  let h: TestHarness;
  let base: string;

  beforeAll(async () => {
    fake = await startFakeLlm();
    h = await createHarness({ LLM_BASE_URL: fake.url });
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await h.close();
    await fake.close();
  });

  it('lists the upstream models at the default rates and answers with them through the openai client', async () => {
    const user = await createUser(h.app);
    const client = new OpenAI({ baseURL: `${base}/api/v1`, apiKey: await user.pat(['llm-all']), maxRetries: 0 });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['fake-model']);
    expect(h.app.deps.llm.catalog.get('fake-model')).toMatchObject({ upstream: 'custom', ...DEFAULT_CUSTOM_RATES });
    const answer = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(answer.choices[0]?.message.content).toBe('ok');
    expect(fake.requests.at(-1)?.model).toBe('fake-model');
  });

  it('starts when the listing fails, says why on an unknown model, and lists again on a later use', async () => {
    // An upstream whose /models fails the first time, then works.
    let calls = 0;
    const flaky = createServer((_req, res) => {
      calls++;
      res.setHeader('content-type', 'application/json');
      if (calls === 1) {
        res.statusCode = 500;
        return res.end('{"error":{"message":"down"}}');
      }
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'late-model' }, { id: 'bad id' }] }));
    });
    await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(flaky.address() as AddressInfo).port}/v1`;
    const app = await h.extraApp({ LLM_BASE_URL: url });
    try {
      const llm = app.deps.llm;
      expect(calls).toBe(1);
      expect(llm.catalog.available).toEqual([]);
      const problem = llm.discoveryProblem();
      expect(problem).toContain(`GET ${url}/models answered 500`);
      expect(calls).toBe(1); // not before DISCOVERY_RETRY_MS
      const user = await createUser(app);
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/chat/completions',
        headers: { authorization: `Bearer ${await user.pat(['llm-all'])}` },
        payload: { model: 'late-model', messages: [{ role: 'user', content: 'hi' }] },
      });
      expect(res.statusCode).toBe(422);
      expect(res.json().message).toBe(`Unknown model "late-model". Available models: none (${problem})`);
      // Past the retry delay, the next use lists again; `bad id` cannot be named in LLM_MODELS and is skipped.
      const realNow = Date.now;
      Date.now = () => realNow() + 31_000;
      try {
        llm.discoveryProblem();
      } finally {
        Date.now = realNow;
      }
      await expect.poll(() => llm.catalog.available.map((m) => m.id)).toEqual(['late-model']);
      expect(calls).toBe(2);
      expect(llm.discoveryProblem()).toBeUndefined();
      expect(llm.catalog.defaultModel?.id).toBe('late-model');
    } finally {
      await new Promise((r) => flaky.close(r));
    }
  });
});
