import { request as httpRequest, type IncomingMessage } from 'node:http';
import { eq, sql } from 'drizzle-orm';
import fc from 'fast-check';
import OpenAI from 'openai';
import { beforeEach, describe, expect, it } from 'vitest';
import type { FakeLlm } from '../../../test/fakes/llm-upstream.ts';
import {
  call,
  createUser,
  fakeLlmSuite,
  settleBills,
  settledBalance,
  type TestHarness,
  type TestUser,
} from '../../../test/harness.ts';
import { creditsComment } from '../../../test/sse.ts';
import { accounts, creditTransactions } from '../../db/schema/index.ts';

// 1 credit per prompt token, 2 per completion token: costs are easy to read in assertions.
const MODELS = 'fake-model=1000000/2000000,cheap-model=1000/1000';

describe('LLM gateway', () => {
  let fake: FakeLlm;
  let h: TestHarness;
  let base: string;
  let user: TestUser;
  let pat: string;
  let client: OpenAI;
  const extraApps: Array<TestHarness['app']> = [];

  fakeLlmSuite(
    (s) => ({ h, llm: fake, base } = s),
    { LLM_API_KEY: 'upstream-secret', LLM_MODELS: MODELS },
    { listen: true },
  );
  const extra = async (env: Record<string, string>) => {
    const app = await h.extraApp(env);
    extraApps.push(app);
    return app;
  };
  beforeEach(async () => {
    user = await createUser(h.app);
    pat = await user.pat(['llm-all', 'account']);
    client = new OpenAI({ baseURL: `${base}/api/v1`, apiKey: pat, maxRetries: 0 });
  });

  const db = () => h.database.db;
  // Bills settle just after the answer: wait for that, and for leased credits to go back, before reading.
  const settled = () => settleBills([h.app, ...extraApps]);
  const balance = (id = user.account.id) => settledBalance(h, id, [h.app, ...extraApps]);
  const llmRows = async (id = user.account.id) => {
    await settled();
    return db()
      .select()
      .from(creditTransactions)
      .where(sql`${creditTransactions.accountId} = ${id} AND ${creditTransactions.type} = 'llm'`);
  };

  it('answers a plain completion through the openai client and bills it exactly once', async () => {
    fake.enqueue({ content: 'Hello there friend', usage: { prompt: 10, completion: 3 } });
    const { data, response } = await client.chat.completions
      .create({
        model: 'fake-model',
        messages: [{ role: 'user', content: 'hi' }],
        temperature: 0.2,
        seed: 7,
        top_p: 0.9,
        max_tokens: 50,
        stop: ['END'],
        response_format: { type: 'text' },
      })
      .withResponse();
    expect(data.object).toBe('chat.completion');
    expect(data.model).toBe('fake-model');
    expect(data.choices[0]?.message.content).toBe('Hello there friend');
    expect(data.usage).toEqual({ prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 });
    expect(response.headers.get('x-credits-consumed')).toBe('16');
    expect(response.headers.get('x-credits-remaining')).toBe('99984');
    expect(await balance()).toBe(99984);
    const rows = await llmRows();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      amount: -16,
      balanceAfter: 99984,
      model: 'fake-model',
      promptTokens: 10,
      completionTokens: 3,
    });
    const upstreamReq = fake.requests.at(-1);
    expect(upstreamReq?.headers.authorization).toBe('Bearer upstream-secret');
    expect(upstreamReq).toMatchObject({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 0.2,
      seed: 7,
      top_p: 0.9,
      max_tokens: 50,
      stop: ['END'],
      response_format: { type: 'text' },
      stream: false,
    });
    expect(JSON.stringify(upstreamReq)).not.toContain(pat);
  });

  it('streams chunks then [DONE], and bills the usage the upstream reported', async () => {
    fake.enqueue({ content: 'one two three four', usage: { prompt: 5, completion: 4 } });
    const stream = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'count' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.model).toBe('fake-model');
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toBe('one two three four');
    expect(fake.requests.at(-1)?.stream_options).toEqual({ include_usage: true });
    expect(await balance()).toBe(100000 - 13);
    expect(await llmRows()).toHaveLength(1);
  });

  it('ends a stream with the credits comment and [DONE]; usage is forwarded only when asked for', async () => {
    fake.enqueue({ content: 'a b', usage: { prompt: 2, completion: 2 } });
    const res = await fetch(`${base}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${pat}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }], stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('x-credits-remaining')).toBe('100000');
    const body = await res.text();
    expect(body.endsWith(': x-credits-consumed=6; x-credits-remaining=99994\n\ndata: [DONE]\n\n')).toBe(true);
    expect(body).not.toContain('"usage"');

    fake.enqueue({ content: 'a b', usage: { prompt: 2, completion: 2 } });
    const withUsage = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const usages = [];
    for await (const chunk of withUsage) if (chunk.usage) usages.push(chunk.usage);
    expect(usages).toEqual([{ prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 }]);
  });

  it('ends a stream that breaks off with what came, the fault, the figures (comment and trailers) and [DONE], in one body', async () => {
    fake.enqueue({ content: 'one two three', breakAfter: 2, chunkDelayMs: 20, usage: { prompt: 2, completion: 3 } });
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest(`${base}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${pat}`, 'content-type': 'application/json' },
      });
      req.on('response', resolve).on('error', reject);
      req.end(JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }], stream: true }));
    });
    let body = '';
    for await (const piece of res) body += String(piece);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    expect(res.headers['x-ratelimit-limit']).toBe('100000'); // the harness's RATE_LIMIT_LLM
    expect(res.headers.trailer).toBe('X-Credits-Consumed, X-Credits-Remaining');
    const events = body.split('\n\n').filter(Boolean);
    expect(events.map((e) => (e.startsWith('data: {') ? Object.keys(JSON.parse(e.slice(6))).join() : e))).toEqual([
      'id,created,model,object,choices',
      'id,created,model,object,choices',
      'error',
      expect.stringMatching(/^: x-credits-consumed=\d+; x-credits-remaining=\d+$/),
      'data: [DONE]',
    ]);
    expect(JSON.parse(events[1]?.slice(6) ?? '').choices[0].delta.content).toBe('one');
    expect(JSON.parse(events[2]?.slice(6) ?? '')).toEqual({
      error: { message: 'The model provider stream broke off', type: 'BadGatewayError', code: 502 },
    });
    // The figures of the comment and of the trailers are the same: the prompt and the one word generated.
    const { consumed, remaining } = creditsComment(body) ?? { consumed: 0, remaining: 0 };
    expect(res.trailers).toEqual({ 'x-credits-consumed': String(consumed), 'x-credits-remaining': String(remaining) });
    expect(consumed).toBeGreaterThan(0);
    expect(await balance()).toBe(100000 - consumed);
  });

  it('passes tool calls through, plain and streamed', async () => {
    const tools = [
      {
        type: 'function' as const,
        function: {
          name: 'get_weather',
          description: 'Weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ];
    fake.enqueue({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] });
    const plain = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'weather?' }],
      tools,
      tool_choice: 'auto',
    });
    expect(plain.choices[0]?.finish_reason).toBe('tool_calls');
    expect(plain.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      type: 'function',
      function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    });
    expect(fake.requests.at(-1)).toMatchObject({ tools, tool_choice: 'auto' });

    fake.enqueue({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] });
    const stream = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'weather?' }],
      tools,
      stream: true,
    });
    let name = '';
    let args = '';
    for await (const chunk of stream) {
      for (const c of chunk.choices[0]?.delta.tool_calls ?? []) {
        name += c.function?.name ?? '';
        args += c.function?.arguments ?? '';
      }
    }
    expect(name).toBe('get_weather');
    expect(JSON.parse(args)).toEqual({ city: 'Oslo' });
  });

  it('lists models in the OpenAI list shape with prices and capabilities', async () => {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m);
    expect(ids.map((m) => m.id)).toEqual(['fake-model', 'cheap-model']);
    expect(ids[0]).toMatchObject({
      object: 'model',
      owned_by: 'custom',
      context_window: 128000,
      pricing: { prompt: 1000000, completion: 2000000, unit: 'credits_per_million_tokens' },
      capabilities: { tools: true, streaming: true },
    });
  });

  it('answers 402 at a zero balance, and 422 listing the models for an unknown model', async () => {
    await db().update(accounts).set({ creditBalance: 0 }).where(eq(accounts.id, user.account.id));
    const broke = await client.chat.completions
      .create({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(broke).toBeInstanceOf(OpenAI.APIError);
    expect((broke as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    // The SDK builds its message from the body's `error.message` and exposes `error.type`: our §7 name.
    expect((broke as InstanceType<typeof OpenAI.APIError>).type).toBe('CreditsExhaustedError');
    expect((broke as Error).message).toMatch(/^402 .*credit/i);

    const other = await createUser(h.app);
    const c2 = new OpenAI({ baseURL: `${base}/api/v1`, apiKey: await other.pat(['llm-all']), maxRetries: 0 });
    const unknown = await c2.chat.completions
      .create({ model: 'gpt-9', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((unknown as InstanceType<typeof OpenAI.APIError>).type).toBe('ValidationError');
    expect((unknown as Error).message).toBe('422 Unknown model "gpt-9". Available models: fake-model, cheap-model');
    const raw = await call(h.app, 'POST', '/api/v1/chat/completions', {
      token: await other.pat(['llm-all']),
      body: { model: 'gpt-9', messages: [{ role: 'user', content: 'hi' }] },
    });
    // OpenAI's error object on the OpenAI-compatible routes; §7's message and statusCode beside it.
    expect(raw.json()).toEqual({
      error: {
        message: 'Unknown model "gpt-9". Available models: fake-model, cheap-model',
        type: 'ValidationError',
        param: null,
        code: null,
      },
      message: 'Unknown model "gpt-9". Available models: fake-model, cheap-model',
      statusCode: 422,
      details: [{ field: 'body.model', message: 'must be one of: fake-model, cheap-model' }],
    });
  });

  it('maps upstream faults: 429 keeps Retry-After, 5xx is 502, and a failed call costs nothing', async () => {
    fake.enqueue({ status: 429, headers: { 'retry-after': '17' } });
    const limited = await client.chat.completions
      .create({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toBe('17');
    expect((limited as InstanceType<typeof OpenAI.APIError>).type).toBe('TooManyRequestsError');

    fake.enqueue({ status: 500 });
    const failed = await call(h.app, 'POST', '/api/v1/chat/completions', {
      token: pat,
      body: { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], stream: true },
    });
    expect(failed.statusCode).toBe(502);
    expect(failed.json()).toMatchObject({ error: { type: 'BadGatewayError' }, statusCode: 502 });
    expect(await balance()).toBe(100000);
    expect(await llmRows()).toHaveLength(0);
  });

  it('fails an upstream answer or stream event over 32 MB: 502, or the fault event once the stream began', async () => {
    const huge = 'x'.repeat(33 * 1024 * 1024); // one word: the stream sends it as one event
    fake.enqueue({ content: huge }, { content: huge });
    const body = { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] };
    const json = await call(h.app, 'POST', '/api/v1/chat/completions', { token: pat, body });
    expect(json.statusCode).toBe(502);
    expect(json.json()).toMatchObject({
      error: { type: 'BadGatewayError', message: "The model provider's answer is larger than 32 MB" },
    });
    expect(await balance()).toBe(100000); // a failed call costs nothing
    expect(await llmRows()).toHaveLength(0);

    // The fake's stream begins with the assistant's role: the event after it is the one too large.
    const streamed = await call(h.app, 'POST', '/api/v1/chat/completions', {
      token: pat,
      body: { ...body, stream: true },
    });
    expect(streamed.statusCode).toBe(200);
    const fault = { message: 'The model provider sent a stream event larger than 32 MB', type: 'BadGatewayError' };
    expect(streamed.body).toContain(`data: ${JSON.stringify({ error: { ...fault, code: 502 } })}\n\n`);
    expect(streamed.body.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(streamed.body.length).toBeLessThan(4096); // none of the 33 MB reached the client
    // Billed as a stream that broke off: the prompt, nothing generated.
    const consumed = creditsComment(streamed.body)?.consumed ?? 0;
    expect(consumed).toBeGreaterThan(0);
    expect((await llmRows()).map((r) => r.amount)).toEqual([-consumed]);
  });

  it('counts tokens itself when the upstream reports no usage', async () => {
    fake.enqueue({ content: 'hello world', noUsage: true });
    const res = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.usage?.completion_tokens).toBeGreaterThan(0);
    expect(res.usage?.prompt_tokens).toBeGreaterThan(0);
    const [row] = await llmRows();
    expect(row?.amount).toBe(-((res.usage?.prompt_tokens ?? 0) + 2 * (res.usage?.completion_tokens ?? 0)));
  });

  it('aborts the upstream when the client cuts a stream, and bills only what was generated', async () => {
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    fake.enqueue({ content: words, chunkDelayMs: 15, usage: { prompt: 5, completion: 60 } });
    const ac = new AbortController();
    const res = await fetch(`${base}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${pat}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'long' }], stream: true }),
      signal: ac.signal,
    });
    const reader = res.body?.getReader();
    let seen = '';
    while (reader && (seen.match(/"content"/g) ?? []).length < 5)
      seen += new TextDecoder().decode((await reader.read()).value);
    ac.abort();
    await expect.poll(async () => (await llmRows()).length, { timeout: 10_000 }).toBe(1);
    const [row] = await llmRows();
    const full = 5 + 2 * 60;
    expect(row?.amount).toBeLessThan(0);
    expect(-(row?.amount ?? 0)).toBeLessThan(full);
    await expect.poll(() => fake.aborted, { timeout: 5_000 }).toBeGreaterThan(0);
  });

  it('cancels the upstream call when the client leaves a JSON request, and bills only its prompt', async () => {
    fake.enqueue({ content: 'a slow answer', delayMs: 8_000 });
    const before = fake.inFlight;
    const ac = new AbortController();
    const res = fetch(`${base}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${pat}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'take your time' }] }),
      signal: ac.signal,
    });
    await expect.poll(() => fake.inFlight, { timeout: 5_000 }).toBe(before + 1);
    ac.abort();
    await expect(res).rejects.toThrow();
    // The gateway closed its upstream request long before the upstream would have answered.
    await expect.poll(() => fake.inFlight, { timeout: 4_000 }).toBe(before);
    await expect.poll(async () => (await llmRows()).length, { timeout: 5_000 }).toBe(1);
    const [row] = await llmRows();
    expect(row?.completionTokens).toBe(0);
    expect(row?.promptTokens).toBeGreaterThan(0);
    expect(row?.amount).toBe(-(row?.promptTokens ?? 0)); // fake-model: 1 credit a prompt token
  });

  it('never overdraws by more than one request under concurrency, and the ledger adds up', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 60 }),
        fc.array(fc.record({ prompt: fc.integer({ min: 0, max: 20 }), completion: fc.integer({ min: 0, max: 20 }) }), {
          minLength: 2,
          maxLength: 12,
        }),
        async (start, usages) => {
          const u = await createUser(h.app);
          const token = await u.pat(['llm-all']);
          await db().update(accounts).set({ creditBalance: start }).where(eq(accounts.id, u.account.id));
          fake.enqueue(...usages.map((usage) => ({ content: 'x', usage })));
          const results = await Promise.all(
            usages.map(() =>
              fetch(`${base}/api/v1/chat/completions`, {
                method: 'POST',
                headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
                body: JSON.stringify({
                  model: 'fake-model',
                  messages: [{ role: 'user', content: 'q' }],
                  max_tokens: 20,
                }),
              }).then((r) => r.status),
            ),
          );
          expect(results.every((s) => s === 200 || s === 402)).toBe(true);
          const final = (await balance(u.account.id)) ?? 0;
          const rows = await llmRows(u.account.id);
          const spent = rows.reduce((s, r) => s - r.amount, 0);
          expect(final).toBe(start - spent);
          const maxCost = Math.max(...usages.map((x) => x.prompt + 2 * x.completion));
          expect(final).toBeGreaterThanOrEqual(-maxCost);
          expect(rows.length).toBeLessThanOrEqual(results.filter((s) => s === 200).length);
          // Replies scripted for the refused requests must not leak into the next run.
          fake.reset();
        },
      ),
      { numRuns: 8 },
    );
  });

  // Issue 10 item 2: the hold once counted only `messages` and one `max_tokens`, so 30 requests with large tool
  // lists, or `n: 128`, all passed the guard and overdrew by thousands of credits each.
  it.each([
    {
      what: 'large tool lists and a response_format schema',
      body: {
        messages: [{ role: 'user', content: 'q' }],
        max_tokens: 10,
        tools: Array.from({ length: 40 }, (_, i) => ({
          type: 'function',
          function: { name: `tool_${i}`, description: 'd'.repeat(1000), parameters: { type: 'object' } },
        })),
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'answer', schema: { type: 'object', description: 's'.repeat(5000) } },
        },
      },
    },
    { what: 'n: 128', body: { messages: [{ role: 'user', content: 'q' }], max_tokens: 100, n: 128 } },
  ])('30 concurrent requests with $what overdraw by at most one request’s real cost', async ({ body }) => {
    const start = 1000;
    const u = await createUser(h.app);
    const token = await u.pat(['llm-all']);
    await db().update(accounts).set({ creditBalance: start }).where(eq(accounts.id, u.account.id));
    fake.enqueue(...Array.from({ length: 30 }, () => ({ content: 'x', billReceived: true })));
    const statuses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        fetch(`${base}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'fake-model', ...body, stream: i % 2 === 1 }),
        }).then(async (r) => {
          await r.text();
          return r.status;
        }),
      ),
    );
    fake.reset();
    expect(statuses.every((s) => s === 200 || s === 402)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    const final = (await balance(u.account.id)) ?? 0;
    const rows = await llmRows(u.account.id);
    const costs = rows.map((r) => -r.amount);
    // The fake billed the full request: thousands of credits each, far above the starting balance.
    expect(Math.min(...costs)).toBeGreaterThan(start);
    expect(final).toBe(start - costs.reduce((a, b) => a + b, 0));
    expect(final).toBeGreaterThanOrEqual(-Math.max(...costs));
  });

  it('refuses n and best_of outside 1..128 (422)', async () => {
    for (const extra of [{ n: 129 }, { n: 0 }, { best_of: 1.5 }]) {
      const res = await call(h.app, 'POST', '/api/v1/chat/completions', {
        token: pat,
        body: { model: 'fake-model', messages: [{ role: 'user', content: 'q' }], ...extra },
      });
      expect(res.statusCode).toBe(422);
      expect(res.json().error.type).toBe('ValidationError');
    }
  });

  it('answers 504 when the upstream is too slow, and charges nothing', async () => {
    const slow = await extra({
      LLM_BASE_URL: fake.url,
      LLM_MODELS: MODELS,
      LLM_TIMEOUT_MS: '200',
    });
    // Well past the time-out: undici checks its timers about every half second, later on a busy machine.
    fake.enqueue({ content: 'late', delayMs: 3000 });
    const res = await call(slow, 'POST', '/api/v1/chat/completions', {
      token: pat,
      body: { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.statusCode).toBe(504);
    expect(res.json()).toEqual({
      error: {
        message: 'The model provider did not answer in time',
        type: 'GatewayTimeoutError',
        param: null,
        code: null,
      },
      message: 'The model provider did not answer in time',
      statusCode: 504,
    });
    expect(await balance()).toBe(100000);
  });

  it('limits chat completions per account (RATE_LIMIT_LLM) with Retry-After', async () => {
    const limited = await extra({ LLM_BASE_URL: fake.url, LLM_MODELS: MODELS, RATE_LIMIT_LLM: '2' });
    const body = { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] };
    expect((await call(limited, 'POST', '/api/v1/chat/completions', { token: pat, body })).statusCode).toBe(200);
    expect((await call(limited, 'POST', '/api/v1/chat/completions', { token: pat, body })).statusCode).toBe(200);
    const third = await call(limited, 'POST', '/api/v1/chat/completions', { token: pat, body });
    expect(third.statusCode).toBe(429);
    expect(third.json()).toMatchObject({ error: { type: 'TooManyRequestsError' }, statusCode: 429 });
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('answers 503 naming the settings when no upstream is configured', async () => {
    const bare = await extra({ LLM_BASE_URL: '', LLM_MODELS: '' });
    for (const [method, url] of [
      ['POST', '/api/v1/chat/completions'],
      ['GET', '/api/v1/models'],
    ] as const) {
      const res = await call(bare, method, url, {
        token: pat,
        ...(method === 'POST' ? { body: { messages: [{ role: 'user', content: 'hi' }] } } : {}),
      });
      expect(res.statusCode).toBe(503);
      expect(res.json().message).toBe(
        'No LLM upstream is configured: set LLM_BASE_URL (and LLM_API_KEY) for an OpenAI-compatible server, OPENAI_API_KEY, or ANTHROPIC_API_KEY',
      );
    }
  });

  it('needs the llm-all scope and a token', async () => {
    const body = { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] };
    expect((await call(h.app, 'POST', '/api/v1/chat/completions', { body })).statusCode).toBe(401);
    const noScope = await call(h.app, 'POST', '/api/v1/chat/completions', { body, token: await user.pat(['account']) });
    expect(noScope.statusCode).toBe(403);
    expect(noScope.json().message).toBe('Missing required scope: llm-all');
    expect((await call(h.app, 'GET', '/api/v1/models', { token: await user.pat(['account']) })).statusCode).toBe(403);
  });
});
