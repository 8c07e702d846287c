import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { beforeEach, describe, expect, it } from 'vitest';
import type { FakeAnthropic } from '../../../test/fakes/anthropic.ts';
import type { FakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, gatewaySuite, settledBalance, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { accounts } from '../../db/schema/index.ts';
import { MAX_EMBEDDING_INPUTS } from './schema.ts';

// fake-embed: 1 credit per input token, easy to read in assertions.
const MODELS = 'fake-model=1000000/2000000,fake-embed=1000000/0';

describe('Embeddings (/api/v1/embeddings) through the real openai client', () => {
  let fake: FakeLlm;
  let h: TestHarness;
  let base: string;
  let user: TestUser;
  let pat: string;
  let client: OpenAI;

  let anthropic: FakeAnthropic;
  gatewaySuite(MODELS, (s) => ({ h, llm: fake, anthropic, base, user, pat } = s));
  beforeEach(() => {
    client = new OpenAI({ baseURL: `${base}/api/v1`, apiKey: pat, maxRetries: 0 });
  });
  const balance = () => settledBalance(h, user.account.id);

  it('passes embeddings through to the OpenAI-compatible upstream and bills the input tokens', async () => {
    const { data, response } = await client.embeddings
      .create({ model: 'fake-embed', input: ['one two three', 'four five'], encoding_format: 'float' })
      .withResponse();
    expect(data.model).toBe('fake-embed');
    expect(data.data.map((d) => d.embedding)).toEqual([
      [0, 0.5, -0.25],
      [1, 0.5, -0.25],
    ]);
    expect(data.usage).toEqual({ prompt_tokens: 5, total_tokens: 5 });
    expect(response.headers.get('x-credits-consumed')).toBe('5');
    expect(response.headers.get('x-credits-remaining')).toBe('99995');
    expect(await balance()).toBe(99995);
    expect(fake.requests[0]).toMatchObject({ model: 'fake-embed', input: ['one two three', 'four five'] });
    expect(fake.requests[0]?.headers.authorization).toBeUndefined(); // no LLM_API_KEY set
  });

  it("answers 404 model_not_found in OpenAI's shape where no upstream serves the model", async () => {
    for (const model of ['text-embedding-9', 'claude-haiku-4-5']) {
      const err = await client.embeddings.create({ model, input: 'hi' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      const apiErr = err as InstanceType<typeof OpenAI.APIError>;
      expect(apiErr.code).toBe('model_not_found');
      expect(apiErr.type).toBe('invalid_request_error');
      expect(apiErr.message).toBe(
        `404 The model "${model}" does not exist or no configured upstream serves embeddings with it: pick an embedding model from GET /api/v1/models, or have the operator list one in LLM_MODELS (e.g. text-embedding-3-small=20000/0) served by an OpenAI-compatible upstream (LLM_BASE_URL)`,
      );
    }
    expect(fake.requests).toHaveLength(0);
    expect(anthropic.requests).toHaveLength(0);
    expect(await balance()).toBe(100000);
  });

  it('bounds the input, needs llm-all, and answers 402 at a zero balance', async () => {
    const tooMany = await call(h.app, 'POST', '/api/v1/embeddings', {
      token: pat,
      body: { model: 'fake-embed', input: Array.from({ length: MAX_EMBEDDING_INPUTS + 1 }, () => 'x') },
    });
    expect(tooMany.statusCode).toBe(422);
    const empty = await call(h.app, 'POST', '/api/v1/embeddings', {
      token: pat,
      body: { model: 'fake-embed', input: [] },
    });
    expect(empty.statusCode).toBe(422);
    const noScope = await call(h.app, 'POST', '/api/v1/embeddings', {
      token: await user.pat(['account']),
      body: { model: 'fake-embed', input: 'x' },
    });
    expect(noScope.statusCode).toBe(403);
    await h.database.db.update(accounts).set({ creditBalance: 0 }).where(eq(accounts.id, user.account.id));
    const broke = await client.embeddings.create({ model: 'fake-embed', input: 'x' }).catch((e: unknown) => e);
    expect((broke as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect(fake.requests).toHaveLength(0);
  });

  guardTests(
    () => h,
    [
      {
        method: 'POST',
        url: '/api/v1/embeddings',
        scopes: ['llm-all'],
        body: { model: 'fake-embed', input: 'x' },
        errorShape: 'openai',
      },
    ],
  );
});
