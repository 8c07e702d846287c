import { Writable } from 'node:stream';
import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { FakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, createUser, fakeLlmSuite, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { buildApp, loggerOptions } from '../../app.ts';
import { accounts, agentTools, creditTransactions } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';
import { TOOL_CODE_MAX_CHARS } from './schema.ts';

const MODELS = 'fake-model=1000000/2000000';
const SECRET = 'sk-live-0123456789-very-secret';

describe('custom tools API and agent links', () => {
  let h: TestHarness;
  let llm: FakeLlm;

  fakeLlmSuite((s) => ({ h, llm } = s), { LLM_MODELS: MODELS });

  const as = (u: TestUser) => ({ token: u.sessionToken });
  const weather = {
    name: 'weather_lookup',
    description: 'Current weather of a city',
    code: "const r = await fetch('https://api.example/w?q=' + args.city + '&key=' + secrets.API_KEY);\nreturn await r.json();",
    language: 'javascript',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    requiredSecrets: ['API_KEY'],
  };
  const makeTool = async (u: TestUser, body: Record<string, unknown> = {}, app: App = h.app) => {
    const res = await call(app, 'POST', '/api/v1/tools', { ...as(u), body: { ...weather, ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string; name: string };
  };
  const makeAgent = async (u: TestUser, body: Record<string, unknown> = {}, app: App = h.app) => {
    const res = await call(app, 'POST', '/api/v1/agents', { ...as(u), body: { name: 'Helper', ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string };
  };

  describe('tools', () => {
    it('creates, lists, reads, updates and deletes a tool', async () => {
      const u = await createUser(h.app);
      const res = await call(h.app, 'POST', '/api/v1/tools', {
        ...as(u),
        body: { name: 'hello', code: 'return "hi " + args.name;' },
      });
      expect(res.statusCode, res.body).toBe(201);
      const tool = res.json();
      expect(tool).toEqual({
        id: expect.stringMatching(/^tool_/),
        accountId: u.account.id,
        name: 'hello',
        description: '',
        code: 'return "hi " + args.name;',
        language: 'javascript',
        parameters: { type: 'object', properties: {} },
        requiredSecrets: [],
        timeoutMs: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      await makeTool(u);
      const list = await call(h.app, 'GET', '/api/v1/tools?sortBy=name&sortOrder=asc&limit=1', as(u));
      expect(list.statusCode).toBe(200);
      expect(list.json().pagination).toEqual({ page: 1, limit: 1, total: 2, hasMore: true });
      expect(list.json().data[0].name).toBe('hello');
      expect((await call(h.app, 'GET', `/api/v1/tools/${tool.id}`, as(u))).json()).toEqual(tool);

      const updated = await call(h.app, 'PUT', `/api/v1/tools/${tool.id}`, {
        ...as(u),
        body: {
          language: 'typescript',
          code: 'const n: string = args.name; return n;',
          parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
          timeoutMs: 5000,
        },
      });
      expect(updated.statusCode, updated.body).toBe(200);
      expect(updated.json()).toMatchObject({ name: 'hello', language: 'typescript', timeoutMs: 5000 });
      const cleared = await call(h.app, 'PUT', `/api/v1/tools/${tool.id}`, { ...as(u), body: { timeoutMs: null } });
      expect(cleared.json().timeoutMs).toBeNull();

      expect((await call(h.app, 'DELETE', `/api/v1/tools/${tool.id}`, as(u))).statusCode).toBe(204);
      const gone = await call(h.app, 'GET', `/api/v1/tools/${tool.id}`, as(u));
      expect(gone.statusCode).toBe(404);
      expect(gone.json()).toEqual({ error: 'NotFoundError', message: `Tool ${tool.id} not found`, statusCode: 404 });
    });

    it('refuses a bad schema, language, name or size with 422, and a taken name with 409', async () => {
      const u = await createUser(h.app);
      const refused = async (body: Record<string, unknown>) => {
        const res = await call(h.app, 'POST', '/api/v1/tools', { ...as(u), body: { ...weather, ...body } });
        expect(res.statusCode, res.body).toBe(422);
        return res.json() as { error: string; message: string };
      };
      expect((await refused({ parameters: { type: 'string' } })).message).toBe(
        'parameters must be a JSON Schema with "type": "object"',
      );
      expect(
        (await refused({ parameters: { type: 'object', properties: { city: { type: 'town' } } } })).message,
      ).toMatch(/^parameters is not a valid JSON Schema: /);
      expect((await refused({ parameters: { type: 'object', properties: { a: { pattern: '(' } } } })).message).toMatch(
        /^parameters is not a valid JSON Schema: /,
      );
      expect((await refused({ parameters: { type: 'object', required: 'city' } })).error).toBe('ValidationError');
      await refused({ language: 'ruby' });
      await refused({ code: '' });
      await refused({ code: 'x'.repeat(TOOL_CODE_MAX_CHARS + 1) });
      await refused({ name: 'has space' });
      await refused({ requiredSecrets: ['not-an-identifier'] });
      expect((await refused({ name: 'memory-save' })).message).toBe(
        'The name memory-save belongs to a built-in tool: choose another',
      );
      expect((await refused({ name: 'skill-load' })).message).toContain('belongs to a built-in tool');
      const mine = await makeTool(u);
      // Renaming to a built-in tool's name is refused the same way.
      const renamed = await call(h.app, 'PUT', `/api/v1/tools/${mine.id}`, { ...as(u), body: { name: 'tasks-list' } });
      expect(renamed.statusCode).toBe(422);
      expect(renamed.json().message).toBe('The name tasks-list belongs to a built-in tool: choose another');
      const taken = await call(h.app, 'POST', '/api/v1/tools', { ...as(u), body: weather });
      expect(taken.statusCode).toBe(409);
      expect(taken.json().message).toBe('A tool named "weather_lookup" already exists');
      // Another account may use the same name.
      await makeTool(await createUser(h.app));
    });

    it('agents-use may not read or write tools; it may read the built-in groups and links', async () => {
      const u = await createUser(h.app);
      const tool = await makeTool(u);
      const use = await u.pat(['agents-use']);
      for (const [method, url] of [
        ['GET', '/api/v1/tools'],
        ['GET', `/api/v1/tools/${tool.id}`],
        ['DELETE', `/api/v1/tools/${tool.id}`],
      ] as const) {
        const res = await call(h.app, method, url, { token: use });
        expect(res.statusCode, url).toBe(403);
        expect(res.json().message).toBe('Missing required scope: agents-all');
      }
      expect((await call(h.app, 'GET', '/api/v1/tools/built-in', { token: use })).statusCode).toBe(200);
    });

    it('GET /tools/built-in lists the groups with their tools and input schemas', async () => {
      const u = await createUser(h.app);
      const res = await call(h.app, 'GET', '/api/v1/tools/built-in', as(u));
      expect(res.statusCode, res.body).toBe(200);
      const groups = res.json().data as {
        id: string;
        available: boolean;
        tools: { name: string; parameters: Record<string, unknown>; mode: string }[];
      }[];
      expect(groups.map((g) => g.id)).toEqual([
        'provider-tools',
        'skills',
        'agent-memory',
        'account-tasks',
        'execute-code',
        'knowledge-base',
      ]);
      const byId = new Map(groups.map((g) => [g.id, g]));
      expect(byId.get('skills')).toMatchObject({ available: true, tools: [{ name: 'skill-load', mode: 'read' }] });
      expect(byId.get('skills')?.tools[0]?.parameters).toMatchObject({ type: 'object', required: ['name'] });
      expect(byId.get('agent-memory')?.tools.map((t) => t.name)).toEqual([
        'memory-save',
        'memory-search',
        'memory-forget',
      ]);
      expect(byId.get('knowledge-base')?.tools.map((t) => t.name)).toContain('knowledge-search');
      // No connections: no provider tools.
      expect(byId.get('provider-tools')).toMatchObject({ available: true, tools: [] });
      expect(byId.get('account-tasks')).toMatchObject({ available: true });
      expect(byId.get('account-tasks')?.tools.map((t) => t.name)).toEqual([
        'tasks-list',
        'tasks-create',
        'tasks-update',
        'tasks-delete',
      ]);
      expect(byId.get('execute-code')).toMatchObject({ available: true, tools: [{ name: 'execute-code' }] });
    });
  });

  describe('generate-code', () => {
    it('answers code from the default model once it parses, sending a broken first answer back', async () => {
      const u = await createUser(h.app);
      llm.enqueue(
        {
          content: JSON.stringify({
            code: 'return args.a +;',
            parameters: { type: 'object', properties: { a: { type: 'number' } } },
            requiredSecrets: [],
          }),
        },
        {
          content: `Here it is:\n\`\`\`json\n${JSON.stringify({
            code: 'const a: number = args.a;\nreturn a * 2;',
            parameters: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] },
            requiredSecrets: ['TOKEN', 'TOKEN'],
          })}\n\`\`\``,
        },
      );
      const res = await call(h.app, 'POST', '/api/v1/tools/generate-code', {
        ...as(u),
        body: { description: 'Double a number', language: 'typescript' },
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({
        code: 'const a: number = args.a;\nreturn a * 2;',
        parameters: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] },
        requiredSecrets: ['TOKEN'],
      });
      expect(llm.requests).toHaveLength(2);
      expect(llm.requests[0]?.messages[0]?.content).toContain('BODY of an async function');
      expect(llm.requests[0]?.messages[1]?.content).toBe('Double a number');
      const retry = llm.requests[1]?.messages.at(-1)?.content ?? '';
      expect(retry).toMatch(/^The code does not parse: line 1:/);
      await h.app.deps.background.drain();
      const settled = await h.database.db
        .select()
        .from(creditTransactions)
        .where(and(eq(creditTransactions.accountId, u.account.id), eq(creditTransactions.type, 'llm')));
      expect(settled.map((c) => c.description)).toEqual(['Tools: code generation', 'Tools: code generation']);
      const spent = -settled.reduce((a, c) => a + c.amount, 0);
      expect([res.headers['x-credits-consumed'], res.headers['x-credits-remaining']]).toEqual([
        String(spent),
        String(100_000 - spent),
      ]);
    });

    // Python code is parsed by Python in the sandbox: two runs that each load Pyodide (seconds of CPU, many more
    // on a machine running other suites), hence the longer limit.
    it('keeps the parameters given, and answers 502 when the model never gives usable code', {
      timeout: 120_000,
    }, async () => {
      const u = await createUser(h.app);
      const parameters = { type: 'object', properties: { q: { type: 'string' } } };
      llm.enqueue(
        { content: JSON.stringify({ code: 'def (:\n  pass', parameters: {}, requiredSecrets: [] }) },
        { content: JSON.stringify({ code: 'print(args["q"])\nresult = 1', parameters: {}, requiredSecrets: [] }) },
      );
      const py = await call(h.app, 'POST', '/api/v1/tools/generate-code', {
        ...as(u),
        body: { description: 'Echo', language: 'python', parameters },
      });
      expect(py.statusCode, py.body).toBe(200);
      expect(py.json()).toEqual({ code: 'print(args["q"])\nresult = 1', parameters, requiredSecrets: [] });
      expect(llm.requests[0]?.messages[1]?.content).toContain(JSON.stringify(parameters));
      // Python is parsed by Python itself, in the sandbox: the broken first answer went back to the model.
      expect(llm.requests[1]?.messages.at(-1)?.content).toMatch(/^The code does not parse: SyntaxError: /);

      llm.enqueue({ content: 'I cannot do that.' }, { content: JSON.stringify({ code: 'return (', parameters }) });
      const bad = await call(h.app, 'POST', '/api/v1/tools/generate-code', {
        ...as(u),
        body: { description: 'Anything' },
      });
      expect(bad.statusCode, bad.body).toBe(502);
      expect(bad.json().message).toMatch(/^The model did not produce a usable answer: The code does not parse/);
      const badSchema = await call(h.app, 'POST', '/api/v1/tools/generate-code', {
        ...as(u),
        body: { description: 'Anything', parameters: { type: 'array' } },
      });
      expect(badSchema.statusCode).toBe(422);
    });

    it('a model answering parameters nested thousands of levels deep gets a 502, not a 500', async () => {
      const u = await createUser(h.app);
      const deep = `{"code":"return 1;","parameters":{"type":"object","x":${'['.repeat(10_000)}${']'.repeat(10_000)}},"requiredSecrets":[]}`;
      llm.enqueue({ content: deep }, { content: deep });
      const res = await call(h.app, 'POST', '/api/v1/tools/generate-code', { ...as(u), body: { description: 'x' } });
      expect(res.statusCode, res.body).toBe(502);
      expect(res.json().error).toBe('BadGatewayError');
    });
  });

  describe('links', () => {
    it('links a tool, sets its secrets (sealed, never returned), and unlinks it', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const tool = await makeTool(u);
      const available = await call(h.app, 'GET', `/api/v1/agents/${agent.id}/tools/available`, as(u));
      expect(available.json()).toMatchObject({
        data: [{ id: tool.id, name: 'weather_lookup', requiredSecrets: ['API_KEY'] }],
        pagination: { total: 1 },
      });
      expect(available.json().data[0].code).toBeUndefined();

      const linked = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/tools`, {
        ...as(u),
        body: { toolId: tool.id },
      });
      expect(linked.statusCode, linked.body).toBe(201);
      expect(linked.json()).toEqual({
        agentId: agent.id,
        toolId: tool.id,
        tool: {
          id: tool.id,
          name: 'weather_lookup',
          description: 'Current weather of a city',
          language: 'javascript',
          requiredSecrets: ['API_KEY'],
        },
        secrets: [{ name: 'API_KEY', set: false }],
        missingSecrets: ['API_KEY'],
        ready: false,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      const again = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/tools`, {
        ...as(u),
        body: { toolId: tool.id },
      });
      expect(again.statusCode).toBe(409);
      expect((await call(h.app, 'GET', `/api/v1/agents/${agent.id}/tools/available`, as(u))).json().data).toEqual([]);

      const patched = await call(h.app, 'PATCH', `/api/v1/agents/${agent.id}/tools/${tool.id}`, {
        ...as(u),
        body: { secrets: { API_KEY: SECRET } },
      });
      expect(patched.statusCode, patched.body).toBe(200);
      expect(patched.json()).toMatchObject({
        secrets: [{ name: 'API_KEY', set: true }],
        missingSecrets: [],
        ready: true,
      });
      expect(patched.body).not.toContain(SECRET);
      const listed = await call(h.app, 'GET', `/api/v1/agents/${agent.id}/tools`, as(u));
      expect(listed.json().data).toHaveLength(1);
      expect(listed.json().data[0]).toMatchObject({ ready: true, secrets: [{ name: 'API_KEY', set: true }] });
      expect(listed.body).not.toContain(SECRET);
      // Stored sealed: the row holds no plaintext, and the ciphertext opens only for this link.
      const [row] = await h.database.db.select().from(agentTools).where(eq(agentTools.toolId, tool.id));
      expect(row?.secretsEnc).toMatch(/^v1\./);
      expect(JSON.stringify(row)).not.toContain(SECRET);
      expect(h.keyRing.decrypt(row?.secretsEnc ?? '', `agent_tools:${agent.id}:${tool.id}`)).toBe(
        JSON.stringify({ API_KEY: SECRET }),
      );
      expect(() => h.keyRing.decrypt(row?.secretsEnc ?? '', `agent_tools:${agent.id}:tool_other`)).toThrow();

      const unknown = await call(h.app, 'PATCH', `/api/v1/agents/${agent.id}/tools/${tool.id}`, {
        ...as(u),
        body: { secrets: { OTHER: 'x' } },
      });
      expect(unknown.statusCode).toBe(422);
      expect(unknown.json().message).toBe('Secrets the tool does not declare: OTHER');
      const removed = await call(h.app, 'PATCH', `/api/v1/agents/${agent.id}/tools/${tool.id}`, {
        ...as(u),
        body: { secrets: { API_KEY: null } },
      });
      expect(removed.json()).toMatchObject({ missingSecrets: ['API_KEY'], ready: false });

      expect((await call(h.app, 'DELETE', `/api/v1/agents/${agent.id}/tools/${tool.id}`, as(u))).statusCode).toBe(204);
      const twice = await call(h.app, 'DELETE', `/api/v1/agents/${agent.id}/tools/${tool.id}`, as(u));
      expect(twice.statusCode).toBe(404);
      expect((await call(h.app, 'GET', `/api/v1/agents/${agent.id}/tools`, as(u))).json().data).toEqual([]);
    });

    it('concurrent secret changes of one link all stick (the link is locked while one is applied)', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u);
      const names = ['A', 'B', 'C', 'D', 'E', 'F'];
      const tool = await makeTool(u, { requiredSecrets: names });
      await call(h.app, 'POST', `/api/v1/agents/${agent.id}/tools`, { ...as(u), body: { toolId: tool.id } });
      const results = await Promise.all(
        names.map((n) =>
          call(h.app, 'PATCH', `/api/v1/agents/${agent.id}/tools/${tool.id}`, {
            ...as(u),
            body: { secrets: { [n]: `value-of-${n}` } },
          }),
        ),
      );
      expect(results.map((r) => r.statusCode)).toEqual(names.map(() => 200));
      const link = (await call(h.app, 'GET', `/api/v1/agents/${agent.id}/tools`, as(u))).json().data[0];
      expect(link).toMatchObject({ missingSecrets: [], ready: true });
      const [row] = await h.database.db.select().from(agentTools).where(eq(agentTools.toolId, tool.id));
      expect(JSON.parse(h.keyRing.decrypt(row?.secretsEnc ?? '', `agent_tools:${agent.id}:${tool.id}`))).toEqual(
        Object.fromEntries(names.map((n) => [n, `value-of-${n}`])),
      );
    });

    it("another account's tool cannot be linked; deleting a tool removes its links", async () => {
      const [u, other] = [await createUser(h.app), await createUser(h.app)];
      const agent = await makeAgent(u);
      const theirs = await makeTool(other);
      const res = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/tools`, {
        ...as(u),
        body: { toolId: theirs.id },
      });
      expect(res.statusCode).toBe(404);
      const mine = await makeTool(u, { requiredSecrets: [] });
      expect(
        (await call(h.app, 'POST', `/api/v1/agents/${agent.id}/tools`, { ...as(u), body: { toolId: mine.id } }))
          .statusCode,
      ).toBe(201);
      expect((await call(h.app, 'DELETE', `/api/v1/tools/${mine.id}`, as(u))).statusCode).toBe(204);
      expect((await call(h.app, 'GET', `/api/v1/agents/${agent.id}/tools`, as(u))).json().data).toEqual([]);
    });

    it('a linked tool is offered to the model only once its secrets are set', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u, { enabledBuiltInTools: [] });
      const tool = await makeTool(u);
      await call(h.app, 'POST', `/api/v1/agents/${agent.id}/tools`, { ...as(u), body: { toolId: tool.id } });
      const chat = async () => {
        llm.enqueue({ content: 'Fine.' });
        const res = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
          ...as(u),
          body: { messages: [{ role: 'user', content: 'Weather in Paris?' }] },
        });
        expect(res.statusCode, res.body).toBe(200);
        return (llm.requests.at(-1)?.tools ?? []).map((t) => t.function.name);
      };
      expect(await chat()).toEqual([]);
      await call(h.app, 'PATCH', `/api/v1/agents/${agent.id}/tools/${tool.id}`, {
        ...as(u),
        body: { secrets: { API_KEY: SECRET } },
      });
      expect(await chat()).toEqual(['weather_lookup']);
      const offered = llm.requests.at(-1)?.tools?.[0] as unknown as { function: Record<string, unknown> };
      expect(offered.function).toEqual({
        name: 'weather_lookup',
        description: 'Current weather of a city',
        parameters: weather.parameters,
      });
    });
  });

  describe('test runs', () => {
    const echo = {
      name: 'echo_upper',
      description: 'Upper-cases a text',
      code: 'console.log("using " + secrets.TOKEN);\nreturn { text: args.text.toUpperCase(), token: secrets.TOKEN };',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      requiredSecrets: ['TOKEN'],
    };

    it('runs the tool once: arguments in, value out, secrets cut out, billed as a sandbox run', async () => {
      const u = await createUser(h.app);
      const tool = await makeTool(u, echo);
      const res = await call(h.app, 'POST', `/api/v1/tools/${tool.id}/test`, {
        ...as(u),
        body: { arguments: { text: 'hello' }, secrets: { TOKEN: SECRET } },
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({
        stdout: 'using [secret]\n',
        stderr: '',
        result: { text: 'HELLO', token: '[secret]' },
        error: null,
        durationMs: expect.any(Number),
        creditsCharged: 2,
      });
      // Billed like every credit-consuming answer (issue 46): its cost and the balance after it.
      expect([res.headers['x-credits-consumed'], res.headers['x-credits-remaining']]).toEqual(['2', '99998']);
      expect(res.body).not.toContain(SECRET);
      await h.app.deps.background.drain();
      const charges = await h.database.db
        .select()
        .from(creditTransactions)
        .where(and(eq(creditTransactions.accountId, u.account.id), eq(creditTransactions.type, 'sandbox')));
      expect(charges.map((c) => [c.amount, c.description])).toEqual([[-2, 'Tool echo_upper (javascript, 1 s)']]);

      // The code's own fault is the run's error, still a 200.
      const thrown = await makeTool(u, { ...echo, name: 'thrower', code: 'throw new TypeError("no " + args.text);' });
      const failed = await call(h.app, 'POST', `/api/v1/tools/${thrown.id}/test`, {
        ...as(u),
        body: { arguments: { text: 'luck' } },
      });
      expect(failed.statusCode).toBe(200);
      expect(failed.json()).toMatchObject({ result: null, error: { name: 'TypeError', message: 'no luck' } });
    });

    it('runs Python: args and secrets are dicts, result is the value, prints are stdout', async () => {
      const u = await createUser(h.app);
      const tool = await makeTool(u, {
        ...echo,
        name: 'py_upper',
        language: 'python',
        code: 'print("using", secrets["TOKEN"])\nresult = {"text": args["text"].upper()}',
      });
      const res = await call(h.app, 'POST', `/api/v1/tools/${tool.id}/test`, {
        ...as(u),
        body: { arguments: { text: 'snake' }, secrets: { TOKEN: SECRET } },
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ stdout: 'using [secret]\n', result: { text: 'SNAKE' }, error: null });
      expect(res.json().creditsCharged % 4).toBe(0);
    });

    it('refuses arguments that miss the schema and undeclared secrets (422), and a zero balance (402)', async () => {
      const u = await createUser(h.app);
      const tool = await makeTool(u, echo);
      const bad = await call(h.app, 'POST', `/api/v1/tools/${tool.id}/test`, {
        ...as(u),
        body: { arguments: { text: 3 } },
      });
      expect(bad.statusCode).toBe(422);
      expect(bad.json().message).toBe("The arguments do not fit the tool's parameters: arguments/text must be string");
      const undeclared = await call(h.app, 'POST', `/api/v1/tools/${tool.id}/test`, {
        ...as(u),
        body: { arguments: { text: 'x' }, secrets: { OTHER: SECRET } },
      });
      expect(undeclared.statusCode).toBe(422);
      expect(undeclared.json().message).toBe('Secrets the tool does not declare: OTHER');
      expect(undeclared.body).not.toContain(SECRET);
      await h.database.db.update(accounts).set({ creditBalance: 0 }).where(eq(accounts.id, u.account.id));
      const broke = await call(h.app, 'POST', `/api/v1/tools/${tool.id}/test`, {
        ...as(u),
        body: { arguments: { text: 'x' } },
      });
      expect(broke.statusCode).toBe(402);
      expect(broke.json().error).toBe('CreditsExhaustedError');
    });

    it('an agent calls a linked tool and loads a skill in one conversation', async () => {
      const u = await createUser(h.app);
      const agent = await makeAgent(u, { enabledBuiltInTools: ['skills'] });
      const tool = await makeTool(u, echo);
      await call(h.app, 'POST', `/api/v1/agents/${agent.id}/tools`, {
        ...as(u),
        body: { toolId: tool.id, secrets: { TOKEN: SECRET } },
      });
      const skill = await call(h.app, 'POST', '/api/v1/skills', {
        ...as(u),
        body: {
          name: 'Shouting',
          description: 'How to shout',
          prompt: 'Upper-case the text with echo_upper, then add three !',
        },
      });
      await call(h.app, 'POST', `/api/v1/agents/${agent.id}/skills`, { ...as(u), body: { skillId: skill.json().id } });

      llm.enqueue(
        { toolCalls: [{ name: 'skill-load', arguments: { name: 'Shouting' } }] },
        { toolCalls: [{ name: 'echo_upper', arguments: { text: 'hi there' } }] },
        { content: 'HI THERE!!!' },
      );
      const res = await call(h.app, 'POST', `/api/v1/agents/${agent.id}/chat/completions`, {
        ...as(u),
        body: { messages: [{ role: 'user', content: 'Shout "hi there"' }] },
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().choices[0].message.content).toBe('HI THERE!!!');
      expect(llm.requests[0]?.messages[0]?.content).toContain('- Shouting: How to shout');
      expect(llm.requests[0]?.tools?.map((t) => t.function.name).sort()).toEqual(['echo_upper', 'skill-load']);
      const toolResults = (llm.requests[2]?.messages ?? []).filter((m) => m.role === 'tool').map((m) => m.content);
      expect(toolResults[0]).toContain('Upper-case the text with echo_upper');
      expect(toolResults[1]).toContain('"text":"HI THERE"');
      expect(toolResults[1]).toContain('"stdout":"using [secret]\\n"');
      expect(JSON.stringify(llm.requests)).not.toContain(SECRET);
      // The conversation stored both steps; the run was billed to the owner as a sandbox run.
      const conversationId = res.headers['x-conversation-id'];
      const stored = await call(
        h.app,
        'GET',
        `/api/v1/agents/${agent.id}/conversations/${conversationId}/messages`,
        as(u),
      );
      expect(
        stored
          .json()
          .data.filter((m: { role: string }) => m.role === 'tool')
          .map((m: { toolName: string }) => m.toolName),
      ).toEqual(['skill-load', 'echo_upper']);
      expect(stored.body).not.toContain(SECRET);
      await h.app.deps.background.drain();
      const sandbox = await h.database.db
        .select()
        .from(creditTransactions)
        .where(and(eq(creditTransactions.accountId, u.account.id), eq(creditTransactions.type, 'sandbox')));
      expect(sandbox).toHaveLength(1);
    });
  });

  it('secret values never reach the logs, even at trace level', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const app = await buildApp({
      config: h.config,
      database: h.database,
      keyRing: h.keyRing,
      logger: { ...(loggerOptions('trace') as object), stream } as never,
    });
    try {
      const u = await createUser(app);
      const agent = await makeAgent(u, {}, app);
      const tool = await makeTool(u, {}, app);
      const linked = await call(app, 'POST', `/api/v1/agents/${agent.id}/tools`, {
        ...as(u),
        body: { toolId: tool.id, secrets: { API_KEY: SECRET } },
      });
      expect(linked.statusCode).toBe(201);
      expect(linked.body).not.toContain(SECRET);
      await call(app, 'PATCH', `/api/v1/agents/${agent.id}/tools/${tool.id}`, {
        ...as(u),
        body: { secrets: { API_KEY: `${SECRET}-2` } },
      });
      // A refused body is not echoed back either.
      const refused = await call(app, 'PATCH', `/api/v1/agents/${agent.id}/tools/${tool.id}`, {
        ...as(u),
        body: { secrets: { API_KEY: 42, NOPE: SECRET } },
      });
      expect(refused.statusCode).toBe(422);
      expect(refused.body).not.toContain(SECRET);
      // A test run and an agent's run of the tool, its output carrying the secret.
      const printer = await makeTool(
        u,
        { name: 'printer', code: 'console.log(secrets.API_KEY); return secrets.API_KEY;' },
        app,
      );
      const run = await call(app, 'POST', `/api/v1/tools/${printer.id}/test`, {
        ...as(u),
        body: { arguments: { city: 'x' }, secrets: { API_KEY: SECRET } },
      });
      expect(run.statusCode, run.body).toBe(200);
      expect(run.body).not.toContain(SECRET);
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.join('')).not.toContain(SECRET);
    } finally {
      await app.close();
    }
  });

  let lastToolId = '';
  const agentOf = async (o: TestUser) => (await makeAgent(o)).id;
  const toolOf = async (o: TestUser) => {
    lastToolId = (await makeTool(o, { name: `t${Math.random().toString(36).slice(2, 10)}` })).id;
    return lastToolId;
  };
  const linkedOf = async (o: TestUser) => {
    const agentId = await agentOf(o);
    const toolId = await toolOf(o);
    await call(h.app, 'POST', `/api/v1/agents/${agentId}/tools`, { token: o.sessionToken, body: { toolId } });
    return `/api/v1/agents/${agentId}/tools/${toolId}`;
  };
  const all = ['agents-all' as const];
  const both = ['agents-all' as const, 'agents-use' as const];
  guardTests(
    () => h,
    [
      { method: 'POST', url: '/api/v1/tools', scopes: all, body: { name: 'g', code: 'return 1;' } },
      { method: 'GET', url: '/api/v1/tools', scopes: all },
      { method: 'GET', url: '/api/v1/tools/built-in', scopes: both },
      {
        method: 'POST',
        url: '/api/v1/tools/generate-code',
        scopes: all,
        body: { description: 'x', parameters: { type: 'array' } },
      },
      {
        method: 'GET',
        url: '/api/v1/tools/tool_x',
        scopes: all,
        ownedUrl: async (o) => `/api/v1/tools/${await toolOf(o)}`,
      },
      {
        method: 'PUT',
        url: '/api/v1/tools/tool_x',
        scopes: all,
        body: { description: 'changed' },
        ownedUrl: async (o) => `/api/v1/tools/${await toolOf(o)}`,
      },
      {
        method: 'DELETE',
        url: '/api/v1/tools/tool_x',
        scopes: all,
        ownedUrl: async (o) => `/api/v1/tools/${await toolOf(o)}`,
      },
      {
        method: 'POST',
        url: '/api/v1/tools/tool_x/test',
        scopes: all,
        body: { arguments: {} },
        ownedUrl: async (o) =>
          `/api/v1/tools/${(await makeTool(o, { name: 'one', code: 'return 1;', parameters: { type: 'object' }, requiredSecrets: [] })).id}/test`,
      },
      {
        method: 'GET',
        url: '/api/v1/agents/agt_x/tools',
        scopes: both,
        ownedUrl: async (o) => `/api/v1/agents/${await agentOf(o)}/tools`,
      },
      {
        method: 'GET',
        url: '/api/v1/agents/agt_x/tools/available',
        scopes: both,
        ownedUrl: async (o) => `/api/v1/agents/${await agentOf(o)}/tools/available`,
      },
      {
        method: 'POST',
        url: '/api/v1/agents/agt_x/tools',
        scopes: all,
        body: { toolId: 'tool_x' },
        ownedUrl: async (o) => {
          const agentId = await agentOf(o);
          await toolOf(o);
          return `/api/v1/agents/${agentId}/tools`;
        },
        get validBody() {
          return { toolId: lastToolId };
        },
      },
      {
        method: 'PATCH',
        url: '/api/v1/agents/agt_x/tools/tool_x',
        scopes: all,
        body: { secrets: { API_KEY: 'value' } },
        ownedUrl: linkedOf,
      },
      { method: 'DELETE', url: '/api/v1/agents/agt_x/tools/tool_x', scopes: all, ownedUrl: linkedOf },
    ],
  );
});
