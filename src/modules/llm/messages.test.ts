import Anthropic from '@anthropic-ai/sdk';
import { eq } from 'drizzle-orm';
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import type { FakeAnthropic } from '../../../test/fakes/anthropic.ts';
import type { FakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, gatewaySuite, settledBalance, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { creditsComment, sseEvents } from '../../../test/sse.ts';
import { accounts } from '../../db/schema/index.ts';

// fake-model (the OpenAI-compatible fake): 1 credit per prompt token, 2 per completion token.
const MODELS = 'fake-model=1000000/2000000';
const CLAUDE = 'claude-haiku-4-5'; // from the catalog, served by the fake Anthropic API

const weather = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('Anthropic Messages API (/api/v1/messages) through the real @anthropic-ai/sdk', () => {
  let openai: FakeLlm;
  let anthropic: FakeAnthropic;
  let h: TestHarness;
  let base: string;
  let user: TestUser;
  let pat: string;
  let client: Anthropic;

  gatewaySuite(MODELS, (s) => ({ h, llm: openai, anthropic, base, user, pat } = s));
  beforeEach(() => {
    // The SDK appends /v1/messages to its base URL and sends the key as x-api-key.
    client = new Anthropic({ baseURL: `${base}/api`, apiKey: pat, maxRetries: 0 });
  });

  const balance = () => settledBalance(h, user.account.id);

  it('answers a plain message from an OpenAI-compatible upstream, billed, with the credit headers', async () => {
    openai.enqueue({ content: 'Hello there friend', usage: { prompt: 10, completion: 3 } });
    const { data, response } = await client.messages
      .create({
        model: 'fake-model',
        max_tokens: 100,
        system: 'Be brief.',
        messages: [{ role: 'user', content: 'hi' }],
        stop_sequences: ['END'],
      })
      .withResponse();
    expect(data).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'fake-model',
      content: [{ type: 'text', text: 'Hello there friend' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 10, output_tokens: 3 },
    });
    expect(data.id).toMatch(/^msg_/);
    expect(response.headers.get('x-credits-consumed')).toBe('16');
    expect(response.headers.get('x-credits-remaining')).toBe('99984');
    expect(await balance()).toBe(99984);
    const sent = openai.requests[0];
    expect(sent?.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ]);
    expect(sent).toMatchObject({ model: 'fake-model', max_tokens: 100, stop: ['END'] });
    // The same token as a Bearer (Claude Code's ANTHROPIC_AUTH_TOKEN) is accepted too.
    const bearer = new Anthropic({ baseURL: `${base}/api`, authToken: pat, apiKey: null, maxRetries: 0 });
    const again = await bearer.messages.create({
      model: 'fake-model',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(again.content).toEqual([{ type: 'text', text: 'ok' }]);
  });

  it('streams text through messages.stream (OpenAI upstream), the final message and its bill', async () => {
    openai.enqueue({ content: 'one two three', usage: { prompt: 5, completion: 3 } });
    const stream = client.messages.stream({
      model: 'fake-model',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'count' }],
    });
    const texts: string[] = [];
    stream.on('text', (t) => texts.push(t));
    const final = await stream.finalMessage();
    expect(texts.join('')).toBe('one two three');
    expect(final).toMatchObject({
      content: [{ type: 'text', text: 'one two three' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 5, output_tokens: 3 },
    });
    expect(openai.requests[0]).toMatchObject({ stream: true });
    expect(await balance()).toBe(100000 - 11);

    // On the wire: Anthropic's named events in order, then the bill as the chat stream gives it.
    openai.enqueue({ content: 'hi', usage: { prompt: 2, completion: 1 } });
    const res = await fetch(`${base}/api/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': pat },
      body: JSON.stringify({
        model: 'fake-model',
        max_tokens: 5,
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      }),
    });
    expect(res.headers.get('x-credits-remaining')).toBe('99989');
    const text = await res.text();
    expect(sseEvents(text).map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(creditsComment(text)).toEqual({ consumed: 4, remaining: 99985 });
  });

  it('ends a stream the upstream broke off with an error event, and bills only what was generated', async () => {
    openai.enqueue({ content: 'one two three four', breakAfter: 2, chunkDelayMs: 20, noUsage: true });
    const res = await fetch(`${base}/api/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${pat}` },
      body: JSON.stringify({
        model: 'fake-model',
        max_tokens: 50,
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      }),
    });
    expect(res.status).toBe(200);
    const events = sseEvents(await res.text());
    expect(events.at(-1)).toEqual({
      event: 'error',
      data: { type: 'error', error: { type: 'api_error', message: 'The model provider stream broke off' } },
    });
    expect(events.map((e) => e.event)).not.toContain('message_stop');
    expect(await balance()).toBeLessThan(100000);
  });

  it('streams from the Anthropic upstream too', async () => {
    anthropic.enqueue({ text: 'Hi from Claude', usage: { input: 12, output: 3 } });
    const final = await client.messages
      .stream({ model: CLAUDE, max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] })
      .finalMessage();
    expect(final).toMatchObject({
      model: CLAUDE,
      content: [{ type: 'text', text: 'Hi from Claude' }],
      usage: { input_tokens: 12, output_tokens: 3 },
    });
    expect(anthropic.requests[0]?.body).toMatchObject({ stream: true, max_tokens: 50 });
  });

  it('round-trips a tool use through the Anthropic upstream, then streams one from the OpenAI one', async () => {
    anthropic.enqueue({ toolUses: [{ name: 'get_weather', input: { city: 'Paris' }, id: 'toolu_1' }] });
    const first = await client.messages.create({
      model: CLAUDE,
      max_tokens: 200,
      tools: [weather],
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toEqual([{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }]);
    expect(anthropic.requests[0]?.body).toMatchObject({
      tools: [weather],
      tool_choice: { type: 'any' },
    });

    anthropic.enqueue({ text: 'Sunny, 20 degrees.' });
    const second = await client.messages.create({
      model: CLAUDE,
      max_tokens: 200,
      tools: [weather],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny 20C' }] },
      ],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'Sunny, 20 degrees.' }]);
    expect(anthropic.requests[1]?.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny 20C' }] },
    ]);

    openai.enqueue({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] });
    const streamed = await client.messages
      .stream({ model: 'fake-model', max_tokens: 50, tools: [weather], messages: [{ role: 'user', content: 'Oslo?' }] })
      .finalMessage();
    expect(streamed.stop_reason).toBe('tool_use');
    expect(streamed.content).toMatchObject([{ type: 'tool_use', name: 'get_weather', input: { city: 'Oslo' } }]);
    expect(openai.requests[0]?.tools).toEqual([
      {
        type: 'function',
        function: { name: 'get_weather', description: 'Weather for a city', parameters: weather.input_schema },
      },
    ]);
  });

  it('counts tokens for free', async () => {
    const counted = await client.messages.countTokens({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'How many tokens is this sentence?' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(3);
    expect(counted.input_tokens).toBeLessThan(40);
    expect(await balance()).toBe(100000);
  });

  it("answers 401, 402, 403 and a refused request in Anthropic's error shape", async () => {
    const bad = new Anthropic({ baseURL: `${base}/api`, apiKey: 'pat_not_a_token', maxRetries: 0 });
    const unauthorized = await bad.messages
      .create({ model: 'fake-model', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(unauthorized).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((unauthorized as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error' },
    });

    const body = { model: 'fake-model', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] };
    const noScope = await call(h.app, 'POST', '/api/v1/messages', { body, token: await user.pat(['account']) });
    expect(noScope.statusCode).toBe(403);
    expect(noScope.json()).toEqual({
      type: 'error',
      error: { type: 'permission_error', message: 'Missing required scope: llm-all' },
      message: 'Missing required scope: llm-all',
      statusCode: 403,
    });

    const refused = await call(h.app, 'POST', '/api/v1/messages', {
      token: pat,
      body: { ...body, messages: [{ role: 'user', content: [{ type: 'document', source: {} }] }] },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toEqual({
      type: 'invalid_request_error',
      message:
        'messages[0].content[0]: "document" blocks are not supported: send text, image and tool_result blocks ' +
        "(a document's text as a text block)",
    });
    const serverTool = await call(h.app, 'POST', '/api/v1/messages', {
      token: pat,
      body: { ...body, tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
    });
    expect(serverTool.statusCode).toBe(400);
    expect(serverTool.json().message).toBe(
      'tools[0]: server tools ("web_search_20250305") are not supported: declare the tool with an input_schema ' +
        'and run it in your client, answering its tool_use with a tool_result',
    );
    const assistant = await call(h.app, 'POST', '/api/v1/messages', {
      token: pat,
      body: {
        ...body,
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }],
          },
          { role: 'user', content: 'and?' },
        ],
      },
    });
    expect(assistant.statusCode).toBe(400);
    expect(assistant.json().message).toBe(
      'messages[1].content[0]: "image" blocks are not supported in assistant turns: send text and tool_use blocks',
    );

    // Fields JSON may give as any value: an object whose toString is not a function once made this a 500.
    const hostile = { toString: [] };
    const cases: Array<[unknown, string]> = [
      [
        [{ role: 'assistant', content: [{ type: 'tool_use', id: ' ', name: hostile }] }],
        'messages[0].content[0]: a tool_use block needs id and name (strings)',
      ],
      [
        [{ role: 'assistant', content: [{ type: 'tool_use', id: 7, name: 'lookup' }] }],
        'messages[0].content[0]: a tool_use block needs id and name (strings)',
      ],
      [
        [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: hostile, content: 'ok' }] }],
        'messages[0].content[0]: tool_use_id is required (a string)',
      ],
      [
        [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: hostile }] }] }],
        'messages[0].content[0].content[0]: an untyped block is not supported here',
      ],
    ];
    for (const [messages, message] of cases) {
      const res = await call(h.app, 'POST', '/api/v1/messages', { token: pat, body: { ...body, messages } });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toEqual({ type: 'invalid_request_error', message });
    }

    await h.database.db.update(accounts).set({ creditBalance: 0 }).where(eq(accounts.id, user.account.id));
    const broke = await client.messages
      .create(body as Anthropic.MessageCreateParamsNonStreaming)
      .catch((e: unknown) => e);
    expect((broke as InstanceType<typeof Anthropic.APIError>).status).toBe(402);
    expect((broke as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      error: { type: 'billing_error' },
    });
    expect(openai.requests).toHaveLength(0);
  });

  it('answers any content blocks without a 500', { timeout: 60_000 }, async () => {
    const any = fc.oneof(
      fc.string(),
      fc.integer(),
      fc.constant(null),
      fc.array(fc.string(), { maxLength: 2 }),
      fc.object(),
      fc.constant({ toString: [] }),
    );
    const block = fc.record(
      {
        type: fc.constantFrom('text', 'image', 'tool_use', 'tool_result', 'thinking', 'document', 'x'),
        text: any,
        id: any,
        name: any,
        input: any,
        tool_use_id: any,
        content: fc.oneof(any, fc.array(fc.record({ type: fc.constantFrom('text', 'image'), text: any }))),
        is_error: any,
        source: fc.oneof(
          any,
          fc.record({ type: fc.constantFrom('base64', 'url'), media_type: any, data: any, url: any }),
        ),
      },
      { requiredKeys: ['type'] },
    );
    const turn = fc.record({
      role: fc.constantFrom('user', 'assistant'),
      content: fc.oneof(fc.string(), fc.array(block, { maxLength: 4 })),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(turn, { minLength: 1, maxLength: 3 }), fc.boolean(), async (messages, stream) => {
        const res = await call(h.app, 'POST', '/api/v1/messages', {
          token: pat,
          body: { model: 'fake-model', max_tokens: 5, stream, messages },
        });
        expect(res.statusCode, res.body.slice(0, 300)).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
  });

  it('is limited per account like the chat endpoint (429 rate_limit_error with Retry-After)', async () => {
    const limited = await h.extraApp({ LLM_BASE_URL: openai.url, LLM_MODELS: MODELS, RATE_LIMIT_LLM: '1' });
    const body = { model: 'fake-model', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] };
    const headers = { 'x-api-key': pat };
    expect((await call(limited, 'POST', '/api/v1/messages', { body, headers })).statusCode).toBe(200);
    const second = await call(limited, 'POST', '/api/v1/messages', { body, headers });
    expect(second.statusCode).toBe(429);
    expect(second.json().error.type).toBe('rate_limit_error');
    expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);
  });

  const hi = { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] };
  guardTests(
    () => h,
    [
      {
        method: 'POST',
        url: '/api/v1/messages',
        scopes: ['llm-all'],
        body: { ...hi, max_tokens: 5 },
        errorShape: 'anthropic',
      },
      { method: 'POST', url: '/api/v1/messages/count_tokens', scopes: ['llm-all'], body: hi, errorShape: 'anthropic' },
    ],
  );
});
