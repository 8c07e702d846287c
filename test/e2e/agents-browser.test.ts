import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/types.ts';
import { type FakeLlm, startFakeLlm } from '../fakes/llm-upstream.ts';
import { call, createHarness, createUser, type TestHarness } from '../harness.ts';
import { artifactPath, launchBrowser, runBrowser, type TestBrowser } from './browser.ts';
import { listeningApp } from './oauth-helpers.ts';

/**
 * A person on the agents pages in a real browser: makes an agent, chats (a tool step is shown), reopens the
 * conversation, continues it, and deletes it; a reload after sending does not send again.
 */
describe.skipIf(!runBrowser)('agents pages in a real browser (chromium)', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  let app: App;
  let base: string;
  let browser: TestBrowser;
  const env = () => ({ LLM_BASE_URL: llm.url, LLM_MODELS: 'fake-model=1000000/2000000' });

  beforeAll(async () => {
    llm = await startFakeLlm();
    h = await createHarness(env());
    ({ app, base } = await listeningApp(h, env()));
    browser = await launchBrowser({ width: 900, height: 1100 });
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await llm?.close();
  });

  it('creates an agent, chats with tool steps visible, reopens and deletes a conversation', async () => {
    const user = await createUser(app);
    const page = await browser.context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${base}/account/agents`);
    await page.getByLabel('E-mail').fill(user.account.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Agents', exact: true }).waitFor();
    expect(await page.getByText('No agents yet').isVisible()).toBe(true);

    await page.getByLabel('Name').fill('Desk helper');
    await page.getByLabel('Personality').fill('Answer in one sentence.');
    await page.getByLabel('knowledge-base').check();
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByRole('heading', { name: 'Desk helper', level: 1 }).waitFor();

    llm.enqueue(
      { toolCalls: [{ name: 'knowledge-list-bases', arguments: {} }] },
      { content: 'You have **one** base.' },
    );
    await page.getByLabel('Message').fill('Which knowledge bases do I have?');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('ol.chat li.assistant').waitFor();
    expect(await page.locator('ol.chat li.user').textContent()).toContain('Which knowledge bases do I have?');
    expect(await page.locator('ol.chat li.tool').first().textContent()).toContain('Called knowledge-list-bases');
    expect(await page.locator('ol.chat li.assistant strong').textContent()).toBe('one');
    expect(String(llm.requests[0]?.messages[0]?.content)).toContain('Answer in one sentence.');
    const url = new URL(page.url());
    expect(url.searchParams.get('c')).toMatch(/^conv_/);
    // The answer came by a redirect: reloading asks nothing again.
    await page.reload();
    expect(llm.requests).toHaveLength(2);

    llm.enqueue({ content: 'Still one.' });
    await page.getByLabel('Message').fill('And now?');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('Still one.').waitFor();
    expect(await page.locator('ol.chat li.assistant').count()).toBe(2);
    expect(llm.requests[2]?.messages.some((m) => m.content === 'Which knowledge bases do I have?')).toBe(true);
    await page.screenshot({ path: artifactPath('agents-chat'), fullPage: true });

    // Reopen from the list, then delete.
    await page.getByRole('link', { name: 'New conversation' }).click();
    await page.getByRole('link', { name: 'Which knowledge bases do I have?' }).click();
    expect(await page.locator('ol.chat li.assistant').count()).toBe(2);
    await page.getByRole('button', { name: /Delete/ }).click();
    await page.getByText('None yet.').waitFor();
    const agents = (await call(app, 'GET', '/api/v1/agents', { token: user.sessionToken })).json().data;
    const conversations = await call(app, 'GET', `/api/v1/agents/${agents[0].id}/conversations`, {
      token: user.sessionToken,
    });
    expect(conversations.json().pagination.total).toBe(0);

    // Another account's agent is a 404 page.
    const other = await createUser(app);
    const theirs = (
      await call(app, 'POST', '/api/v1/agents', { token: other.sessionToken, body: { name: 'x' } })
    ).json().id;
    const res = await page.goto(`${base}/account/agents/${theirs}`);
    expect(res?.status()).toBe(404);
  });
});
