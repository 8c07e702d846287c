import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createHarness, createUser, type TestHarness } from '../../test/harness.ts';
import { csrfOf, PageClient, pageSuite } from '../../test/web-client.ts';
import { toolTestRuns } from '../db/schema/index.ts';

/** The tools and skills pages without a browser: sign-in, CSRF, other accounts' resources, the PRG answers. */
describe('tools and skills pages', () => {
  let h: TestHarness;
  const suite = pageSuite({}, (started) => (h = started));
  const signedIn = () => suite.signedIn();

  it('send a signed-out browser to sign in and back', async () => {
    for (const path of ['/account/tools', '/account/skills', '/account/tools/tool_x', '/account/skills/skl_x']) {
      const res = await new PageClient(h.app).get(path);
      expect(res.statusCode, path).toBe(303);
      expect(res.headers.location).toBe(`/signin?return_to=${encodeURIComponent(path)}`);
    }
  });

  it('refuse a form without its CSRF token, and change nothing', async () => {
    const { u, browser } = await signedIn();
    const res = await browser.post('/account/tools', { name: 'x', code: 'return 1;' });
    expect(res.statusCode).toBe(403);
    const skill = await browser.post('/account/skills', { name: 'x', prompt: 'p', csrf: 'forged' });
    expect(skill.statusCode).toBe(403);
    expect((await call(h.app, 'GET', '/api/v1/tools', { token: u.sessionToken })).json().data).toEqual([]);
    expect((await call(h.app, 'GET', '/api/v1/skills', { token: u.sessionToken })).json().data).toEqual([]);
  });

  it("create with a redirect (PRG), and answer 404 for another account's tool or skill", async () => {
    const { u, browser } = await signedIn();
    const csrf = csrfOf((await browser.get('/account/tools')).body);
    const created = await browser.post('/account/tools', {
      csrf,
      name: 'adder',
      language: 'javascript',
      parameters: '{"type":"object","properties":{"a":{"type":"number"}}}',
      requiredSecrets: 'KEY, OTHER',
      code: 'return args.a + 1;',
    });
    expect(created.statusCode).toBe(303);
    const [tool] = (await call(h.app, 'GET', '/api/v1/tools', { token: u.sessionToken })).json().data;
    expect(tool).toMatchObject({ name: 'adder', requiredSecrets: ['KEY', 'OTHER'], timeoutMs: null });
    expect(created.headers.location).toBe(`/account/tools/${tool.id}`);
    // The notice shows on the page the redirect lands on, once.
    expect((await browser.get(`/account/tools/${tool.id}`)).body).toContain(
      '<p class="notice" role="status">Created.</p>',
    );
    expect((await browser.get(`/account/tools/${tool.id}`)).body).not.toContain('Created.');
    const refused = await browser.post('/account/tools', { csrf, name: 'bad', parameters: '{not json', code: 'x' });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('The tool was not created: Parameters must be JSON (a JSON Schema object).');
    expect(refused.body).toContain('{not json');
    // JSON in a form field is held to the JSON bodies' depth limit (security review, item 4): a 422, not a 500.
    const deep = `{"type":"object","x":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    const tooDeep = await browser.post('/account/tools', {
      csrf,
      name: 'deep',
      language: 'javascript',
      parameters: deep,
      code: 'return 1;',
    });
    expect(tooDeep.statusCode).toBe(422);
    expect(tooDeep.body).toContain('JSON must not nest arrays and objects more than 64 levels deep');
    const deepArgs = await browser.post(`/account/tools/${tool.id}/test`, {
      csrf,
      arguments: `{"a":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
    });
    expect(deepArgs.statusCode).toBe(422);
    expect(deepArgs.body).toContain('JSON must not nest arrays and objects more than 64 levels deep');

    const other = await signedIn();
    const theirs = await other.browser.get(`/account/tools/${tool.id}`);
    expect(theirs.statusCode).toBe(404);
    expect(theirs.body).toContain(`Tool ${tool.id} not found`);
    expect(theirs.body).not.toContain('return args.a + 1;');
    const otherCsrf = csrfOf(theirs.body);
    const deleted = await other.browser.post(`/account/tools/${tool.id}/delete`, { csrf: otherCsrf });
    expect(deleted.statusCode).toBe(404);
    expect((await call(h.app, 'GET', `/api/v1/tools/${tool.id}`, { token: u.sessionToken })).statusCode).toBe(200);

    const skill = await browser.post('/account/skills', { csrf, name: 'Mine', description: '', prompt: 'Do it.' });
    expect(skill.statusCode).toBe(303);
    const skillId = String(skill.headers.location).split('/').pop()?.split('?')[0] ?? '';
    expect((await other.browser.get(`/account/skills/${skillId}`)).statusCode).toBe(404);
    expect((await browser.get(`/account/skills/${skillId}`)).body).toContain('Do it.');
  });

  it("a Python tool's test form says, once sent, that the first Python run takes about 10 s", async () => {
    const { u, browser } = await signedIn();
    const created = await call(h.app, 'POST', '/api/v1/tools', {
      token: u.sessionToken,
      body: { name: 'py_echo', language: 'python', code: 'args', parameters: { type: 'object' } },
    });
    expect(created.statusCode, created.body).toBe(201);
    const page = (await browser.get(`/account/tools/${created.json().id}`)).body;
    expect(page).toContain(
      'data-busy="Running the test… The first Python run after the service starts takes about 10 s while Python loads."',
    );
    expect(page).toMatch(/<script src="\/assets\/busy\.js\?v=[0-9a-f]{12}" defer><\/script>/);
  });
});

