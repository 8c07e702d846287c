import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../test/fakes/llm-upstream.ts';
import {
  acmeProvider,
  type FakeOAuthProvider,
  providersDirEnv,
  startFakeOAuthProvider,
} from '../../test/fakes/oauth-provider.ts';
import { call, createHarness, createUser, FAKE_MODELS, type TestHarness } from '../../test/harness.ts';
import { connectAcme } from '../modules/connections/test-support.ts';

/** A span as OTLP/JSON carries it. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

/** A loopback OTLP/HTTP collector: keeps the spans it receives (the exporter posts OTLP/JSON). */
async function startCollector() {
  const spans: OtlpSpan[] = [];
  const bodies: string[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      contentTypes.push(String(req.headers['content-type']));
      bodies.push(body);
      const parsed = JSON.parse(body) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
      };
      for (const rs of parsed.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, spans, bodies, contentTypes, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const attrs = (span: OtlpSpan) =>
  Object.fromEntries(span.attributes.map((a) => [a.key, Object.values(a.value)[0]])) as Record<string, unknown>;

describe('OpenTelemetry tracing', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let llm: FakeLlm;
  let acme: FakeOAuthProvider;
  beforeAll(async () => {
    collector = await startCollector();
    llm = await startFakeLlm();
    acme = await startFakeOAuthProvider();
  });
  afterAll(async () => {
    await llm.close();
    await acme.close();
    await collector.close();
  });

  /** A traced service on loopback; closing it flushes its spans to the collector. */
  async function tracedService(): Promise<{ h: TestHarness; base: string }> {
    collector.spans.length = 0;
    collector.bodies.length = 0;
    const h = await createHarness({
      ...providersDirEnv([{ fake: acme, definition: acmeProvider(acme.url) }]),
      LLM_BASE_URL: llm.url,
      LLM_API_KEY: 'upstream-secret-key',
      LLM_MODELS: FAKE_MODELS,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_SERVICE_NAME: 'switchboard-test',
    });
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    return { h, base: `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}` };
  }

  it('exports a server span and its GenAI upstream span, continuing the caller trace and sending it upstream', async () => {
    const { h, base } = await tracedService();
    const user = await createUser(h.app);
    const pat = await user.pat(['llm-all']);
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const client = new OpenAI({
      baseURL: `${base}/api/v1`,
      apiKey: pat,
      maxRetries: 0,
      defaultHeaders: { traceparent: `00-${callerTrace}-${callerSpan}-01` },
    });
    llm.enqueue({ content: 'hello there', usage: { prompt: 11, completion: 2 } });
    const answer = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'a private prompt' }],
    });
    expect(answer.choices[0]?.message.content).toBe('hello there');
    await h.close(); // flushes the exporter

    expect(collector.contentTypes.every((t) => t.startsWith('application/json'))).toBe(true);
    const server = collector.spans.find((s) => s.name === 'POST /api/v1/chat/completions');
    expect(server).toBeDefined();
    if (!server) return;
    expect(server.kind).toBe(2); // SERVER
    expect(server.traceId).toBe(callerTrace);
    expect(server.parentSpanId).toBe(callerSpan);
    expect(attrs(server)).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/api/v1/chat/completions',
      'http.response.status_code': 200,
    });

    const upstream = collector.spans.find((s) => s.parentSpanId === server.spanId && s.kind === 3); // CLIENT
    expect(upstream?.name).toBe('chat fake-model');
    expect(upstream && attrs(upstream)).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'fake-model',
      'gen_ai.usage.input_tokens': 11,
      'gen_ai.usage.output_tokens': 2,
    });
    // The upstream got the LLM span's context.
    const sent = llm.requests.at(-1)?.headers.traceparent;
    expect(sent).toBe(`00-${callerTrace}-${upstream?.spanId}-01`);

    // Nothing secret left the service: no token, no upstream key, no prompt or answer.
    const exported = collector.bodies.join('\n');
    for (const secret of [pat, 'upstream-secret-key', 'a private prompt', 'hello there', user.sessionToken])
      expect(exported).not.toContain(secret);
    expect(exported.toLowerCase()).not.toContain('authorization');
  });

  it('exports an agent chat as request → agent steps → LLM calls and the tool call, with no secret', async () => {
    const { h } = await tracedService();
    const user = await createUser(h.app);
    await connectAcme(h.app, user);
    const made = await call(h.app, 'POST', '/api/v1/agents', { token: user.sessionToken, body: { name: 'Helper' } });
    expect(made.statusCode, made.body).toBe(201);
    const agentId = (made.json() as { id: string }).id;
    llm.enqueue(
      { toolCalls: [{ name: 'acme_get_item', arguments: { id: 'item-1' } }] },
      { content: 'Item 1 is fine.' },
    );
    const res = await call(h.app, 'POST', `/api/v1/agents/${agentId}/chat/completions`, {
      token: user.sessionToken,
      body: { messages: [{ role: 'user', content: 'Check item 1' }] },
    });
    expect(res.statusCode, res.body).toBe(200);
    await h.close();

    const server = collector.spans.find((s) => s.name === 'POST /api/v1/agents/:agentId/chat/completions');
    expect(server?.kind).toBe(2);
    const steps = collector.spans
      .filter((s) => s.name.startsWith('invoke_agent step'))
      .sort((a, b) => a.name.localeCompare(b.name));
    expect(steps.map((s) => s.name)).toEqual(['invoke_agent step 1', 'invoke_agent step 2']);
    for (const step of steps) {
      expect(step.parentSpanId).toBe(server?.spanId);
      expect(step.traceId).toBe(server?.traceId);
      // Each step's LLM call is its child.
      expect(
        collector.spans.filter((s) => s.parentSpanId === step.spanId && s.name === 'chat fake-model'),
      ).toHaveLength(1);
    }
    const tool = collector.spans.find((s) => s.name === 'execute_tool acme_get_item');
    expect(tool?.parentSpanId).toBe(steps[0]?.spanId);
    expect(tool && attrs(tool)).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'acme_get_item',
    });

    // The provider's API got the tool span's context.
    expect(acme.apiRequests.map((r) => r.traceparent)).toEqual([`00-${server?.traceId}-${tool?.spanId}-01`]);

    const exported = collector.bodies.join('\n');
    for (const secret of [user.sessionToken, 'Check item 1', 'Item 1 is fine.', 'item-1'])
      expect(exported).not.toContain(secret);
    expect(exported.toLowerCase()).not.toContain('authorization');
  });
});
