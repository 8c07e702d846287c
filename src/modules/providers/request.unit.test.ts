import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../lib/errors.ts';
import { checkProviderRules, loadProviderCatalog } from './catalog.ts';
import { ApiSettings, type ProviderDefinition, ToolDefinition } from './definition.ts';
import {
  type BuiltRequest,
  buildToolRequest,
  fillBaseUrl,
  fillTemplate,
  fillUrl,
  nextLink,
  nextPageRequest,
  providerErrorMessage,
  rateLimitDelaySeconds,
  ToolArgumentError,
} from './request.ts';

const catalog = loadProviderCatalog({ dirs: [], env: {} });
const provider = (id: string): ProviderDefinition => {
  const def = catalog.get(id)?.definition;
  if (!def) throw new Error(`no provider ${id}`);
  return def;
};
const tool = (providerId: string, name: string) => {
  const t = provider(providerId).tools.find((x) => x.name === name);
  if (!t) throw new Error(`no tool ${providerId}.${name}`);
  return t;
};
const api = (settings: unknown) => ({ api: ApiSettings.parse(settings) });
const makeTool = (def: unknown) => ToolDefinition.parse(def);

describe('buildToolRequest', () => {
  it('fills path parameters URL-encoded, query from arguments and defaults, provider headers', () => {
    const req = buildToolRequest(provider('github'), tool('github', 'list_repository_issues'), {
      owner: 'octo cat',
      repo: 'hello/world',
      labels: 'bug,ui',
    });
    expect(req).toEqual({
      method: 'GET',
      url: 'https://api.github.com/repos/octo%20cat/hello%2Fworld/issues?state=open&labels=bug%2Cui&per_page=30',
      headers: {
        accept: 'application/vnd.github+json',
        'x-github-api-version': '2022-11-28',
      },
      body: undefined,
    });
  });

  it('keeps slashes of a {+path} parameter but never lets . or .. reach another endpoint', () => {
    const contents = tool('github', 'get_file_contents');
    const ok = buildToolRequest(provider('github'), contents, { owner: 'o', repo: 'r', path: 'src/a b.ts', ref: 'v1' });
    expect(ok.url).toBe('https://api.github.com/repos/o/r/contents/src/a%20b.ts?ref=v1');
    for (const [owner, path] of [
      ['..', 'README.md'],
      ['o', '../../../user'],
      ['o', 'a/./b'],
      ['.', 'x'],
    ]) {
      expect(() => buildToolRequest(provider('github'), contents, { owner, repo: 'r', path })).toThrow(
        /must not be a "\." or "\.\." path segment/,
      );
    }
    // Encoded, a "%2E%2E" argument is an ordinary name, not a dot segment.
    const named = buildToolRequest(provider('github'), contents, { owner: 'o', repo: '%2E%2E', path: 'a/%2e/b' });
    expect(named.url).toBe('https://api.github.com/repos/o/%252E%252E/contents/a/%252e/b');
  });

  it('builds a JSON body from the template, dropping absent arguments and keeping types', () => {
    const req = buildToolRequest(provider('github'), tool('github', 'create_issue'), {
      owner: 'o',
      repo: 'r',
      title: 'Crash on start',
      labels: ['bug', 'p1'],
    });
    expect(req.method).toBe('POST');
    expect(req.url).toBe('https://api.github.com/repos/o/r/issues');
    expect(req.headers['content-type']).toBe('application/json');
    expect(JSON.parse(req.body as string)).toEqual({ title: 'Crash on start', labels: ['bug', 'p1'] });
  });

  it("opens and reads a GitLab merge request, the project's path encoded as one segment", () => {
    const created = buildToolRequest(provider('gitlab'), tool('gitlab', 'create_merge_request'), {
      project: 'group/web',
      source_branch: 'fix-login',
      target_branch: 'main',
      title: 'Fix the login redirect',
    });
    expect(created.method).toBe('POST');
    expect(created.url).toBe('https://gitlab.com/api/v4/projects/group%2Fweb/merge_requests');
    expect(JSON.parse(created.body as string)).toEqual({
      source_branch: 'fix-login',
      target_branch: 'main',
      title: 'Fix the login redirect',
    });
    const read = buildToolRequest(provider('gitlab'), tool('gitlab', 'get_merge_request'), {
      project: 'group/web',
      iid: 42,
    });
    expect(read.method).toBe('GET');
    expect(read.url).toBe('https://gitlab.com/api/v4/projects/group%2Fweb/merge_requests/42');
  });

  it('fills a GraphQL body template whose literal braces need no escaping (Linear)', () => {
    const req = buildToolRequest(provider('linear'), tool('linear', 'search_issues'), { term: 'login bug' });
    expect(req.url).toBe('https://api.linear.app/graphql');
    const body = JSON.parse(req.body as string);
    expect(body.query).toMatch(/^query SearchIssues\(\$term: String!/);
    expect(body.query).toContain('{ nodes { id identifier title');
    expect(body.variables).toEqual({ term: 'login bug', first: 20 });
  });

  it('prunes objects emptied by absent arguments and honours $if and $each', () => {
    const list = buildToolRequest(provider('linear'), tool('linear', 'list_workflow_states'), {});
    expect(JSON.parse(list.body as string).variables).toBeUndefined();
    const forTeam = buildToolRequest(provider('linear'), tool('linear', 'list_workflow_states'), { teamId: 't1' });
    expect(JSON.parse(forTeam.body as string).variables).toEqual({ filter: { team: { id: { eq: 't1' } } } });

    const event = buildToolRequest(provider('google-calendar'), tool('google-calendar', 'update_event'), {
      eventId: 'e1',
      end: '2024-05-01T11:00:00Z',
      attendees: ['a@x.test', 'b@x.test'],
    });
    expect(event.url).toBe('https://www.googleapis.com/calendar/v3/calendars/primary/events/e1?sendUpdates=none');
    expect(JSON.parse(event.body as string)).toEqual({
      end: { dateTime: '2024-05-01T11:00:00Z' },
      attendees: [{ email: 'a@x.test' }, { email: 'b@x.test' }],
    });
  });

  it('encodes a plain-text e-mail as base64url RFC 822 without letting headers be injected (Gmail)', () => {
    const req = buildToolRequest(provider('gmail'), tool('gmail', 'send_email'), {
      to: ['ana@example.test', 'bo@example.test'],
      subject: 'Hi\r\nBcc: evil@example.test',
      body: 'Grüße\nline two',
    });
    const { raw, threadId } = JSON.parse(req.body as string);
    expect(threadId).toBeUndefined();
    const mime = Buffer.from(raw, 'base64url').toString('utf8');
    const [head = '', encodedBody = ''] = mime.split('\r\n\r\n');
    expect(head.split('\r\n')).toEqual([
      'To: ana@example.test, bo@example.test',
      'Subject: Hi Bcc: evil@example.test',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset="UTF-8"',
      'Content-Transfer-Encoding: base64',
    ]);
    expect(Buffer.from(encodedBody.replace(/\r\n/g, ''), 'base64').toString('utf8')).toBe('Grüße\nline two');
  });

  it('encodes a non-ASCII subject as an RFC 2047 word', () => {
    const req = buildToolRequest(provider('gmail'), tool('gmail', 'create_draft'), { subject: 'Café', body: 'x' });
    const mime = Buffer.from(JSON.parse(req.body as string).message.raw, 'base64url').toString('utf8');
    expect(mime).toContain(`Subject: =?UTF-8?B?${Buffer.from('Café').toString('base64')}?=`);
  });

  it('repeats array query parameters, or joins them with commas when the tool says so', () => {
    const gmail = buildToolRequest(provider('gmail'), tool('gmail', 'search_messages'), {
      q: 'is:unread',
      labelIds: ['INBOX', 'IMPORTANT'],
    });
    expect(gmail.url).toBe(
      'https://gmail.googleapis.com/gmail/v1/users/me/messages?q=is%3Aunread&labelIds=INBOX&labelIds=IMPORTANT&maxResults=20',
    );
    const t = makeTool({
      name: 'x_tool',
      description: 'A tool used only by this test.',
      mode: 'read',
      parameters: {
        type: 'object',
        properties: { ids: { type: 'array', items: { type: 'string' }, description: 'Ids.' } },
      },
      request: { method: 'GET', path: '/x', query: { ids: '{{ids}}', fixed: 7 }, queryArrayFormat: 'comma' },
    });
    const req = buildToolRequest(api({ baseUrl: 'https://api.example.test/v1/' }), t, { ids: ['a', 'b'] });
    expect(req.url).toBe('https://api.example.test/v1/x?ids=a%2Cb&fixed=7');
  });

  it("fills connection variables in the provider's headers (Xero's tenant id) and refuses unsafe ones", () => {
    const t = makeTool({
      name: 'list_invoices',
      description: 'List the invoices of the organisation.',
      parameters: { type: 'object', properties: {} },
      mode: 'read',
      request: { method: 'GET', path: '/Invoices' },
    });
    const xero = api({ baseUrl: 'https://api.xero.com/api.xro/2.0', headers: { 'xero-tenant-id': '{tenantId}' } });
    const req = buildToolRequest(xero, t, {}, { baseUrlVars: { tenantId: '0b1e-42' } });
    expect(req.headers['xero-tenant-id']).toBe('0b1e-42');
    expect(() => buildToolRequest(xero, t, {})).toThrow('The connection has no "tenantId" value');
    expect(() => buildToolRequest(xero, t, {}, { baseUrlVars: { tenantId: 'a\r\nx-evil: 1' } })).toThrow(
      /characters a header cannot/,
    );
    // Tool parameters still cannot reach provider headers.
    expect(
      checkProviderRules({ ...provider('github'), api: { ...provider('github').api, headers: { x: '{nope}' } } }),
    ).toContain('api.headers.x: {nope} is not a connection variable (finalizeFields, tokenResponse.vars, discovery)');
  });

  it("keeps the trailing slash of an endpoint URL (Sentry's /oauth/token/), not of a base URL", () => {
    expect(fillUrl('https://sentry.io/oauth/token/', {})).toBe('https://sentry.io/oauth/token/');
    expect(fillUrl('https://{site}.example.test/api/0/', { site: 'acme' })).toBe('https://acme.example.test/api/0/');
    expect(fillBaseUrl('https://api.example.test/v1/', {})).toBe('https://api.example.test/v1');
    expect(() => fillUrl('https://{sub}.example.test/', { sub: 'a/b' })).toThrow(/characters a URL part/);
  });

  it('fills base URL variables of the connection and refuses unsafe values', () => {
    const req = buildToolRequest(
      provider('jira'),
      tool('jira', 'get_issue'),
      { issueIdOrKey: 'ENG-42' },
      {
        baseUrlVars: { cloudId: '11111111-2222-3333-4444-555555555555' },
      },
    );
    expect(req.url).toMatch(
      /^https:\/\/api\.atlassian\.com\/ex\/jira\/11111111-2222-3333-4444-555555555555\/rest\/api\/3\/issue\/ENG-42\?/,
    );
    const sf = buildToolRequest(
      provider('salesforce'),
      tool('salesforce', 'soql_query'),
      { q: 'SELECT Id FROM Account' },
      {
        baseUrlVars: { instanceUrl: 'https://acme.my.salesforce.com/' },
      },
    );
    expect(sf.url).toBe('https://acme.my.salesforce.com/services/data/v62.0/query?q=SELECT+Id+FROM+Account');

    expect(() => buildToolRequest(provider('jira'), tool('jira', 'get_issue'), { issueIdOrKey: 'A-1' })).toThrow(
      'The connection has no "cloudId" value; finalize or reconnect it',
    );
    expect(() => fillBaseUrl('https://{sub}.example.test', { sub: 'evil.test/x?' })).toThrow(/characters a URL part/);
    expect(() => fillBaseUrl('{origin}/api', { origin: 'https://user:pw@evil.test' })).toThrow(
      /plain http\(s\) origin/,
    );
    expect(() => fillBaseUrl('{origin}/api', { origin: 'javascript:alert(1)' })).toThrow(/plain http\(s\) origin/);
  });

  it('answers a 422 ToolArgumentError naming each faulty argument', () => {
    let caught: unknown;
    try {
      buildToolRequest(provider('github'), tool('github', 'get_issue'), {
        owner: 'o',
        issue_number: 'seven',
        colour: 'red',
      });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ToolArgumentError);
    expect(caught).toBeInstanceOf(ValidationError);
    const err = caught as ToolArgumentError;
    expect(err.statusCode).toBe(422);
    expect(err.toBody()).toEqual({
      error: 'ToolArgumentError',
      message:
        'Invalid arguments: arguments.repo is required; arguments.issue_number must be integer, got string; arguments.colour is not a parameter of this tool',
      statusCode: 422,
      details: [
        { field: 'arguments.repo', message: 'is required' },
        { field: 'arguments.issue_number', message: 'must be integer, got string' },
        { field: 'arguments.colour', message: 'is not a parameter of this tool' },
      ],
    });
    expect(() => buildToolRequest(provider('github'), tool('github', 'search_code'), 'q=x')).toThrow(
      'Invalid arguments: arguments must be object, got string',
    );
    expect(() =>
      buildToolRequest(provider('github'), tool('github', 'list_pull_requests'), {
        owner: 'o',
        repo: 'r',
        state: 'merged',
      }),
    ).toThrow('arguments.state must be one of "open", "closed", "all"');
    expect(() =>
      buildToolRequest(provider('asana'), tool('asana', 'list_projects'), { workspace: 'w', limit: 1000 }),
    ).toThrow('arguments.limit must be at most 100');
  });

  it('strips line breaks from header values made of arguments', () => {
    const t = makeTool({
      name: 'h_tool',
      description: 'A tool used only by this test.',
      mode: 'read',
      parameters: { type: 'object', properties: { v: { type: 'string', description: 'Value.' } }, required: ['v'] },
      request: { method: 'GET', path: '/h', headers: { 'X-Thing': 'pre-{{v}}' } },
    });
    const req = buildToolRequest(api({ baseUrl: 'https://api.example.test' }), t, { v: 'a\r\nX-Evil: 1' });
    expect(req.headers['x-thing']).toBe('pre-a X-Evil: 1');
  });

  it('sends a text body as it is (file content), with the content type the tool names', () => {
    const t = makeTool({
      name: 'upload_content',
      description: 'Upload the content of a file as text.',
      parameters: {
        type: 'object',
        properties: { content: { type: 'string', description: 'The text.' } },
        required: ['content'],
      },
      mode: 'write',
      request: {
        method: 'PATCH',
        path: '/f',
        headers: { 'Content-Type': 'text/markdown; charset=utf-8' },
        body: '{{content}}',
        bodyFormat: 'text',
      },
    });
    const text = '# Notes\n"quoted" and {"json": 1}\n';
    const req = buildToolRequest(api({ baseUrl: 'https://upload.example.test' }), t, { content: text });
    expect(req.body).toBe(text);
    expect(req.headers['content-type']).toBe('text/markdown; charset=utf-8');
    const plain = makeTool({ ...t, request: { method: 'PATCH', path: '/f', body: '{{content}}', bodyFormat: 'text' } });
    expect(
      buildToolRequest(api({ baseUrl: 'https://upload.example.test' }), plain, { content: 'x' }).headers,
    ).toMatchObject({ 'content-type': 'text/plain; charset=utf-8' });
  });

  it('sends form bodies when the tool asks for them', () => {
    const t = makeTool({
      name: 'f_tool',
      description: 'A tool used only by this test.',
      mode: 'write',
      parameters: {
        type: 'object',
        properties: {
          a: { type: 'string', description: 'A.' },
          b: { type: 'array', items: { type: 'integer' }, description: 'B.' },
        },
      },
      request: { method: 'POST', path: '/f', body: { a: '{{a}}', b: '{{b}}', c: 'fixed' }, bodyFormat: 'form' },
    });
    const req = buildToolRequest(api({ baseUrl: 'https://api.example.test' }), t, { a: 'x y', b: [1, 2] });
    expect(req.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(req.body).toBe('a=x+y&b=1&b=2&c=fixed');
  });
});

describe('fillTemplate', () => {
  it('keeps the type of an exact placeholder and stringifies inside text', () => {
    expect(fillTemplate({ n: '{{n}}', s: 'n={{n}}', o: '{{o}}' }, { n: 3, o: { a: [1] } })).toEqual({
      n: 3,
      s: 'n=3',
      o: { a: [1] },
    });
  });

  it('drops a text value when any of its placeholders is absent, and empty containers with it', () => {
    expect(fillTemplate({ a: 'x-{{m}}', keep: {}, list: ['{{m}}'], nested: { only: '{{m}}' } }, {})).toEqual({
      keep: {},
    });
  });

  it('maps arrays with $each and guards objects with $if', () => {
    expect(
      fillTemplate(
        { list: { $each: 'xs', template: { v: '{{item}}', tag: '{{t}}' } }, opt: { $if: ['t', 'u'], t: '{{t}}' } },
        { xs: ['a', 'b'], t: 'T' },
      ),
    ).toEqual({
      list: [
        { v: 'a', tag: 'T' },
        { v: 'b', tag: 'T' },
      ],
    });
  });
});

describe('pagination', () => {
  const base: BuiltRequest = { method: 'GET', url: 'https://api.example.test/items?limit=10', headers: {} };
  const paged = (pagination: unknown, response: unknown = {}) =>
    makeTool({
      name: 'p_tool',
      description: 'A tool used only by this test.',
      mode: 'read',
      parameters: { type: 'object', properties: {} },
      request: { method: 'GET', path: '/items', pagination },
      response,
    });

  it('sends a cursor back as a query parameter until there is none or maxPages is reached', () => {
    const t = paged({ style: 'cursor', cursorPath: 'meta.next', param: 'cursor', maxPages: 3 });
    const second = nextPageRequest(t, base, { body: { meta: { next: 'c2' } }, headers: {} }, 1);
    expect(second?.url).toBe('https://api.example.test/items?limit=10&cursor=c2');
    const third = nextPageRequest(t, second as BuiltRequest, { body: { meta: { next: 'c3' } }, headers: {} }, 2);
    expect(third?.url).toBe('https://api.example.test/items?limit=10&cursor=c3');
    expect(
      nextPageRequest(t, third as BuiltRequest, { body: { meta: { next: 'c4' } }, headers: {} }, 3),
    ).toBeUndefined();
    expect(nextPageRequest(t, base, { body: { meta: { next: '' } }, headers: {} }, 1)).toBeUndefined();
    expect(nextPageRequest(t, base, { body: { meta: {} }, headers: {} }, 1)).toBeUndefined();
  });

  it('puts a body cursor at its path and stops when has_more is false (Notion)', () => {
    const search = tool('notion', 'search');
    const first = buildToolRequest(provider('notion'), search, { query: 'plan' });
    const second = nextPageRequest(search, first, { body: { next_cursor: 'abc', has_more: true }, headers: {} }, 1);
    expect(JSON.parse(second?.body as string)).toMatchObject({ query: 'plan', start_cursor: 'abc' });
    expect(
      nextPageRequest(search, first, { body: { next_cursor: 'abc', has_more: false }, headers: {} }, 1),
    ).toBeUndefined();

    const linear = tool('linear', 'search_issues');
    const q = buildToolRequest(provider('linear'), linear, { term: 'x' });
    const answer = { data: { searchIssues: { pageInfo: { hasNextPage: true, endCursor: 'e1' } } } };
    expect(JSON.parse(nextPageRequest(linear, q, { body: answer, headers: {} }, 1)?.body as string).variables).toEqual({
      term: 'x',
      first: 20,
      after: 'e1',
    });
  });

  it('follows a same-origin Link rel="next" only (GitHub)', () => {
    const t = tool('github', 'list_repository_issues');
    const link =
      '<https://api.github.com/repositories/1/issues?page=2>; rel="next", <https://api.github.com/repositories/1/issues?page=5>; rel="last"';
    const gh: BuiltRequest = { method: 'GET', url: 'https://api.github.com/repos/o/r/issues', headers: {} };
    expect(nextPageRequest(t, gh, { body: [], headers: { link } }, 1)?.url).toBe(
      'https://api.github.com/repositories/1/issues?page=2',
    );
    const elsewhere = '<https://evil.test/steal>; rel="next"';
    expect(nextPageRequest(t, gh, { body: [], headers: { link: elsewhere } }, 1)).toBeUndefined();
    expect(nextLink('<https://a.test/?p=2>; rel="prev", <https://a.test/?p=4>; rel="next"')).toBe(
      'https://a.test/?p=4',
    );
    expect(nextLink(undefined)).toBeUndefined();
  });

  it('follows a next URL from the answer, relative ones against the origin (Salesforce, Graph)', () => {
    const soql = tool('salesforce', 'soql_query');
    const prev: BuiltRequest = {
      method: 'GET',
      url: 'https://acme.my.salesforce.com/services/data/v62.0/query?q=x',
      headers: {},
    };
    const next = nextPageRequest(
      soql,
      prev,
      { body: { nextRecordsUrl: '/services/data/v62.0/query/01g-2000' }, headers: {} },
      1,
    );
    expect(next?.url).toBe('https://acme.my.salesforce.com/services/data/v62.0/query/01g-2000');
    const graph = tool('outlook', 'list_events');
    const g: BuiltRequest = { method: 'GET', url: 'https://graph.microsoft.com/v1.0/me/calendarView', headers: {} };
    const body = { '@odata.nextLink': 'https://graph.microsoft.com/v1.0/me/calendarView?$skip=50' };
    expect(nextPageRequest(graph, g, { body, headers: {} }, 1)?.url).toBe(
      'https://graph.microsoft.com/v1.0/me/calendarView?$skip=50',
    );
    const off = { '@odata.nextLink': 'https://other.test/x' };
    expect(nextPageRequest(graph, g, { body: off, headers: {} }, 1)).toBeUndefined();
  });

  it('counts pages up until a page lists nothing', () => {
    const t = paged({ style: 'page', param: 'page', start: 1, maxPages: 5 }, { listPath: 'items' });
    const p2 = nextPageRequest(t, base, { body: { items: [1] }, headers: {} }, 1);
    expect(p2?.url).toBe('https://api.example.test/items?limit=10&page=2');
    const p3 = nextPageRequest(t, p2 as BuiltRequest, { body: { items: [2] }, headers: {} }, 2);
    expect(p3?.url).toBe('https://api.example.test/items?limit=10&page=3');
    expect(nextPageRequest(t, p3 as BuiltRequest, { body: { items: [] }, headers: {} }, 3)).toBeUndefined();
  });

  it('has no next page without pagination', () => {
    expect(nextPageRequest(paged({ style: 'none' }), base, { body: { next: 'x' }, headers: {} }, 1)).toBeUndefined();
  });
});

describe('provider signals', () => {
  const now = Date.parse('2024-05-01T12:00:00Z');

  it('reads Retry-After as seconds or as a date on a 429', () => {
    const p = provider('gmail');
    expect(rateLimitDelaySeconds(p, 429, { 'retry-after': '7' }, {}, now)).toBe(7);
    expect(rateLimitDelaySeconds(p, 429, { 'retry-after': 'Wed, 01 May 2024 12:00:30 GMT' }, {}, now)).toBe(30);
    expect(rateLimitDelaySeconds(p, 429, {}, {}, now)).toBe(1);
    expect(rateLimitDelaySeconds(p, 500, { 'retry-after': '7' }, {}, now)).toBeUndefined();
  });

  it("tells GitHub's rate-limit 403 from a permission 403", () => {
    const gh = provider('github');
    const reset = String(now / 1000 + 42);
    expect(rateLimitDelaySeconds(gh, 403, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': reset }, {}, now)).toBe(
      42,
    );
    expect(rateLimitDelaySeconds(gh, 403, { 'x-ratelimit-remaining': '4999' }, {}, now)).toBeUndefined();
    expect(rateLimitDelaySeconds(gh, 403, {}, { message: 'Resource not accessible' }, now)).toBeUndefined();
    expect(rateLimitDelaySeconds(gh, 403, { 'retry-after': '60', 'x-ratelimit-remaining': '10' }, {}, now)).toBe(60);
  });

  it('reads a wait from the body (Discord) and a reset in epoch milliseconds (Linear)', () => {
    expect(rateLimitDelaySeconds(provider('discord'), 429, {}, { retry_after: 1.5 }, now)).toBe(2);
    const lin = provider('linear');
    const headers = { 'x-ratelimit-requests-remaining': '0', 'x-ratelimit-requests-reset': String(now + 10_000) };
    expect(rateLimitDelaySeconds(lin, 400, headers, {}, now)).toBe(10);
    expect(rateLimitDelaySeconds(lin, 400, { 'x-ratelimit-requests-remaining': '12' }, {}, now)).toBeUndefined();
  });

  it('finds failures hidden in 2xx answers (Slack ok:false, GraphQL errors)', () => {
    expect(providerErrorMessage(provider('slack'), { ok: false, error: 'channel_not_found' })).toBe(
      'channel_not_found',
    );
    expect(providerErrorMessage(provider('slack'), { ok: true, channel: 'C1' })).toBeUndefined();
    expect(providerErrorMessage(provider('linear'), { errors: [{ message: 'Entity not found' }] })).toBe(
      'Entity not found',
    );
    expect(providerErrorMessage(provider('linear'), { data: { issue: null } })).toBeUndefined();
    expect(providerErrorMessage(api({ baseUrl: 'https://x.test', errors: { okPath: 'ok' } }), { ok: false })).toBe(
      'The provider reported a failure',
    );
  });
});
