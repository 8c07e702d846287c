import { describe, expect, it } from 'vitest';
import type { App } from '../../src/http/types.ts';
import { call, createUser, type TestHarness } from '../harness.ts';
import { browserSuite, keepScreenshot, runBrowser, submitSignIn, type TestBrowser } from './browser.ts';

/**
 * A person on the tools and skills pages in a real browser: writes a tool (a refused schema keeps the form),
 * edits its code and schema, runs a test with a secret and sees the returned value and output (the secret cut
 * out), reloads without running again; writes, edits and deletes a skill.
 */
describe.skipIf(!runBrowser)('tools and skills pages in a real browser (chromium)', () => {
  let h: TestHarness;
  let app: App;
  let base: string;
  let browser: TestBrowser;
  // The fake LLM is there because agents need a model to be made; nothing here calls it.
  browserSuite((s) => ({ h, app, base, browser } = s), { viewport: { width: 1000, height: 1200 } });

  it('creates a tool, edits its code and schema, runs a test and sees the result', async () => {
    const user = await createUser(app);
    const page = await browser.newPage(20_000);
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${base}/account/tools`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await submitSignIn(page, user);
    await page.getByRole('heading', { name: 'Tools', exact: true }).waitFor();
    expect(await page.getByText('No tools yet').isVisible()).toBe(true);

    // A schema that is not an object is refused, and the form keeps what was typed.
    await page.getByLabel('Name').fill('shout');
    await page.getByLabel('Parameters (JSON Schema)').fill('{"type": "string"}');
    await page.getByRole('button', { name: 'Create tool' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toBe(
      'The tool was not created: parameters must be a JSON Schema with "type": "object"',
    );
    expect(await page.getByLabel('Name').inputValue()).toBe('shout');

    await page
      .getByLabel('Parameters (JSON Schema)')
      .fill('{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}');
    await page.getByLabel('Required secrets').fill('SUFFIX');
    await page.getByLabel('Code').fill('return args.text.toUpperCase();');
    await page.getByRole('button', { name: 'Create tool' }).click();
    await page.getByRole('heading', { name: 'shout', level: 1 }).waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Created.');

    // Edit the code and the schema.
    await page
      .getByLabel('Code')
      .fill('console.log("key is " + secrets.SUFFIX);\nreturn args.text.toUpperCase() + "!" ;');
    await page
      .getByLabel('Parameters (JSON Schema)')
      .fill('{"type":"object","properties":{"text":{"type":"string","minLength":1}},"required":["text"]}');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Saved.');
    const tools = (await call(app, 'GET', '/api/v1/tools', { token: user.sessionToken })).json().data;
    expect(tools).toHaveLength(1);
    expect(tools[0].parameters.properties.text.minLength).toBe(1);

    // Arguments that miss the schema are refused before anything runs.
    await page.getByLabel('Arguments (JSON)').fill('{}');
    await page.getByRole('button', { name: 'Run test' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain("must have required property 'text'");

    // Once sent, the form says the run is under way and cannot be sent twice (held here: the post is not let go).
    const toolUrl = page.url().replace(/\/test$/, '');
    await page.evaluate(
      `document.querySelector('form[data-busy]').addEventListener('submit', (e) => e.preventDefault())`,
    );
    await page.getByRole('button', { name: 'Run test' }).click();
    await page.getByText('Running the test…').waitFor();
    await expect.poll(() => page.getByRole('button', { name: 'Run test' }).isDisabled()).toBe(true);
    expect(await page.locator('form[data-busy]').getAttribute('aria-busy')).toBe('true');
    await page.goto(toolUrl);

    await page.getByLabel('Arguments (JSON)').fill('{"text": "hello"}');
    await page.getByLabel('Secret SUFFIX').fill('hunter2-secret');
    await page.getByRole('button', { name: 'Run test' }).click();
    await page.getByRole('heading', { name: 'Result' }).waitFor();
    expect(await page.locator('#run-result').textContent()).toBe('"HELLO!"');
    expect(await page.locator('#run-stdout').textContent()).toBe('key is [secret]\n');
    expect(await page.content()).not.toContain('hunter2-secret');
    expect(await page.getByLabel('Arguments (JSON)').inputValue()).toBe('{"text": "hello"}');
    await keepScreenshot(page, 'tools', { fullPage: true });
    // Reloading shows the same result and runs nothing again.
    const charged = async () =>
      (await call(app, 'GET', '/api/v1/credit-transactions?limit=100', { token: user.sessionToken }))
        .json()
        .data.filter((t: { type: string }) => t.type === 'sandbox').length;
    const before = await charged();
    expect(before).toBe(1);
    await page.reload();
    expect(await page.locator('#run-result').textContent()).toBe('"HELLO!"');
    expect(await charged()).toBe(before);

    // Link the tool to an agent: missing its secret first, then ready once it is set; the value never shows.
    const agent = (
      await call(app, 'POST', '/api/v1/agents', {
        token: user.sessionToken,
        body: { name: 'Shouter', enabledBuiltInTools: [] },
      })
    ).json();
    await page.reload();
    await page.getByLabel('Agent', { exact: true }).selectOption({ label: 'Shouter' });
    await page.getByRole('button', { name: 'Link', exact: true }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Linked to the agent.');
    expect(await page.locator('#agents').textContent()).toContain('missing SUFFIX');
    await page.getByLabel('SUFFIX for Shouter').fill('link-secret-value');
    await page.getByRole('button', { name: 'Save secrets for Shouter' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Secrets saved.');
    expect(await page.locator('#agents .badge').textContent()).toBe('ready');
    expect(await page.content()).not.toContain('link-secret-value');
    const links = (await call(app, 'GET', `/api/v1/agents/${agent.id}/tools`, { token: user.sessionToken })).json();
    expect(links.data[0]).toMatchObject({ ready: true, secrets: [{ name: 'SUFFIX', set: true }] });
    await page.getByRole('button', { name: 'Unlink Shouter' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByText('No agent uses this tool yet.').isVisible()).toBe(true);

    // Another account's tool is a 404 page.
    const other = await createUser(app);
    const theirs = (
      await call(app, 'POST', '/api/v1/tools', { token: other.sessionToken, body: { name: 'x', code: 'return 1;' } })
    ).json().id;
    const res = await page.goto(`${base}/account/tools/${theirs}`);
    expect(res?.status()).toBe(404);
    expect(await page.getByRole('alert').textContent()).toBe(`Tool ${theirs} not found`);

    // Delete.
    await page.goto(`${base}/account/tools/${tools[0].id}`);
    await page.getByRole('button', { name: 'Delete tool' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Deleted.');
    expect(await page.getByText('No tools yet').isVisible()).toBe(true);
    expect(errors.filter((e) => !e.startsWith('Failed to load resource'))).toEqual([]);
  });

  it('creates, edits and deletes a skill', async () => {
    const user = await createUser(app);
    await browser.context.clearCookies();
    const page = await browser.newPage(20_000);
    await page.goto(`${base}/signin?return_to=/account/skills`);
    await submitSignIn(page, user);
    await page.getByRole('heading', { name: 'Skills', exact: true }).waitFor();

    await page.getByLabel('Name').fill('Weekly report');
    await page.getByLabel('Description').fill('Write the weekly status report');
    await page.getByRole('button', { name: 'Create skill' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/^The skill was not created: prompt: /);
    expect(await page.getByLabel('Description').inputValue()).toBe('Write the weekly status report');

    await page.getByLabel('Prompt').fill('Three sections: Done, Next, Risks.');
    await page.getByRole('button', { name: 'Create skill' }).click();
    await page.getByRole('heading', { name: 'Weekly report', level: 1 }).waitFor();
    await page.getByLabel('Prompt').fill('Three sections: Done, Next, Risks. One line each.');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Saved.');
    const skills = (await call(app, 'GET', '/api/v1/skills', { token: user.sessionToken })).json().data;
    expect(skills.map((s: { prompt: string }) => s.prompt)).toEqual([
      'Three sections: Done, Next, Risks. One line each.',
    ]);

    // Link it to an agent whose skills tools are off: the page says so.
    await call(app, 'POST', '/api/v1/agents', {
      token: user.sessionToken,
      body: { name: 'Reporter', enabledBuiltInTools: [] },
    });
    await page.reload();
    await page.getByRole('button', { name: 'Link', exact: true }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Linked to the agent.');
    expect(await page.locator('#agents').textContent()).toContain('skills tools off');
    await page.getByRole('button', { name: 'Unlink Reporter' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByText('No agent has this skill yet.').isVisible()).toBe(true);

    await page.getByRole('link', { name: '← Skills' }).click();
    expect(await page.locator('ul.items a').allTextContents()).toEqual(['Weekly report']);
    await page.getByRole('link', { name: 'Weekly report' }).click();
    await page.getByRole('button', { name: 'Delete skill' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByText('No skills yet').isVisible()).toBe(true);
    await keepScreenshot(page, 'skills', { fullPage: true });
  });
});
