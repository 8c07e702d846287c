import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import type { App } from '../src/http/types.ts';
import { JSON_DEPTH_MESSAGE, JSON_MAX_DEPTH } from '../src/lib/json.ts';
import { CreateAgent } from '../src/modules/agents/schema.ts';
import { createAgent } from '../src/modules/agents/service.ts';
import { createHarness, createUser, type TestHarness } from './harness.ts';
import { csrfOf, PageClient } from './web-client.ts';

const HANG_MS = 10_000;

/**
 * Random methods, paths, headers and bodies: the service answers every one, promptly, never with a 500, and
 * every error it gives has the §7 body and an X-Request-Id.
 */
describe('robustness under random requests', () => {
  let h: TestHarness;
  let session: string;
  let pat: string;
  const newUser = async () => {
    const u = await createUser(h.app);
    session = u.sessionToken;
    pat = await u.pat(['account', 'llm-all', 'agents-all', 'messaging-channels']);
    // A default agent, so routes under /agents/default reach their handlers.
    await createAgent(u.ctx, CreateAgent.parse({ name: 'Property agent' }));
  };
  beforeAll(async () => {
    // A model catalog (the upstream is never reached: nothing here runs a model) so agents can be made.
    h = await createHarness({ LLM_BASE_URL: 'http://127.0.0.1:9/v1', LLM_MODELS: 'fake-model=1000/2000' });
    await newUser();
  });
  afterAll(() => h.close());

  const knownPaths = fc.constantFrom(
    '/api/v1/accounts/me',
    '/api/v1/accounts/acc_x',
    '/api/v1/accounts/acc_x/avatar',
    '/api/v1/auth/signup',
    '/api/v1/auth/authenticate',
    '/api/v1/auth/logout',
    '/api/v1/auth/pat',
    '/api/v1/auth/pats',
    '/api/v1/auth/pats/tok_1',
    '/api/v1/auth-scopes',
    '/api/v1/credit-transactions',
    '/api/v1/activity',
    '/api/v1/activity/act_x',
    '/api/v1/chat/completions',
    '/api/v1/messages',
    '/api/v1/messages/count_tokens',
    '/api/v1/embeddings',
    '/api/v1/models',
    '/api/v1/providers',
    '/api/v1/providers/github/tools',
    '/api/v1/providers/tools/search',
    '/api/v1/connections/authorize',
    '/api/v1/connections/callback',
    '/api/v1/agents',
    '/api/v1/agents/default',
    '/api/v1/agents/agt_x/chat/completions',
    '/api/v1/agents/agt_x/conversations',
    '/api/v1/agents/agt_x/memories',
    '/api/v1/agents/agt_x/chat/files',
    '/api/v1/agents/agt_x/memories/search',
    '/api/v1/agents/agt_x/conversations/conv_x/messages',
    '/api/v1/knowledge/bases',
    '/api/v1/knowledge/bases/kb_x',
    '/api/v1/knowledge/bases/kb_x/pages',
    '/api/v1/knowledge/bases/kb_x/pages/search',
    '/api/v1/knowledge/bases/kb_x/pages/some-page/versions/1',
    '/api/v1/knowledge/bases/kb_x/sources',
    '/api/v1/knowledge/config',
    '/api/v1/messaging-channels',
    '/api/v1/messaging-channels/mch_x',
    '/api/v1/messaging-channels/mch_x/link-account',
    '/api/v1/messaging-channels/mch_x/unlink-account',
    '/api/v1/messaging-channels/mch_x/deliveries',
    '/api/v1/messaging-channels/telegram/webhook',
    '/api/v1/messaging-channels/whatsapp/webhook',
    '/api/v1/messaging-channels/webchat/messages',
    '/api/v1/tools',
    '/api/v1/tools/built-in',
    '/api/v1/tools/generate-code',
    '/api/v1/tools/tool_x',
    '/api/v1/tools/tool_x/test',
    '/api/v1/skills',
    '/api/v1/skills/generate-prompt',
    '/api/v1/skills/skl_x',
    '/api/v1/agents/agt_x/tools',
    '/api/v1/agents/agt_x/tools/available',
    '/api/v1/agents/agt_x/tools/tool_x',
    '/api/v1/agents/agt_x/skills',
    '/api/v1/agents/agt_x/skills/skl_x',
    '/api/v1/agents/default/scheduled-tasks',
    '/api/v1/agents/default/scheduled-tasks/task_x',
    '/api/v1/agents/default/scheduled-tasks/task_x/runs',
    '/api/v1/agents/default/scheduled-tasks/task_x/run',
    '/api/v1/agents/agt_x/scheduled-tasks',
    '/api/v1/webhooks',
    '/api/v1/webhooks/wh_x',
    '/api/v1/webhooks/wh_x/deliveries',
    '/healthz',
    '/readyz',
    '/openapi.json',
    '/metrics',
  );
  // Segments a client may send by mistake or on purpose: bad escapes, NULs, traversal, long and non-ASCII.
  const oddSegment = fc.oneof(
    fc.constantFrom('%', '%E0%A4%A', '%00', '%2F', '..', '.', '%C0%AF', 'ü', '😀', '%F0%9F', '{x}', ':id', '*'),
    fc.string({ minLength: 90, maxLength: 300, unit: fc.constantFrom('a', 'b', '%41', '-') }),
    fc.string({ maxLength: 20 }).map(encodeURIComponent),
  );
  const paths = fc.oneof(
    knownPaths,
    fc.tuple(knownPaths, oddSegment).map(([p, s]) => `${p}/${s}`),
    fc.tuple(knownPaths, oddSegment).map(([p, s]) => p.replace(/\/[^/]*$/, `/${s}`)),
    fc.webPath().map((p) => (p.startsWith('/') ? p : `/${p}`)),
  );
  const query = fc.option(
    fc.dictionary(
      fc.constantFrom(
        'page',
        'limit',
        'sortBy',
        'sortOrder',
        'type',
        'from',
        'to',
        'x',
        'access_token',
        'q',
        'category',
        'connected',
        'status',
        'tool',
        'connectionId',
        'agentId',
        'kind',
      ),
      fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('0', '-1', '101', '1e308', 'NaN', 'asc', 'createdAt')),
    ),
  );
  // Strings as attackers write them: any text, and lone surrogates (JSON.stringify sends them as `\ud800`
  // escapes), which no database column can store.
  const text = fc.oneof(
    fc.string(),
    fc.constantFrom('\ud800', 'a\udfffb', 'x\ud83d', '\udc00\ud800', 'ok\u0000\ud800'),
    fc.string({ unit: 'binary', maxLength: 20 }),
  );
  // A field where a string belongs, sometimes an object whose toString is not a function: String() and template
  // literals throw on it, so code that formats a field it has not checked answers 500.
  const field = fc.oneof({ weight: 9, arbitrary: text }, { weight: 1, arbitrary: fc.constant({ toString: [] }) });
  const body = fc.oneof(
    fc.constant(undefined),
    fc.json({ maxDepth: 3 }),
    fc.string({ maxLength: 200 }),
    fc.constantFrom(
      '{',
      '{"a":',
      'null',
      '[]',
      '"x"',
      '{"__proto__":{"x":1}}',
      '{"constructor":{"prototype":{}}}',
      // An object whose toString is not a function: String() and template literals throw on it.
      '{"name":{"toString":[]},"email":{"toString":[]},"url":{"toString":[]},"prompt":{"valueOf":[]}}',
    ),
    // Nested thousands of levels deep (sent as text: JSON.stringify itself overflows past about 5,000).
    fc
      .tuple(
        fc.integer({ min: 60, max: 20_000 }),
        fc.constantFrom(['[', ']'] as const, ['{"a":', '}'] as const, ['[{"x":', '}]'] as const),
      )
      .map(([depth, [open, close]]) => `${open.repeat(depth)}"\\ud800"${close.repeat(depth)}`),
    fc.record(
      {
        email: fc.oneof(text, fc.emailAddress()),
        password: field,
        name: field,
        avatar: fc.oneof(text, fc.webUrl(), fc.constant(null)),
        scopes: fc.array(fc.oneof(text, fc.constantFrom('account', 'llm-all'))),
        provider_permissions: fc.dictionary(text, fc.constantFrom('read', 'read-write')),
        expires_in: fc.oneof(fc.integer(), fc.double(), fc.string()),
        model: field,
        messages: fc.array(
          fc.record({
            role: fc.oneof(text, fc.constantFrom('user', 'assistant')),
            content: fc.oneof(
              text,
              fc.integer(),
              fc.array(
                fc.record(
                  {
                    type: fc.oneof(text, fc.constantFrom('text', 'image', 'tool_use', 'tool_result', 'document')),
                    text: fc.oneof(text, fc.integer()),
                    id: field,
                    name: field,
                    input: fc.json({ maxDepth: 2 }).map((j) => JSON.parse(j) as unknown),
                    tool_use_id: field,
                    content: fc.oneof(text, fc.array(fc.record({ type: text, text }))),
                    source: fc.record({ type: fc.constantFrom('base64', 'url', 'x'), data: text, url: text }),
                  },
                  { requiredKeys: ['type'] },
                ),
                { maxLength: 3 },
              ),
            ),
          }),
        ),
        max_tokens: fc.oneof(fc.integer(), fc.double(), text),
        system: fc.oneof(text, fc.array(fc.record({ type: text, text }))),
        tools: fc.array(fc.record({ name: text, input_schema: fc.constant({ type: 'object' }), type: text })),
        tool_choice: fc.oneof(
          text,
          fc.record({ type: fc.constantFrom('auto', 'any', 'tool', 'none', 'x'), name: text }),
        ),
        input: fc.oneof(text, fc.array(text), fc.array(fc.integer()), fc.array(fc.array(fc.integer()))),
        type: fc.oneof(text, fc.constantFrom('telegram', 'whatsapp', 'webchat')),
        agentId: field,
        config: fc.oneof(
          fc.json({ maxDepth: 2 }).map((j) => JSON.parse(j) as unknown),
          fc.record({ botToken: text }),
        ),
        channelId: field,
        content: field,
        update_id: fc.oneof(fc.integer(), fc.double(), text),
        code: field,
        language: fc.oneof(text, fc.constantFrom('javascript', 'typescript', 'python')),
        parameters: fc.oneof(
          fc.json({ maxDepth: 3 }).map((j) => JSON.parse(j) as unknown),
          fc.constantFrom(
            { type: 'object', properties: { a: { $ref: '#/nope' } } },
            { type: 'object', properties: { a: { $ref: 'https://example.test/s.json' } } },
            { type: 'object', $id: 'x', properties: { a: { pattern: '(' } } },
          ),
        ),
        secrets: fc.dictionary(text, fc.oneof(text, fc.constant(null))),
        arguments: fc.json({ maxDepth: 2 }).map((j) => JSON.parse(j) as unknown),
        toolId: field,
        skillId: field,
        prompt: field,
        description: field,
        cronExpression: fc.oneof(text, fc.constantFrom('0 9 * * 1', '* * * * * *', '61 * * * *', '0 9 31 2 *')),
        timezone: fc.oneof(text, fc.constantFrom('Europe/Paris', 'UTC', '+01:00', 'Etc/GMT+13')),
        enabled: fc.oneof(fc.boolean(), text),
        url: fc.oneof(
          text,
          fc.webUrl(),
          fc.constantFrom(
            'http://127.0.0.1/x',
            'http://[::1]/',
            'http://0x7f.1/',
            'http://a:b@example.com/',
            'file:///etc/passwd',
          ),
        ),
        events: fc.array(fc.oneof(text, fc.constantFrom('connection.created', 'task_run.finished'))),
      },
      { requiredKeys: [] },
    ),
  );
  const contentType = fc.option(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      'x/y',
      '',
    ),
  );
  const auth = fc.oneof(
    fc.constantFrom(undefined, 'session', 'pat', 'Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'bearer pat_x'),
    fc.string({ maxLength: 60 }).map((s) => `Bearer ${s}`),
  );
  const extraHeaders = fc.dictionary(
    fc.constantFrom(
      'accept',
      'x-request-id',
      'x-forwarded-for',
      'origin',
      'accept-encoding',
      'x-response-format',
      'x-telegram-bot-api-secret-token',
      'x-hub-signature-256',
      'x-api-key',
    ),
    fc.string({ maxLength: 40, unit: fc.constantFrom(...'abc/*;=,.:- 0123456789'.split('')) }),
    { maxKeys: 3 },
  );

  it('answers every request, never with a 500, and every error in the §7 shape', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'),
        paths,
        query,
        body,
        contentType,
        auth,
        extraHeaders,
        async (method, path, q, payload, type, authorization, extra) => {
          const search = q ? `?${new URLSearchParams(q).toString()}` : '';
          const headers: Record<string, string> = { ...extra };
          if (type !== null) headers['content-type'] = type;
          if (authorization === 'session') headers.authorization = `Bearer ${session}`;
          else if (authorization === 'pat') headers.authorization = `Bearer ${pat}`;
          else if (authorization) headers.authorization = authorization;
          const label = `${method} ${path}${search} ${JSON.stringify(headers)}`;
          let timer: NodeJS.Timeout | undefined;
          const hang = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${HANG_MS} ms: ${label}`)), HANG_MS);
          });
          const res: LightMyRequestResponse = await Promise.race([
            h.app.inject({
              method: method as 'GET',
              url: `${path}${search}`,
              headers,
              ...(payload !== undefined && method !== 'GET' && method !== 'HEAD'
                ? { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }
                : {}),
            }),
            hang,
          ]).finally(() => clearTimeout(timer));

          const where = `${label} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
          expect(res.statusCode, where).not.toBe(500);
          expect(res.headers['x-request-id'], where).toBeTruthy();
          if (res.statusCode >= 400 && method !== 'HEAD') {
            expect(res.headers['content-type'], where).toBe('application/json; charset=utf-8');
            const error = res.json();
            // The server sees the path as the client normalizes it (`/x/.` is `/x/`).
            let seen = path;
            try {
              seen = new URL(`http://localhost${path}`).pathname;
            } catch {}
            // The Anthropic-compatible routes answer Anthropic's error shape, §7's message and statusCode beside it.
            const anthropic = /^\/api\/v1\/messages(?:\/count_tokens)?\/?$/.test(seen);
            const keys = anthropic ? ['error', 'message', 'statusCode', 'type'] : ['error', 'message', 'statusCode'];
            expect(Object.keys(error).sort(), where).toEqual('details' in error ? ['details', ...keys] : keys);
            const name = expect.stringMatching(/^[A-Z][A-Za-z]+Error$/);
            // The OpenAI-compatible routes carry the §7 name in OpenAI's error object (README, Errors); a code of
            // OpenAI's own (model_not_found) comes with OpenAI's type.
            const openAi =
              /^\/api\/v1\/(?:chat\/completions|models|embeddings|agents\/[^/]+\/chat\/completions)\/?(?:[?#]|$)/.test(
                seen,
              );
            const openAiError =
              error.error?.code === 'model_not_found'
                ? { message: error.message, type: 'invalid_request_error', param: null, code: 'model_not_found' }
                : { message: error.message, type: name, param: null, code: null };
            expect(error, where).toMatchObject({
              error: anthropic
                ? { type: expect.stringMatching(/^[a-z_]+$/), message: error.message }
                : openAi
                  ? openAiError
                  : name,
              message: expect.any(String),
              statusCode: res.statusCode,
            });
          }
          // A random DELETE /accounts/me may have removed the account behind the tokens: start a new one.
          if (method === 'DELETE' && res.statusCode === 204 && path.startsWith('/api/v1/accounts/')) await newUser();
        },
      ),
      { numRuns: 400 },
    );
  });
});

