import { and, eq, inArray } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { FakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { call, createUser, fakeLlmSuite, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { creditTransactions } from '../../db/schema/index.ts';
import { EXECUTE_CODE_LIMITS } from './agent-tools.ts';

/** The `execute-code` built-in group, used by an agent through the scripted fake LLM upstream. */
describe('execute-code', () => {
  let h: TestHarness;
  let llm: FakeLlm;

  fakeLlmSuite((s) => ({ h, llm } = s));

  const as = (u: TestUser) => ({ token: u.sessionToken });
  const makeAgent = async (u: TestUser, groups: string[]) => {
    const res = await call(h.app, 'POST', '/api/v1/agents', {
      ...as(u),
      body: { name: 'Coder', enabledBuiltInTools: groups },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().id as string;
  };
  const chat = async (u: TestUser, agent: string, content: string) => {
    const res = await call(h.app, 'POST', `/api/v1/agents/${agent}/chat/completions`, {
      ...as(u),
      body: { messages: [{ role: 'user', content }] },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res;
  };
  /** What the model read back from the tool call of its first step. */
  const toolOutput = (request: number) => {
    const messages = llm.requests[request]?.messages ?? [];
    const tool = messages.find((m) => m.role === 'tool');
    const text = String(tool?.content ?? '');
    return JSON.parse(text.slice(text.indexOf('\n') + 1, text.lastIndexOf('\n'))) as Record<string, unknown>;
  };
  // Charges are written after the answer, with the next batch: wait for it before reading the books.
  const sandboxRows = async (u: TestUser) => {
    await h.app.deps.background.drain();
    return h.database.db
      .select()
      .from(creditTransactions)
      .where(and(eq(creditTransactions.accountId, u.account.id), eq(creditTransactions.type, 'sandbox')));
  };

  it('the agent runs JavaScript; the model reads the result, its output cut; the run is billed', async () => {
    const u = await createUser(h.app);
    const agent = await makeAgent(u, ['execute-code']);
    llm.enqueue(
      {
        toolCalls: [
          {
            name: 'execute-code',
            arguments: { language: 'javascript', code: 'console.log("x".repeat(20000)); return 6 * 7;' },
          },
        ],
      },
      { content: 'The answer is 42.' },
    );
    const res = await chat(u, agent, 'What is six times seven? Compute it.');
    expect(res.json().choices[0].message.content).toBe('The answer is 42.');
    // The model was offered the tool.
    expect(llm.requests[0]?.tools?.map((t) => t.function.name)).toContain('execute-code');
    const seen = toolOutput(1);
    expect(seen).toMatchObject({ result: 42, error: null, creditsCharged: 2 });
    expect(String(seen.stdout)).toHaveLength(EXECUTE_CODE_LIMITS.stdout + '\n[cut: 12001 more characters]'.length);
    expect(String(seen.stdout)).toMatch(/\[cut: 12001 more characters\]$/);
    const rows = await sandboxRows(u);
    expect(rows.map((r) => [r.amount, r.description])).toEqual([[-2, 'Agent execute-code (javascript, 1 s)']]);
    // What the chat says it cost is what the books hold: both model calls and the sandbox run.
    const all = await h.database.db
      .select()
      .from(creditTransactions)
      .where(
        and(eq(creditTransactions.accountId, u.account.id), inArray(creditTransactions.type, ['agent', 'sandbox'])),
      );
    expect(all).toHaveLength(3);
    expect(Number(res.headers['x-credits-consumed'])).toBe(-all.reduce((sum, r) => sum + r.amount, 0));
  });

  it('Python too, and a failing program is an answer the model reads, not a failed chat', async () => {
    const u = await createUser(h.app);
    const agent = await makeAgent(u, ['execute-code']);
    llm.enqueue(
      {
        toolCalls: [
          { name: 'execute-code', arguments: { language: 'python', code: 'print("sum"); result = sum(range(10))' } },
        ],
      },
      { toolCalls: [{ name: 'execute-code', arguments: { language: 'javascript', code: 'throw new Error("nope")' } }] },
      { content: 'Done.' },
    );
    await chat(u, agent, 'Add the numbers below ten.');
    expect(toolOutput(1)).toMatchObject({ stdout: 'sum\n', result: 45, error: null, creditsCharged: 4 });
    const messages = llm.requests[2]?.messages ?? [];
    const second = String(messages.filter((m) => m.role === 'tool').at(-1)?.content);
    expect(second).toContain('"error":{"name":"Error","message":"nope"}');
    expect((await sandboxRows(u)).map((r) => r.amount).sort((a, b) => a - b)).toEqual([-4, -2]);
  }, 90_000);

  it('is offered only when the group is enabled', async () => {
    const u = await createUser(h.app);
    const agent = await makeAgent(u, ['agent-memory']);
    llm.enqueue({ content: 'hi' });
    await chat(u, agent, 'hello');
    expect(llm.requests[0]?.tools?.map((t) => t.function.name) ?? []).not.toContain('execute-code');
  });
});
