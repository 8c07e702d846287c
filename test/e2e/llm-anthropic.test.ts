import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it, type TestContext } from 'vitest';
import { creditStats } from '../../src/modules/credits/service.ts';
import { FAKE_ANTHROPIC_KEY, type FakeAnthropic, startFakeAnthropic } from '../fakes/anthropic.ts';
import { createHarness, createUser, type TestHarness } from '../harness.ts';

// Shipped catalog: claude-haiku-4-5 costs 10,000 credits per million prompt tokens, 50,000 per million completion.
const MODEL = 'claude-haiku-4-5';
const cost = (prompt: number, completion: number) => Math.ceil((prompt * 10_000 + completion * 50_000) / 1_000_000);

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

/** The `openai` client against the gateway, the gateway against a fake Anthropic: both translations, for real. */
describe('LLM gateway with an Anthropic upstream', () => {
  let fake: FakeAnthropic;
  let h: TestHarness;
  let client: OpenAI;
  let base: string;
  let wired = false;

  beforeAll(async () => {
    fake = await startFakeAnthropic();
    h = await createHarness({ ANTHROPIC_API_KEY: FAKE_ANTHROPIC_KEY, ANTHROPIC_BASE_URL: fake.url });
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = h.app.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const model = h.app.deps.llm.catalog.get(MODEL);
    wired = model !== undefined && h.app.deps.llm.upstreamFor(model) !== undefined;
  });
  afterAll(async () => {
    await h.close();
    await fake.close();
  });
  beforeEach(async (ctx: TestContext) => {
    // Until src/llm-upstreams/gateway.ts builds anthropicUpstream for ANTHROPIC_API_KEY, these cannot run.
    if (!wired) ctx.skip();
    fake.reset();
    const user = await createUser(h.app);
    client = new OpenAI({ baseURL: `${base}/api/v1`, apiKey: await user.pat(['llm-all']), maxRetries: 0 });
  });

  it('lists the Claude models', async () => {
    const ids = (await client.models.list()).data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['claude-sonnet-4-5', MODEL]));
  });

  it('answers a plain completion and bills the usage Anthropic reported', async () => {
    fake.enqueue({ text: 'Bonjour!', usage: { input: 100, output: 20 } });
    const { data, response } = await client.chat.completions
      .create({
        model: MODEL,
        messages: [
          { role: 'system', content: 'Answer in French.' },
          { role: 'user', content: 'Hello' },
        ],
        max_tokens: 64,
        stop: ['END'],
      })
      .withResponse();
    expect(data.model).toBe(MODEL);
    expect(data.choices[0]?.message.content).toBe('Bonjour!');
    expect(data.choices[0]?.finish_reason).toBe('stop');
    expect(data.usage).toEqual({ prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 });
    expect(response.headers.get('x-credits-consumed')).toBe(String(cost(100, 20)));

    const sent = fake.requests.at(-1);
    expect(sent?.headers['x-api-key']).toBe(FAKE_ANTHROPIC_KEY);
    expect(sent?.body).toEqual({
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      system: 'Answer in French.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
      stop_sequences: ['END'],
    });
  });

  it('streams text the openai client reads, with usage when asked for', async () => {
    fake.enqueue({ text: 'one two three', usage: { input: 50, output: 3 } });
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'count' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      expect(chunk.model).toBe(MODEL);
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('one two three');
    expect(usage).toEqual({ prompt_tokens: 50, completion_tokens: 3, total_tokens: 53 });
  });

  it('runs a tool-calling round trip: tool_use out, tool_result back', async () => {
    fake.enqueue({ toolUses: [{ name: 'get_weather', input: { city: 'Oslo' }, id: 'toolu_oslo' }] });
    const first = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [weather],
      tool_choice: 'required',
    });
    const message = first.choices[0]?.message;
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    expect(message?.tool_calls).toEqual([
      { id: 'toolu_oslo', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
    ]);
    expect(fake.requests.at(-1)?.body.tool_choice).toEqual({ type: 'any' });

    fake.enqueue({ text: 'Rainy, 4°C.' });
    const second = await client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        message as OpenAI.ChatCompletionAssistantMessageParam,
        { role: 'tool', tool_call_id: 'toolu_oslo', content: '4°C, rain' },
      ],
      tools: [weather],
    });
    expect(second.choices[0]?.message.content).toBe('Rainy, 4°C.');
    expect(fake.requests.at(-1)?.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Oslo?' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_oslo', name: 'get_weather', input: { city: 'Oslo' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_oslo', content: '4°C, rain' }] },
    ]);
  });

  it('streams tool calls that the openai client assembles', async () => {
    const input = { city: 'Zürich', note: 'quote " and newline \n inside' };
    fake.enqueue({ text: 'Checking.', toolUses: [{ name: 'get_weather', input, id: 'toolu_z' }] });
    const stream = client.chat.completions.stream({
      model: MODEL,
      messages: [{ role: 'user', content: 'Weather in Zürich?' }],
      tools: [weather],
    });
    const final = await stream.finalChatCompletion();
    const call = final.choices[0]?.message.tool_calls?.[0];
    expect(final.choices[0]?.message.content).toBe('Checking.');
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    expect(call?.id).toBe('toolu_z');
    expect(call?.type === 'function' && JSON.parse(call.function.arguments)).toEqual(input);
  });

  it("maps Anthropic's faults to the openai client's error classes", async () => {
    const ask = () => client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });

    fake.enqueue({ status: 429, errorType: 'rate_limit_error', headers: { 'retry-after': '12' } });
    const limited = await ask().catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBe('12');

    fake.enqueue({ status: 529, errorType: 'overloaded_error', errorMessage: 'Overloaded' });
    const overloaded = await ask().catch((e: unknown) => e);
    expect(overloaded).toBeInstanceOf(OpenAI.APIError);
    expect((overloaded as InstanceType<typeof OpenAI.APIError>).status).toBe(502);

    fake.enqueue({ status: 400, errorType: 'invalid_request_error', errorMessage: 'prompt is too long' });
    const rejected = await ask().catch((e: unknown) => e);
    expect(rejected).toBeInstanceOf(OpenAI.BadRequestError);
  });

  it('refuses a request Anthropic cannot express with a 400, before anything is held or sent', async () => {
    const takes = creditStats(h.app.deps).takes;
    const refused = await client.chat.completions
      .create({ model: MODEL, n: 2, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).message).toContain(
      'Anthropic models answer one choice per request (n)',
    );
    expect(fake.requests).toHaveLength(0);
    expect(creditStats(h.app.deps).takes).toBe(takes); // no lease taken: a hold would have been the first write
  });
});