/** `GET /providers/tools/search` (issue 41 item 3): any q, limit and connected answer 200 or 422, never a 500. */
describe('tool search under random queries', () => {
  let h: TestHarness;
  let session: string;
  beforeAll(async () => {
    h = await createHarness();
    session = (await createUser(h.app)).sessionToken;
  });
  afterAll(() => h.close());

  it('answers 200 with at most limit hits, or 422, for any query', { timeout: 120_000 }, async () => {
    const q = fc.oneof(
      fc.string({ maxLength: 600 }),
      fc.string({ unit: 'binary', maxLength: 80 }),
      fc.constantFrom('\ud800', 'to do', '#', '@', 'a@b.c', '3pm', 'set up', '%', 'list '.repeat(120), '\u0000x'),
      fc
        .array(fc.constantFrom('email', 'list', 'the', 'calendar', 'x', 'teams', 'tweets', 'archive'), {
          maxLength: 40,
        })
        .map((ws) => ws.join(' ')),
    );
    const limit = fc.option(fc.oneof(fc.integer({ min: -5, max: 60 }).map(String), fc.string({ maxLength: 5 })));
    const connected = fc.option(fc.constantFrom('true', 'false', '1', ''));
    await fc.assert(
      fc.asyncProperty(q, limit, connected, async (text, lim, conn) => {
        const params = new URLSearchParams({ q: text });
        if (lim !== null) params.set('limit', lim);
        if (conn !== null) params.set('connected', conn);
        const res = await h.app.inject({
          method: 'GET',
          url: `/api/v1/providers/tools/search?${params.toString()}`,
          headers: { authorization: `Bearer ${session}` },
        });
        const where = `${params.toString().slice(0, 200)} -> ${res.statusCode} ${res.body.slice(0, 200)}`;
        expect([200, 422], where).toContain(res.statusCode);
        if (res.statusCode === 200) {
          const hits = res.json() as unknown[];
          expect(hits.length, where).toBeLessThanOrEqual(lim !== null && /^\d+$/.test(lim) ? Number(lim) : 10);
        }
      }),
      { numRuns: 300 },
    );
  });
});

