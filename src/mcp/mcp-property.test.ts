import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { call, createUser, fakeLlmSuite, type TestHarness } from '../../test/harness.ts';

/**
 * `POST /mcp` takes JSON-RPC from any client: whatever the message (a method, its params, its id, the protocol
 * version it claims), the answer is a JSON-RPC result or error, a tool error, or a 4xx, never a 5xx.
 */
describe('MCP endpoint, any message', () => {
  let h: TestHarness;
  fakeLlmSuite((s) => ({ h } = s));

  // Where a string belongs, sometimes an object whose toString is not a function (String() throws on it).
  const hostile = fc.constant({ toString: [] });
  const text = fc.oneof(
    { weight: 12, arbitrary: fc.string({ maxLength: 30 }) },
    { weight: 7, arbitrary: fc.constantFrom('', 'use-agent', 'list-connections', 'hi') },
    { weight: 1, arbitrary: fc.constant('\ud800') },
  );
  const anything = fc.oneof(
    text,
    fc.integer(),
    fc.constant(null),
    fc.boolean(),
    hostile,
    fc.array(text, { maxLength: 2 }),
  );
  const params = fc.oneof(
    { weight: 1, arbitrary: anything },
    {
      weight: 4,
      arbitrary: fc.record(
        {
          name: fc.oneof(text, hostile),
          arguments: fc.oneof(
            anything,
            fc.record(
              { prompt: fc.oneof(text, hostile, fc.integer()), connector: fc.oneof(text, hostile) },
              { requiredKeys: [] },
            ),
          ),
          protocolVersion: fc.oneof(text, hostile, fc.constant('2025-06-18')),
          capabilities: anything,
          clientInfo: fc.oneof(anything, fc.record({ name: fc.oneof(text, hostile), version: text })),
          cursor: fc.oneof(text, hostile),
          _meta: fc.record({ progressToken: fc.oneof(fc.nat(), text) }),
        },
        { requiredKeys: [] },
      ),
    },
  );
  const message = fc.record(
    {
      jsonrpc: fc.oneof({ weight: 9, arbitrary: fc.constant('2.0') }, { weight: 1, arbitrary: anything }),
      id: fc.oneof(
        { weight: 8, arbitrary: fc.oneof(fc.nat(), fc.string({ minLength: 1, maxLength: 8 })) },
        { weight: 2, arbitrary: anything },
      ),
      method: fc.oneof(
        {
          weight: 8,
          arbitrary: fc.constantFrom(
            'initialize',
            'ping',
            'tools/list',
            'tools/call',
            'prompts/list',
            'resources/list',
            'notifications/initialized',
            'notifications/cancelled',
            'logging/setLevel',
          ),
        },
        { weight: 1, arbitrary: text },
        { weight: 1, arbitrary: hostile },
      ),
      params,
    },
    { requiredKeys: ['jsonrpc', 'method'] },
  );

  it('answers every message below 500', { timeout: 120_000 }, async () => {
    const token = await (await createUser(h.app)).pat(['universal-mcp-read-write']);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          { weight: 8, arbitrary: message },
          { weight: 1, arbitrary: fc.array(message, { maxLength: 2 }) },
          { weight: 1, arbitrary: anything },
        ),
        fc.option(fc.constantFrom('2025-06-18', '2025-03-26', '1999-01-01', ''), { nil: undefined }),
        fc.constantFrom('application/json, text/event-stream', 'application/json', 'text/event-stream'),
        async (body, version, accept) => {
          const res = await call(h.app, 'POST', '/mcp', {
            token,
            headers: { accept, ...(version === undefined ? {} : { 'mcp-protocol-version': version }) },
            body,
          });
          expect(res.statusCode, `${res.statusCode} ${res.body.slice(0, 300)}`).toBeLessThan(500);
        },
      ),
      { numRuns: 200 },
    );
  });
});
