import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_ANTHROPIC_KEY, type FakeAnthropic, startFakeAnthropic } from '../../test/fakes/anthropic.ts';
import { anthropicUpstream } from './anthropic.ts';
import type { CatalogModel } from './catalog.ts';
import type { ChatChunk, ChatRequest, Upstream } from './types.ts';
import { UpstreamError } from './types.ts';

const model: CatalogModel = {
  id: 'claude-test',
  upstream: 'anthropic',
  upstreamModel: 'claude-test-upstream',
  tier: 'premium',
  promptRate: 1,
  completionRate: 1,
  contextWindow: 200_000,
  maxOutputTokens: 4096,
  capabilities: { tools: true, vision: true, streaming: true, json: false },
};

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('Anthropic upstream', () => {
  let fake: FakeAnthropic;
  let upstream: Upstream;

  beforeAll(async () => {
    fake = await startFakeAnthropic();
    upstream = anthropicUpstream({ baseUrl: fake.url, apiKey: FAKE_ANTHROPIC_KEY, timeoutMs: 5000 });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  /** A call as the gateway makes it: the request prepared (refused there when it cannot be expressed). */
  const callOf = (request: Partial<ChatRequest>, stream: boolean, via = upstream) => ({
    model,
    body: via.prepare(model, { model: model.id, messages: [{ role: 'user', content: 'hi' }], ...request }, stream),
    signal: new AbortController().signal,
  });
  const ask = async (request: Partial<ChatRequest>, via = upstream) => via.complete(callOf(request, false, via));
  const stream = async (request: Partial<ChatRequest>, via = upstream) => {
    const chunks: ChatChunk[] = [];
    const source = via.stream(callOf({ stream: true, ...request }, true, via));
    for await (const c of source) chunks.push(c);
    return chunks;
  };
  const faultOf = async (p: Promise<unknown>) => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UpstreamError);
    return err as UpstreamError;
  };
  const lastRequest = () => {
    const r = fake.requests.at(-1);
    if (!r) throw new Error('the fake got no request');
    return r;
  };

  describe('completions', () => {
    it('answers text in OpenAI form, with the catalog id and usage including cached prompt tokens', async () => {
      fake.enqueue({ text: 'Hello there', usage: { input: 12, output: 3, cacheRead: 5, cacheCreation: 2 } });
      const before = Math.floor(Date.now() / 1000);
      const completion = await ask({});
      expect(completion).toEqual({
        id: expect.stringMatching(/^msg_fake\d+$/),
        object: 'chat.completion',
        created: expect.any(Number),
        model: 'claude-test',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'Hello there' },
            finish_reason: 'stop',
            logprobs: null,
          },
        ],
        usage: { prompt_tokens: 19, completion_tokens: 3, total_tokens: 22 },
      });
      expect(completion.created).toBeGreaterThanOrEqual(before);

      const { headers, body } = lastRequest();
      expect(headers['x-api-key']).toBe(FAKE_ANTHROPIC_KEY);
      expect(headers['anthropic-version']).toBe('2023-06-01');
      expect(headers.authorization).toBeUndefined();
      expect(body).toEqual({
        model: 'claude-test-upstream',
        max_tokens: 4096,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      });
    });

    it('answers tool use as tool_calls with the input as JSON arguments', async () => {
      const input = { city: 'Zürich', days: 3, units: { temp: 'C' } };
      fake.enqueue({
        text: 'Let me check.',
        toolUses: [
          { name: 'get_weather', input, id: 'toolu_1' },
          { name: 'get_time', input: {}, id: 'toolu_2' },
        ],
        usage: { input: 40, output: 20 },
      });
      const completion = await ask({ tools: [weather] });
      expect(completion.choices[0]).toEqual({
        index: 0,
        message: {
          role: 'assistant',
          content: 'Let me check.',
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(input) } },
            { id: 'toolu_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
          ],
        },
        finish_reason: 'tool_calls',
        logprobs: null,
      });
      expect(JSON.parse(completion.choices[0]?.message.tool_calls?.[0]?.function.arguments ?? '')).toEqual(input);
      expect(completion.usage).toEqual({ prompt_tokens: 40, completion_tokens: 20, total_tokens: 60 });
    });

    it('answers content null when the model only calls tools', async () => {
      fake.enqueue({ toolUses: [{ name: 'get_weather', input: { city: 'Oslo' } }] });
      const completion = await ask({ tools: [weather] });
      expect(completion.choices[0]?.message.content).toBeNull();
      expect(completion.choices[0]?.message.tool_calls).toHaveLength(1);
    });

    it.each([
      ['end_turn', 'stop'],
      ['stop_sequence', 'stop'],
      ['max_tokens', 'length'],
      ['tool_use', 'tool_calls'],
      ['refusal', 'content_filter'],
    ])('maps stop_reason %s to finish_reason %s', async (stopReason, finish) => {
      fake.enqueue({ text: 'x', stopReason });
      expect((await ask({})).choices[0]?.finish_reason).toBe(finish);
    });
  });

  describe('request translation', () => {
    it('moves system and developer messages to system, merges tool results and keeps turns alternating', async () => {
      await ask({
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'developer', content: [{ type: 'text', text: 'Use metric units.' }] },
          { role: 'user', content: 'Weather in Oslo and Bergen?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
              { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Bergen"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_a', content: '4°C, rain' },
          {
            role: 'tool',
            tool_call_id: 'call_b',
            content: [
              { type: 'text', text: '6°C, ' },
              { type: 'text', text: 'fog' },
            ],
          },
          { role: 'user', content: 'And tomorrow?' },
          { role: 'user', content: 'Briefly.' },
          { role: 'assistant', content: 'Tomorrow: ' },
        ],
        tools: [weather, { type: 'function', function: { name: 'get_time' } }],
        tool_choice: 'auto',
        stop: 'END',
        temperature: 0.3,
      });
      const { body } = lastRequest();
      expect(body.system).toBe('You are terse.\n\nUse metric units.');
      expect(body.messages).toEqual([
        { role: 'user', content: [{ type: 'text', text: 'Weather in Oslo and Bergen?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 'call_a', name: 'get_weather', input: { city: 'Oslo' } },
            { type: 'tool_use', id: 'call_b', name: 'get_weather', input: { city: 'Bergen' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_a', content: '4°C, rain' },
            { type: 'tool_result', tool_use_id: 'call_b', content: '6°C, fog' },
            { type: 'text', text: 'And tomorrow?' },
            { type: 'text', text: 'Briefly.' },
          ],
        },
        // A trailing assistant turn is a prefill; Anthropic refuses trailing whitespace there.
        { role: 'assistant', content: [{ type: 'text', text: 'Tomorrow:' }] },
      ]);
      expect(body.tools).toEqual([
        {
          name: 'get_weather',
          description: 'Weather for a city',
          input_schema: weather.function.parameters,
        },
        { name: 'get_time', input_schema: { type: 'object', properties: {} } },
      ]);
      expect(body.tool_choice).toEqual({ type: 'auto' });
      expect(body.stop_sequences).toEqual(['END']);
      expect(body.temperature).toBe(0.3);
    });

    it.each([
      ['none', { type: 'none' }],
      ['required', { type: 'any' }],
      [
        { type: 'function', function: { name: 'get_weather' } },
        { type: 'tool', name: 'get_weather' },
      ],
    ])('maps tool_choice %j', async (choice, expected) => {
      await ask({ tools: [weather], tool_choice: choice });
      expect(lastRequest().body.tool_choice).toEqual(expected);
    });

    it('turns parallel_tool_calls false into disable_parallel_tool_use', async () => {
      await ask({ tools: [weather], parallel_tool_calls: false });
      expect(lastRequest().body.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
      await ask({ tools: [weather], tool_choice: 'required', parallel_tool_calls: false });
      expect(lastRequest().body.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    });

    it('maps sampling, limits and stop sequences', async () => {
      await ask({ max_tokens: 100, max_completion_tokens: 200, stop: ['A', 'B'], top_p: 0.5, user: 'u-1', seed: 3 });
      expect(lastRequest().body).toMatchObject({
        max_tokens: 200,
        stop_sequences: ['A', 'B'],
        top_p: 0.5,
        metadata: { user_id: 'u-1' },
      });
      expect(lastRequest().body).not.toHaveProperty('seed');

      // Above the model's output limit: capped, since the gateway holds credits for at most that much.
      await ask({ max_tokens: 1_000_000 });
      expect(lastRequest().body.max_tokens).toBe(4096);

      // OpenAI's 0..2 range clamped to Anthropic's 0..1; with both given only temperature goes.
      await ask({ temperature: 1.7, top_p: 0.9 });
      expect(lastRequest().body.temperature).toBe(1);
      expect(lastRequest().body).not.toHaveProperty('top_p');
    });

    it('sends images as base64 or url sources', async () => {
      await ask({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What differs?' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'high' } },
            ],
          },
        ],
      });
      expect(lastRequest().body.messages[0]?.content).toEqual([
        { type: 'text', text: 'What differs?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
      ]);
    });

    it('asks for JSON through the system prompt, with the schema', async () => {
      await ask({ response_format: { type: 'json_object' } });
      expect(lastRequest().body.system).toMatch(/single valid JSON object/);
      const schema = { type: 'object', properties: { answer: { type: 'string' } } };
      await ask({
        messages: [
          { role: 'system', content: 'Be exact.' },
          { role: 'user', content: 'hi' },
        ],
        response_format: { type: 'json_schema', json_schema: { name: 'a', schema } },
      });
      const system = String(lastRequest().body.system);
      expect(system.startsWith('Be exact.\n\n')).toBe(true);
      expect(system).toContain(JSON.stringify(schema));
      await ask({ response_format: { type: 'text' } });
      expect(lastRequest().body).not.toHaveProperty('system');
    });

    it.each([
      [{ n: 2 }, /one choice/],
      [{ logprobs: true }, /logprobs/],
      [
        {
          messages: [
            { role: 'user' as const, content: 'x' },
            {
              role: 'assistant' as const,
              tool_calls: [{ id: 'c', type: 'function' as const, function: { name: 'f', arguments: '{oops' } }],
            },
          ],
        },
        /arguments is not valid JSON/,
      ],
      [
        {
          messages: [
            { role: 'user' as const, content: 'x' },
            {
              role: 'assistant' as const,
              tool_calls: [
                {
                  id: 'c',
                  type: 'function' as const,
                  // A string in the body (so past the body's depth limit), JSON thousands of levels deep inside.
                  function: { name: 'f', arguments: `{"a":${'['.repeat(10_000)}${']'.repeat(10_000)}}` },
                },
              ],
            },
          ],
        },
        /arguments: JSON must not nest arrays and objects more than 64 levels deep/,
      ],
      [{ messages: [{ role: 'tool' as const, content: 'x' }] }, /tool_call_id/],
      [
        {
          messages: [
            { role: 'user' as const, content: [{ type: 'input_audio', input_audio: { data: '', format: 'wav' } }] },
          ],
        },
        /"input_audio" parts are not supported/,
      ],
      [
        {
          messages: [{ role: 'user' as const, content: [{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }] }],
        },
        /http\(s\) URL or a data URL/,
      ],
      [{ tool_choice: { type: 'function' }, tools: [weather] }, /tool_choice/],
    ])('refuses what Anthropic cannot express (%#) without calling it', async (request, message) => {
      const err = await faultOf(ask(request));
      expect(err.fault).toBe('rejected');
      expect(err.message).toMatch(message);
      expect(fake.requests).toHaveLength(0);
    });

    it('accepts a base URL given with /v1 or a trailing slash', async () => {
      const other = anthropicUpstream({ baseUrl: `${fake.url}/v1/`, apiKey: FAKE_ANTHROPIC_KEY, timeoutMs: 5000 });
      fake.enqueue({ text: 'fine' });
      const completion = await ask({}, other);
      expect(completion.choices[0]?.message.content).toBe('fine');
    });
  });

  describe('streaming', () => {
    it('streams text as chunks: role first, content deltas, finish_reason, then usage', async () => {
      fake.enqueue({ text: 'The quick brown fox', usage: { input: 9, output: 4, cacheRead: 1 } });
      const chunks = await stream({ stop: ['END'] });
      expect(lastRequest().body).toMatchObject({
        stream: true,
        stop_sequences: ['END'],
        model: 'claude-test-upstream',
      });

      expect(chunks[0]?.choices[0]?.delta).toEqual({ role: 'assistant', content: '' });
      expect(chunks[0]?.id).toMatch(/^msg_fake\d+$/);
      for (const c of chunks) {
        expect(c).toMatchObject({ id: chunks[0]?.id, object: 'chat.completion.chunk', model: 'claude-test' });
        expect(c.created).toBe(chunks[0]?.created);
      }
      const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
      expect(text).toBe('The quick brown fox');
      const finishes = chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean);
      expect(finishes).toEqual(['stop']);
      const last = chunks.at(-1);
      expect(last?.choices).toEqual([]);
      expect(last?.usage).toEqual({ prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 });
      expect(chunks.filter((c) => c.usage)).toHaveLength(1);
    });

    it('streams tool use as tool_calls deltas whose assembled arguments equal the input', async () => {
      const inputs = [{ city: 'Zürich', note: 'he said "hi"\n', days: [1, 2, 3] }, { q: 'x'.repeat(50) }, {}];
      fake.enqueue({
        thinking: 'The user wants weather.',
        text: 'Checking now',
        toolUses: [
          { name: 'get_weather', input: inputs[0] ?? {}, id: 'toolu_a' },
          { name: 'search', input: inputs[1] ?? {}, id: 'toolu_b' },
          { name: 'get_time', input: {}, id: 'toolu_c' },
        ],
        usage: { input: 30, output: 25 },
      });
      const chunks = await stream({ tools: [weather] });

      const calls: Array<{ id?: string; type?: string; name: string; arguments: string }> = [];
      for (const c of chunks) {
        for (const d of c.choices[0]?.delta.tool_calls ?? []) {
          const call = calls[d.index] ?? { name: '', arguments: '' };
          calls[d.index] = call;
          if (d.id) call.id = d.id;
          if (d.type) call.type = d.type;
          call.name += d.function?.name ?? '';
          call.arguments += d.function?.arguments ?? '';
        }
      }
      expect(calls.map((c) => [c.id, c.type, c.name])).toEqual([
        ['toolu_a', 'function', 'get_weather'],
        ['toolu_b', 'function', 'search'],
        ['toolu_c', 'function', 'get_time'],
      ]);
      expect(calls.map((c) => JSON.parse(c.arguments))).toEqual(inputs);
      // The first delta of a call names it with empty arguments, as OpenAI's do.
      const starts = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).filter((d) => d.id);
      expect(starts.map((d) => d.function)).toEqual([
        { name: 'get_weather', arguments: '' },
        { name: 'search', arguments: '' },
        { name: 'get_time', arguments: '' },
      ]);

      expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Checking now');
      expect(chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean)).toEqual(['tool_calls']);
      expect(chunks.at(-1)?.usage).toEqual({ prompt_tokens: 30, completion_tokens: 25, total_tokens: 55 });
    });
  });

  describe('faults', () => {
    it('429 with retry-after is rate_limited with retryAfterSeconds', async () => {
      fake.enqueue({
        status: 429,
        errorType: 'rate_limit_error',
        errorMessage: 'slow down',
        headers: { 'retry-after': '7' },
      });
      const err = await faultOf(ask({}));
      expect(err.fault).toBe('rate_limited');
      expect(err.retryAfterSeconds).toBe(7);
      expect(err.upstreamStatus).toBe(429);
      expect(err.message).toContain('slow down');
    });

    it('529 overloaded is failed, for completions and streams', async () => {
      fake.enqueue({ status: 529, errorType: 'overloaded_error', errorMessage: 'Overloaded' });
      const err = await faultOf(ask({}));
      expect(err.fault).toBe('failed');
      expect(err.upstreamStatus).toBe(529);

      fake.enqueue({ status: 529, errorType: 'overloaded_error' });
      expect((await faultOf(stream({}))).fault).toBe('failed');
    });

    it('400 invalid_request_error is rejected', async () => {
      fake.enqueue({ status: 400, errorType: 'invalid_request_error', errorMessage: 'prompt is too long' });
      const err = await faultOf(ask({}));
      expect(err.fault).toBe('rejected');
      expect(err.message).toContain('prompt is too long');
    });

    it.each([
      ['overloaded_error', 'failed'],
      ['rate_limit_error', 'rate_limited'],
      ['api_error', 'failed'],
      ['invalid_request_error', 'rejected'],
    ])('an %s event mid-stream is %s, after the chunks already sent', async (type, fault) => {
      fake.enqueue({
        text: 'one two three four',
        streamError: { type, message: 'mid-stream trouble', afterDeltas: 2 },
      });
      const got: ChatChunk[] = [];
      const err = await faultOf(
        (async () => {
          for await (const c of upstream.stream(callOf({}, true))) got.push(c);
        })(),
      );
      expect(err.fault).toBe(fault);
      expect(err.message).toContain('mid-stream trouble');
      expect(got.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('one two');
    });

    it('an error event before any content fails the first read', async () => {
      fake.enqueue({ text: 'never', streamError: { type: 'overloaded_error', afterDeltas: 0 } });
      const source = upstream.stream(callOf({}, true))[Symbol.asyncIterator]();
      expect((await source.next()).value?.choices[0]?.delta.role).toBe('assistant'); // message_start
      expect((await faultOf(source.next())).fault).toBe('failed');
    });

    it('a stream cut before message_stop is failed', async () => {
      fake.enqueue({ text: 'partial answer', truncate: true });
      const err = await faultOf(stream({}));
      expect(err.fault).toBe('failed');
    });

    it('an upstream slower than the time limit is timeout', async () => {
      const slow = anthropicUpstream({ baseUrl: fake.url, apiKey: FAKE_ANTHROPIC_KEY, timeoutMs: 200 });
      // undici's timers are coarse (about half a second): leave a wide margin.
      fake.enqueue({ text: 'late', delayMs: 1500 });
      const err = await faultOf(ask({}, slow));
      expect(err.fault).toBe('timeout');
    });

    it('a wrong API key is failed (the operator must fix it, not the caller)', async () => {
      const wrong = anthropicUpstream({ baseUrl: fake.url, apiKey: 'nope', timeoutMs: 5000 });
      const err = await faultOf(ask({}, wrong));
      expect(err.fault).toBe('failed');
      expect(err.upstreamStatus).toBe(401);
    });
  });
});