/**
 * The OAuth endpoints and the pages (issue 10 item 6): oidc-provider answers RFC 6749 error bodies and the pages
 * answer HTML, so the §7 shape does not apply; the rule is the same otherwise: an answer, never a 5xx, for any
 * field an attacker controls (NUL, CR, LF, tabs, non-Latin-1, lone surrogates, non-array JSON where arrays go).
 */
describe('robustness of the OAuth endpoints and the pages', () => {
  let h: TestHarness;
  let clientId: string;
  let cookie: string;
  let csrf: string;
  const redirectUri = 'https://app.example.test/cb';

  beforeAll(async () => {
    // Limits off in practice: a 429 would hide the handler behind it.
    h = await createHarness({
      RATE_LIMIT_AUTH: '1000000',
      RATE_LIMIT_REGISTER: '1000000',
      RATE_LIMIT_GLOBAL: '1000000',
    });
    const registered = await h.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: 'none',
        client_name: 'Prop',
      }),
    });
    expect(registered.statusCode, registered.body).toBe(201);
    clientId = registered.json().client_id;
    const u = await createUser(h.app);
    const browser = new PageClient(h.app);
    expect((await browser.signIn(u.account.email, u.password)).statusCode).toBe(303);
    csrf = csrfOf((await browser.get('/account/tokens')).body);
    cookie = browser.cookie;
  });
  afterAll(() => h.close());

  const nasty = fc.oneof(
    fc.string({ maxLength: 30 }),
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.constantFrom(
      'a\u0000b',
      '\u0000',
      '/\t/evil.example',
      '/%09/evil.example',
      '/\r\nSet-Cookie: x=1',
      '/\n',
      '/Ω',
      '/😀',
      '\ud800',
      '//evil.example',
      'https://evil.example/',
      // client_id as a client metadata document URL: private targets (refused by the SSRF guard without a
      // fetch) and URLs the draft forbids.
      'https://10.0.0.1/client.json',
      'https://127.0.0.1:1/c.json',
      'https://u:p@10.0.0.1/c.json',
      'HTTPS://10.0.0.1/c.json',
      'https://10.0.0.1/a/../c.json',
      'https://10.0.0.1/c.json#f',
      '/account/tokens',
      redirectUri,
      'S256',
      'code',
      'account openid',
      'kb_x,kb_y',
      ' , ',
      'all',
      'some',
    ),
  );
  const fields = fc.dictionary(
    fc.constantFrom(
      'client_id',
      'return_to',
      'redirect_uri',
      'response_type',
      'scope',
      'state',
      'code_challenge',
      'code_challenge_method',
      'resource',
      'prompt',
      'grant_type',
      'code',
      'code_verifier',
      'refresh_token',
      'token',
      'token_type_hint',
      'client_secret',
      'email',
      'password',
      'name',
      'q',
      'category',
      'csrf',
      'type',
      'agentId',
      'botToken',
      'allowedOrigins',
      'code',
      'parameters',
      'arguments',
      'language',
      'requiredSecrets',
      'timeoutMs',
      'prompt',
      'secret_API_KEY',
      'knowledge_base_ids',
      'knowledge_bases',
      'knowledge_base_id',
      'kind',
      'from',
      'to',
      'page',
      'url',
      'events',
      'description',
      'enabled',
    ),
    fc.oneof(nasty, fc.constant('@client'), fc.constant('@csrf')),
    { maxKeys: 8 },
  );
  const registration = fc.record(
    {
      redirect_uris: fc.oneof(
        fc.array(nasty, { maxLength: 3 }),
        nasty,
        fc.json({ maxDepth: 2 }).map((j) => JSON.parse(j) as unknown),
        fc.constant([redirectUri]),
      ),
      client_name: nasty,
      logo_uri: nasty,
      client_uri: nasty,
      token_endpoint_auth_method: fc.constantFrom('none', 'client_secret_basic', 'x', '\u0000'),
      grant_types: fc.oneof(fc.array(nasty, { maxLength: 2 }), nasty),
      scope: nasty,
      contacts: fc.oneof(fc.array(nasty, { maxLength: 2 }), nasty),
    },
    { requiredKeys: [] },
  );
  const target = fc.constantFrom(
    ['GET', '/oauth/authorize'],
    ['POST', '/oauth/authorize'],
    ['POST', '/api/v1/auth/token'],
    ['POST', '/api/v1/auth/revoke'],
    ['POST', '/api/v1/auth/register'],
    ['GET', '/signin'],
    ['POST', '/signin'],
    ['GET', '/signup'],
    ['POST', '/signup'],
    ['POST', '/signout'],
    ['GET', '/interaction/x'],
    ['POST', '/interaction/x/confirm'],
    ['GET', '/account/apps'],
    ['GET', '/account/tokens'],
    ['POST', '/account/tokens'],
    ['POST', '/account/tokens/mcp'],
    ['GET', '/assets/copy.js'],
    ['GET', '/account/tokens/pat_x/revoke'],
    ['POST', '/account/tokens/pat_x/revoke'],
    ['GET', '/account/apps/x/revoke'],
    ['POST', '/account/apps/x/revoke'],
    ['GET', '/'],
    ['GET', '/account'],
    ['GET', '/account/credits'],
    ['GET', '/account/activity'],
    ['GET', '/account/agents'],
    ['POST', '/account/agents'],
    ['GET', '/account/agents/agt_x'],
    ['POST', '/account/agents/agt_x/chat'],
    ['POST', '/account/agents/agt_x/chat/stream'],
    ['POST', '/account/agents/agt_x/settings'],
    ['POST', '/account/agents/agt_x/conversations/conv_x/delete'],
    ['GET', '/account/tasks'],
    ['POST', '/account/tasks'],
    ['POST', '/account/tasks/preview'],
    ['GET', '/account/tasks/task_x'],
    ['POST', '/account/tasks/task_x'],
    ['POST', '/account/tasks/task_x/enabled'],
    ['GET', '/assets/timezone.js'],
    ['GET', '/assets/busy.js'],
    ['POST', '/account/tasks/task_x/run'],
    ['POST', '/account/tasks/task_x/delete'],
    ['GET', '/account/knowledge'],
    ['GET', '/account/knowledge/kb_x'],
    ['GET', '/account/knowledge/kb_x/pages/some-page'],
    ['POST', '/account/knowledge/kb_x/sources'],
    ['POST', '/account/knowledge/kb_x/lint'],
    ['POST', '/account/knowledge/kb_x/sources/file'],
    ['GET', '/account/knowledge/kb_x/status'],
    ['POST', '/account/knowledge/kb_x/sources/ksrc_x/reprocess'],
    ['GET', '/account/knowledge/kb_x/sources/ksrc_x/delete'],
    ['GET', '/assets/knowledge.js'],
    ['GET', '/account/connections'],
    ['GET', '/account/connections/pending/x'],
    ['GET', '/account/channels'],
    ['POST', '/account/channels'],
    ['GET', '/account/channels/mch_x'],
    ['POST', '/account/channels/mch_x/link'],
    ['POST', '/account/channels/mch_x/unlink'],
    ['POST', '/account/channels/mch_x/delete'],
    ['GET', '/account/tools'],
    ['POST', '/account/tools'],
    ['GET', '/account/tools/tool_x'],
    ['POST', '/account/tools/tool_x'],
    ['POST', '/account/tools/tool_x/test'],
    ['POST', '/account/tools/tool_x/links'],
    ['POST', '/account/tools/tool_x/links/agt_x'],
    ['POST', '/account/tools/tool_x/delete'],
    ['GET', '/account/skills'],
    ['POST', '/account/skills'],
    ['GET', '/account/skills/skl_x'],
    ['POST', '/account/skills/skl_x/links'],
    ['POST', '/account/skills/skl_x'],
    ['POST', '/account/skills/skl_x/links/agt_x/unlink'],
    ['POST', '/account/skills/skl_x/delete'],
    ['POST', '/account/tools/tool_x/links/agt_x/unlink'],
    ['GET', '/account/webhooks'],
    ['POST', '/account/webhooks'],
    ['GET', '/account/webhooks/wh_x'],
    ['POST', '/account/webhooks/wh_x/enabled'],
    ['GET', '/account/webhooks/wh_x/delete'],
    ['POST', '/account/webhooks/wh_x/delete'],
  );

  it('the agents page, on a server with no model, says so on its form (422) instead of failing', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/account/agents',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf, name: 'Helper' }).toString(),
    });
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('No LLM upstream is configured');
    expect(res.body).toContain('value="Helper"');
  });

  it('answers every request, never with a 5xx', { timeout: 180_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        target,
        fields,
        registration,
        fc.boolean(),
        fc.option(fc.tuple(nasty, nasty)),
        fc.option(fc.oneof(nasty, fc.constant('v1.k.AAAA.AAAA'))),
        async ([method, path], form, reg, signedIn, basic, flash) => {
          const values = Object.fromEntries(
            Object.entries(form).map(([k, v]) => [k, v === '@client' ? clientId : v === '@csrf' ? csrf : v]),
          );
          const encoded = new URLSearchParams(values as Record<string, string>).toString();
          const headers: Record<string, string> = {};
          if (signedIn) headers.cookie = cookie;
          // A flash cookie the service did not seal (or sealed for another session) shows nothing and fails nothing.
          if (flash !== null) {
            headers.cookie = `${headers.cookie ? `${headers.cookie}; ` : ''}sb_flash=${encodeURIComponent(flash.replace(/[\ud800-\udfff]/g, '\ufffd'))}`;
          }
          if (basic) headers.authorization = `Basic ${Buffer.from(`${basic[0]}:${basic[1]}`).toString('base64')}`;
          let url = path as string;
          let payload: string | undefined;
          if (path === '/api/v1/auth/register') {
            headers['content-type'] = 'application/json';
            payload = JSON.stringify(reg);
          } else if (method === 'GET') {
            if (encoded) url = `${path}?${encoded}`;
          } else {
            headers['content-type'] = 'application/x-www-form-urlencoded';
            payload = encoded;
          }
          const label = `${method} ${url} ${payload ?? ''} ${JSON.stringify(headers)}`;
          let timer: NodeJS.Timeout | undefined;
          const hang = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${HANG_MS} ms: ${label}`)), HANG_MS);
          });
          const res: LightMyRequestResponse = await Promise.race([
            h.app.inject({ method: method as 'GET', url, headers, ...(payload !== undefined ? { payload } : {}) }),
            hang,
          ]).finally(() => clearTimeout(timer));
          const where = `${label} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
          expect(res.statusCode, where).toBeLessThan(500);
          const location = res.headers.location;
          // A redirect of a page never leaves the site, whatever return_to said.
          if (typeof location === 'string' && !path.startsWith('/oauth') && !path.startsWith('/api')) {
            expect(location.startsWith('/') && !location.startsWith('//'), where).toBe(true);
          }
          // Signing out ends the shared session: sign in again for the next runs.
          if (path === '/signout' && res.statusCode === 303 && signedIn) {
            const u = await createUser(h.app);
            const browser = new PageClient(h.app);
            await browser.signIn(u.account.email, u.password);
            csrf = csrfOf((await browser.get('/account/tokens')).body);
            cookie = browser.cookie;
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});

/**
 * JSON nested thousands of levels deep (security review, item 4): every recursive walk over a body (the
 * surrogate and NUL checks, JSON.stringify into jsonb, schema walkers) overflowed the stack and answered 500,
 * on the WhatsApp webhook before its signature was checked. Every route the app serves gets such bodies; a JSON
 * body deeper than JSON_MAX_DEPTH levels is the caller's 400 wherever it is read.
 */
describe('deeply nested JSON bodies on every route', () => {
  let h: TestHarness;
  let app: App;
  let session: string;
  let served: Array<{ method: string; url: string }>;

  beforeAll(async () => {
    h = await createHarness({
      LLM_BASE_URL: 'http://127.0.0.1:9/v1',
      LLM_MODELS: 'fake-model=1000/2000',
      RATE_LIMIT_ENABLED: 'false',
      WHATSAPP_APP_SECRET: 'whatsapp-app-secret',
    });
    served = [];
    app = await buildApp({
      config: h.config,
      database: h.database,
      keyRing: h.keyRing,
      onRoute: (r) => {
        for (const method of [r.method].flat()) {
          if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) served.push({ method, url: r.url });
        }
      },
    });
    await app.ready();
    session = (await createUser(app)).sessionToken;
  });
  afterAll(async () => {
    await app.close();
    await h.close();
  });

  const nested = (depth: number, open: string, close: string, inner = '1') =>
    `${open.repeat(depth)}${inner}${close.repeat(depth)}`;
  /** Bodies of several shapes: arrays, objects, both mixed, a lone surrogate and a NUL at the bottom. */
  const deepBodies = (depth: number) => [
    nested(depth, '[', ']'),
    nested(depth, '{"a":', '}'),
    nested(depth, '{"messages":[', ']}', '"\\ud800"'),
    `{"entry":[{"changes":[{"value":{"metadata":{"phone_number_id":"1"},"messages":[${nested(depth, '[', ']', '"\\u0000"')}]}}]}]}`,
    // A client registration whose only fault is its depth (oidc-provider reads it, our validator checks it).
    `{"redirect_uris":["https://app.example.test/cb"],"token_endpoint_auth_method":"none","contacts":[${nested(depth, '[', ']', '"a"')}]}`,
  ];
  const DEPTH_ERROR = { error: 'BadRequestError', message: JSON_DEPTH_MESSAGE, statusCode: 400 };
  // Served by oidc-provider, which reads its own bodies and answers RFC 6749 error bodies (or none).
  const oidc = /^\/(?:oauth\/|api\/v1\/auth\/(?:token|revoke|register)$|interaction\/)/;
  const openAi = /^\/api\/v1\/(?:chat\/completions|embeddings|agents\/[^/]+\/chat\/completions)$/;
  const anthropic = /^\/api\/v1\/messages(?:\/count_tokens)?$/;

  it('every route refuses a body nested past the limit with a 400 (§7 body), never a 500', {
    timeout: 300_000,
  }, async () => {
    expect(served.length).toBeGreaterThan(100);
    const failures: string[] = [];
    for (const route of served) {
      const url = route.url.replace(/:\w+/g, 'x').replace(/\*$/, 'x');
      for (const payload of [...deepBodies(5_000), nested(JSON_MAX_DEPTH + 1, '[', ']')]) {
        const res = await app.inject({
          method: route.method as 'POST',
          url,
          headers: { authorization: `Bearer ${session}`, 'content-type': 'application/json' },
          payload,
        });
        const where = `${route.method} ${route.url} (${payload.slice(0, 20)}…): ${res.statusCode} ${res.body.slice(0, 200)}`;
        // A body read as valid may have signed out or deleted the account behind the session.
        if (res.statusCode < 300) session = (await createUser(app)).sessionToken;
        if (res.statusCode >= 500) failures.push(where);
        else if (url === '/api/v1/messaging-channels/whatsapp/webhook') {
          // Unsigned: refused for its signature before anything walks the body (signed: whatsapp.test.ts).
          if (res.statusCode !== 401 || res.json().error !== 'UnauthorizedError') failures.push(where);
        } else if (url === '/api/v1/auth/register') {
          // RFC 7591 error bodies; the registration that is fine but for its depth is refused for it.
          const error = res.statusCode === 400 ? res.json() : {};
          const ok = payload.startsWith('{"redirect_uris"')
            ? error.error === 'invalid_client_metadata' && error.error_description === JSON_DEPTH_MESSAGE
            : typeof error.error === 'string';
          if (!ok) failures.push(where);
        } else if (!oidc.test(url)) {
          // The OpenAI-compatible routes carry the §7 name in OpenAI's error object (README, Errors).
          const body = openAi.test(url)
            ? {
                ...DEPTH_ERROR,
                error: { message: JSON_DEPTH_MESSAGE, type: 'BadRequestError', param: null, code: null },
              }
            : anthropic.test(url)
              ? {
                  type: 'error',
                  error: { type: 'invalid_request_error', message: JSON_DEPTH_MESSAGE },
                  message: JSON_DEPTH_MESSAGE,
                  statusCode: 400,
                }
              : DEPTH_ERROR;
          const ok =
            res.statusCode === 400 &&
            res.headers['content-type'] === 'application/json; charset=utf-8' &&
            JSON.stringify(res.json()) === JSON.stringify(body);
          if (!ok) failures.push(where);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('one level less than the limit is read as usual', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/auth/signup',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ email: 'deep@example.test', password: 'deep-password', name: 'Deep', x: null }).replace(
        'null',
        nested(JSON_MAX_DEPTH - 1, '[', ']'),
      ),
    });
    // Past the parser: the schema answers (an unknown key is ignored or refused, never a depth 400).
    expect(res.json()).not.toEqual(DEPTH_ERROR);
    expect(res.statusCode).toBeLessThan(500);
  });

  it('random deep bodies on random routes: never a 500', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...served),
        fc.integer({ min: JSON_MAX_DEPTH + 1, max: 20_000 }),
        fc.nat(4),
        fc.boolean(),
        async (route, depth, shape, signedIn) => {
          const url = route.url.replace(/:\w+/g, 'x').replace(/\*$/, 'x');
          const res = await app.inject({
            method: route.method as 'POST',
            url,
            headers: {
              ...(signedIn ? { authorization: `Bearer ${session}` } : {}),
              'content-type': 'application/json',
            },
            payload: deepBodies(depth)[shape],
          });
          expect(res.statusCode, `${route.method} ${url} depth ${depth} -> ${res.body.slice(0, 200)}`).toBeLessThan(
            500,
          );
        },
      ),
      { numRuns: 200 },
    );
  });
});