/**
 * Issue 39 item 6: behind a round-robin balancer the page a test run redirects to is often served by another
 * instance. The run's result is kept in the database, so every instance shows it.
 */
describe("a tool test run's result, across instances", () => {
  let h: TestHarness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('run on instance A, shown on instance B (only to its account, only for its tool)', async () => {
    const b = await h.extraApp();
    const u = await createUser(h.app);
    const onA = new PageClient(h.app);
    expect((await onA.signIn(u.account.email, u.password)).statusCode).toBe(303);
    const created = await call(h.app, 'POST', '/api/v1/tools', {
      token: u.sessionToken,
      body: {
        name: 'adder',
        language: 'javascript',
        parameters: { type: 'object' },
        code: 'console.log("seen"); return args.a + 1;',
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const toolId: string = created.json().id;
    const page = await onA.get(`/account/tools/${toolId}`);
    const ran = await onA.post(`/account/tools/${toolId}/test`, { csrf: csrfOf(page.body), arguments: '{"a":41}' });
    expect(ran.statusCode, ran.body).toBe(303);
    const location = String(ran.headers.location);
    expect(location).toMatch(new RegExp(`^/account/tools/${toolId}\\?run=[A-Za-z0-9_-]{22}#result$`));

    // The same browser (its cookies) on the other instance.
    const onB = new PageClient(b);
    for (const [k, v] of onA.jar) onB.jar.set(k, v);
    const shown = await onB.get(location.replace(/#.*/, ''));
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain('<pre id="run-result">42</pre>');
    expect(shown.body).toContain('<pre id="run-stdout">seen\n</pre>');
    expect(shown.body).toContain('{&quot;a&quot;:41}');
    expect(shown.body).not.toContain('no longer kept');

    // Another account's browser with the same link: its own tool id is not this one (404), and the key alone
    // shows nothing on one of its own tools.
    const other = await createUser(b);
    const theirs = new PageClient(b);
    expect((await theirs.signIn(other.account.email, other.password)).statusCode).toBe(303);
    const theirTool = await call(b, 'POST', '/api/v1/tools', {
      token: other.sessionToken,
      body: { name: 'mine', language: 'javascript', parameters: { type: 'object' }, code: 'return 0;' },
    });
    const key = new URL(location, 'http://x').searchParams.get('run');
    expect((await theirs.get(`/account/tools/${toolId}?run=${key}`)).statusCode).toBe(404);
    const wrongTool = await theirs.get(`/account/tools/${theirTool.json().id}?run=${key}`);
    expect(wrongTool.statusCode).toBe(200);
    expect(wrongTool.body).not.toContain('run-result');
    expect(wrongTool.body).toContain(
      "That run's result is no longer kept (results are kept for 10 minutes): run the test again.",
    );
    // Stored sealed: what the tool printed is not in the clear.
    const [row] = await h.database.db.select().from(toolTestRuns).where(eq(toolTestRuns.toolId, toolId));
    expect(row?.runEnc).toMatch(/^v1\./);
    expect(row?.runEnc).not.toContain('seen');
  });
});
