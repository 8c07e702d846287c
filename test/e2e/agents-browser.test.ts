import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import type { Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { accounts } from '../../src/db/schema/index.ts';
import type { App } from '../../src/http/types.ts';
import { AVAILABLE_GROUPS, GROUP_DESCRIPTIONS } from '../../src/modules/agents/schema.ts';
import type { FakeLlm } from '../fakes/llm-upstream.ts';
import { call, createUser, FAKE_MODELS, type TestHarness, type TestUser } from '../harness.ts';
import { browserSuite, keepScreenshot, runBrowser, submitSignIn, suiteBrowser, type TestBrowser } from './browser.ts';

/**
 * A person on the agents pages in a real browser. Without JavaScript: makes an agent, chats (a tool step is
 * shown), reopens the conversation, continues it, and deletes it; a reload after sending does not send again.
 * With JavaScript: the reply streams in (partial text and the tool step shown before the stream ends) and the
 * page ends as a reload shows it; refusals (402, 429) and a usage limit read as sentences.
 */
describe.skipIf(!runBrowser)('agents pages in a real browser (chromium)', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  let app: App;
  let base: string;
  // The page's chat rate limit is low, so its 429 can be seen; each describe launches its own browser.
  // A second model, so the settings form can change an agent's model.
  browserSuite((s) => ({ h, llm, app, base } = s), {
    appEnv: { RATE_LIMIT_LLM: '4', LLM_MODELS: `${FAKE_MODELS},fake-model-2=1000000/2000000` },
    viewport: false,
  });
  beforeEach(() => {
    llm.reset();
    llm.requests.length = 0;
  });

  /** Signs in afresh as `user` (the profile's earlier session goes) and lands on `path`. */
  const signIn = async (page: Page, user: TestUser, path: string) => {
    await page.context().clearCookies();
    await page.goto(`${base}${path}`);
    await submitSignIn(page, user);
  };

  describe('without JavaScript', () => {
    let browser: TestBrowser;
    suiteBrowser((b) => (browser = b), { width: 900, height: 1100 }, { javaScript: false });

    it('creates an agent, chats with tool steps visible, reopens and deletes a conversation', async () => {
      const user = await createUser(app);
      const page = await browser.newPage();
      await page.goto(`${base}/account/agents`);
      await submitSignIn(page, user);
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
      await keepScreenshot(page, 'agents-chat', { fullPage: true });

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

  describe('with JavaScript', () => {
    let browser: TestBrowser;
    suiteBrowser((b) => (browser = b), { width: 900, height: 1100 });

    it('streams the reply in: partial text and the tool step before the end; a reload shows the same', async () => {
      const user = await createUser(app);
      const agent = (
        await call(app, 'POST', '/api/v1/agents', {
          token: user.sessionToken,
          body: { name: 'Streamer', enabledBuiltInTools: ['knowledge-base'] },
        })
      ).json();
      const page = await browser.newPage();
      const scriptErrors: string[] = [];
      page.on('pageerror', (e) => scriptErrors.push(e.message));
      page.on('console', (m) => {
        if (m.type() === 'error') scriptErrors.push(m.text());
      });
      await signIn(page, user, `/account/agents/${agent.id}`);
      await page.getByRole('heading', { name: 'Streamer', level: 1 }).waitFor();

      const words = 'Streaming words arrive here one at a time for you to read';
      llm.enqueue(
        { toolCalls: [{ name: 'knowledge-list-bases', arguments: {} }], delayMs: 1500 },
        { content: words, chunkDelayMs: 300 },
      );
      await page.getByLabel('Message').fill('Which knowledge bases do I have?');
      await page.getByRole('button', { name: 'Send' }).click();
      // A slow model: until its first words, the agent's turn says that work is under way.
      const waiting = page.locator('ol.chat li.waiting[role="status"]', { hasText: 'Working on it…' });
      await waiting.waitFor();
      expect(await page.locator('ol.chat li').last().getAttribute('class')).toBe('msg assistant waiting');
      // The tool step shows while the model is still writing.
      await page.locator('ol.chat li.tool', { hasText: 'Called knowledge-list-bases' }).waitFor();
      const streaming = page.locator('ol.chat li.assistant.streaming');
      await streaming.getByText('Streaming words').waitFor();
      expect(await waiting.count()).toBe(0);
      const partial = (await streaming.textContent()) ?? '';
      expect(partial).toContain('Streaming words');
      expect(partial).not.toContain('to read');
      expect(await page.locator('ol.chat').getAttribute('aria-busy')).toBe('true');
      // The conversation's URL is there before the answer is complete.
      expect(new URL(page.url()).searchParams.get('c')).toMatch(/^conv_/);
      await keepScreenshot(page, 'agents-chat-streaming', { fullPage: true });

      // At the end the page is what the server renders for the conversation.
      await page.locator('ol.chat:not([aria-busy]) li.assistant:not(.streaming)', { hasText: 'to read' }).waitFor();
      expect(await page.locator('ol.chat').getAttribute('aria-busy')).toBeNull();
      const conversationId = new URL(page.url()).searchParams.get('c');
      expect(conversationId).toMatch(/^conv_/);
      const shown = await page.locator('ol.chat').innerText();
      expect(shown).toContain('Which knowledge bases do I have?');
      expect(shown).toContain('Called knowledge-list-bases');
      expect(shown).toContain('Tool result: knowledge-list-bases');
      expect(shown).toContain(words);
      expect(await page.getByRole('link', { name: 'Which knowledge bases do I have?' }).count()).toBe(0);
      expect(await page.locator('strong[aria-current="page"]').textContent()).toBe('Which knowledge bases do I have?');
      expect(llm.requests).toHaveLength(2);
      expect(llm.requests[1]?.stream).toBe(true);
      await page.reload();
      expect(await page.locator('ol.chat').innerText()).toBe(shown);
      expect(new URL(page.url()).searchParams.get('c')).toBe(conversationId);
      expect(llm.requests).toHaveLength(2);
      // Stored as the API lists it: the question, the call, its result, the answer.
      const stored = (
        await call(app, 'GET', `/api/v1/agents/${agent.id}/conversations/${conversationId}/messages`, {
          token: user.sessionToken,
        })
      ).json().data as Array<{ role: string; content: string | null }>;
      expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(stored.at(-1)?.content).toBe(words);

      // The next message continues the same conversation.
      llm.enqueue({ content: 'Still **one**.' });
      await page.getByLabel('Message').fill('And now?');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.locator('ol.chat:not([aria-busy]) li.assistant:not(.streaming) strong', { hasText: 'one' }).waitFor();
      expect(new URL(page.url()).searchParams.get('c')).toBe(conversationId);
      expect(llm.requests.at(-1)?.messages.some((m) => m.content === 'Which knowledge bases do I have?')).toBe(true);
      expect(await page.locator('ol.chat li.assistant').count()).toBe(2);
      await keepScreenshot(page, 'agents-chat-streamed', { fullPage: true });
      expect(scriptErrors).toEqual([]);
    });

    it('edits the settings (each field stored, a bad value refused with the form kept); the code examples work', async () => {
      const user = await createUser(app);
      const created = await call(app, 'POST', '/api/v1/agents', {
        token: user.sessionToken,
        body: { name: 'Tuner', personality: 'Be plain.' },
      });
      const agent = created.json();
      const stored = async () =>
        (await call(app, 'GET', `/api/v1/agents/${agent.id}`, { token: user.sessionToken })).json();
      const page = await browser.newPage();
      const scriptErrors: string[] = [];
      page.on('pageerror', (e) => scriptErrors.push(e.message));
      await signIn(page, user, `/account/agents/${agent.id}`);
      const settings = page.locator('#settings');
      await settings.getByRole('heading', { name: 'Settings' }).waitFor();

      // The tool groups, each by its name and what it does; the agent's own checked.
      for (const g of AVAILABLE_GROUPS) {
        const label = settings.locator('label', { has: page.locator(`input[name=tools][value="${g}"]`) });
        expect(await label.getByRole('checkbox').isChecked(), g).toBe(g === 'provider-tools');
        expect((await label.innerText()).replace(/\s+/g, ' '), g).toBe(`${g} ${GROUP_DESCRIPTIONS[g]}`);
      }
      expect(await settings.getByLabel('Model').locator('option').allTextContents()).toEqual([
        'fake-model',
        'fake-model-2',
      ]);

      await settings.getByLabel('Name', { exact: true }).fill('Tuned');
      await settings.getByLabel('Description').fill('Answers about tuning.');
      await settings.getByLabel('Model').selectOption('fake-model-2');
      await settings.getByLabel('Personality').fill('Answer in French.');
      await settings.getByLabel('Opening line').fill('Bonjour !');
      await settings.getByLabel('Temperature').fill('0.3');
      await settings.getByRole('checkbox', { name: 'provider-tools' }).uncheck();
      await settings.getByRole('checkbox', { name: 'agent-memory' }).check();
      await settings.getByRole('checkbox', { name: 'execute-code' }).check();
      await settings.getByLabel('Turns a day per end user').fill('5');
      await settings.getByLabel('Credits a month').fill('100000');
      await settings.getByLabel('Text the agent answers at a limit').fill('Enough for today.');
      await settings.getByRole('button', { name: 'Save settings' }).click();
      await settings.getByRole('status').getByText('Settings saved.').waitFor();
      expect(new URL(page.url()).hash).toBe('#settings');
      await page.getByRole('heading', { name: 'Tuned', level: 1 }).waitFor();
      expect(await stored()).toMatchObject({
        name: 'Tuned',
        description: 'Answers about tuning.',
        llm: 'fake-model-2',
        personality: 'Answer in French.',
        firstPrompt: 'Bonjour !',
        temperature: 0.3,
        enabledBuiltInTools: ['agent-memory', 'execute-code'],
        usageLimits: { dailyMessagesPerUser: 5, monthlyCreditsCap: 100000, limitReachedMessage: 'Enough for today.' },
      });
      // The form shows what is stored; a reload drops the notice.
      expect(await settings.getByLabel('Temperature').inputValue()).toBe('0.3');
      expect(await settings.getByLabel('Model').inputValue()).toBe('fake-model-2');
      await page.reload();
      expect(await settings.getByRole('status').count()).toBe(0);
      await keepScreenshot(page, 'agents-settings', { fullPage: true });

      // A temperature of 5 (past the browser's own check) is refused: 422, the form as typed, nothing stored.
      await settings.locator('form').evaluate((f) => {
        (f as unknown as { noValidate: boolean }).noValidate = true;
      });
      await settings.getByLabel('Name', { exact: true }).fill('Too hot');
      await settings.getByLabel('Temperature').fill('5');
      await settings.getByLabel('Turns a day per end user').fill('');
      const [refused] = await Promise.all([
        page.waitForResponse((r) => r.url().endsWith('/settings')),
        settings.getByRole('button', { name: 'Save settings' }).click(),
      ]);
      expect(refused.status()).toBe(422);
      await settings.getByRole('alert').waitFor();
      expect(await settings.getByRole('alert').textContent()).toBe('temperature: Too big: expected number to be <=2');
      expect(await settings.getByLabel('Name', { exact: true }).inputValue()).toBe('Too hot');
      expect(await settings.getByLabel('Temperature').inputValue()).toBe('5');
      expect(await settings.getByLabel('Turns a day per end user').inputValue()).toBe('');
      expect(await settings.getByRole('checkbox', { name: 'execute-code' }).isChecked()).toBe(true);
      expect((await stored()).name).toBe('Tuned');
      await keepScreenshot(page, 'agents-settings-refused', { fullPage: true });
      // Sent again with a good temperature: the emptied limit is gone, the others stay.
      await settings.getByLabel('Temperature').fill('1');
      await settings.getByRole('button', { name: 'Save settings' }).click();
      await settings.getByRole('status').getByText('Settings saved.').waitFor();
      expect(await stored()).toMatchObject({
        name: 'Too hot',
        temperature: 1,
        usageLimits: { monthlyCreditsCap: 100000, limitReachedMessage: 'Enough for today.' },
      });
      expect((await stored()).usageLimits.dailyMessagesPerUser).toBeUndefined();

      // Use it from code: the URL, and the examples run as shown with a real token of the scope they name.
      const code = page.locator('#code');
      const url = `${base}/api/v1/agents/${agent.id}/chat/completions`;
      expect(await code.locator('#agent-api-url').textContent()).toBe(url);
      expect(await code.innerText()).toContain('agents-use');
      for (const name of ['Copy the API URL', 'Copy the curl example', 'Copy the openai example']) {
        expect(await code.getByRole('button', { name }).isVisible(), name).toBe(true);
      }
      const token = await user.pat(['agents-use']);
      const curl = ((await code.locator('#agent-curl').textContent()) ?? '').replaceAll(
        'YOUR_SWITCHBOARD_TOKEN',
        token,
      );
      const target = /^curl (\S+) \\/.exec(curl)?.[1];
      const headers = Object.fromEntries(
        [...curl.matchAll(/-H '([^:]+): ([^']*)'/g)].map((m) => [m[1] ?? '', m[2] ?? '']),
      );
      const data = /-d '([^']*)'/.exec(curl)?.[1];
      expect(target).toBe(url);
      llm.enqueue({ content: 'Je peux aider.' });
      const res = await fetch(target ?? '', { method: 'POST', headers, body: data ?? '' });
      expect(res.status).toBe(200);
      const answer = (await res.json()) as { choices: { message: { content: string } }[] };
      expect(answer.choices[0]?.message.content).toBe('Je peux aider.');
      expect(llm.requests.at(-1)?.model).toBe('fake-model-2');
      expect(String(llm.requests.at(-1)?.messages[0]?.content)).toContain('Answer in French.');

      const snippet = (await code.locator('#agent-openai').textContent()) ?? '';
      const baseURL = /baseURL: '([^']+)'/.exec(snippet)?.[1];
      expect(baseURL).toBe(`${base}/api/v1/agents/${agent.id}`);
      expect(snippet).toContain("apiKey: 'YOUR_SWITCHBOARD_TOKEN'");
      llm.enqueue({ content: 'Par le SDK.' });
      const client = new OpenAI({ baseURL, apiKey: token, maxRetries: 0 });
      const reply = await client.chat.completions.create({
        model: 'fake-model-2',
        messages: [{ role: 'user', content: 'Hello! What can you do?' }],
      });
      expect(reply.choices[0]?.message.content).toBe('Par le SDK.');
      expect(scriptErrors).toEqual([]);

      // Another account's agent: its settings POST is a 404 and changes nothing.
      const other = await createUser(app);
      const theirs = (
        await call(app, 'POST', '/api/v1/agents', { token: other.sessionToken, body: { name: 'Theirs' } })
      ).json();
      const csrf = await page.locator('#settings input[name=csrf]').inputValue();
      const foreign = await page.request.post(`${base}/account/agents/${theirs.id}/settings`, {
        form: { csrf, name: 'Mine now', temperature: '1' },
      });
      expect(foreign.status()).toBe(404);
      const still = await call(app, 'GET', `/api/v1/agents/${theirs.id}`, { token: other.sessionToken });
      expect(still.json().name).toBe('Theirs');

      // A phone-sized screen: no sideways scroll, the examples scroll inside their boxes.
      const phone = await browser.context.newPage();
      await phone.setViewportSize({ width: 390, height: 844 });
      await phone.goto(`${base}/account/agents/${agent.id}`);
      await phone.locator('#code').waitFor();
      expect(await phone.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      await keepScreenshot(phone, 'agents-settings-phone', { fullPage: true });
    });

    it('a usage limit answers its message; 429 past the rate limit and 402 at zero credits read as sentences', async () => {
      const user = await createUser(app);
      const agent = (
        await call(app, 'POST', '/api/v1/agents', {
          token: user.sessionToken,
          body: {
            name: 'Rationed',
            usageLimits: { dailyMessagesPerUser: 1, limitReachedMessage: 'That is all for today, see you tomorrow.' },
          },
        })
      ).json();
      const page = await browser.newPage();
      await signIn(page, user, `/account/agents/${agent.id}`);
      await page.getByRole('heading', { name: 'Rationed', level: 1 }).waitFor();
      const send = async (text: string) => {
        await page.getByLabel('Message').fill(text);
        await page.getByRole('button', { name: 'Send' }).click();
      };
      /** The reply as the server renders it, once the stream is over and the page swapped. */
      const answered = (text?: string) =>
        page.locator('ol.chat:not([aria-busy]) li.assistant:not(.streaming)', text ? { hasText: text } : {});

      llm.enqueue({ content: 'First answer.' });
      await send('One');
      await answered('First answer.').waitFor();
      await send('Two');
      await answered('That is all for today, see you tomorrow.').waitFor();
      expect(llm.requests).toHaveLength(1);

      // RATE_LIMIT_LLM is 4 here: two more pass (limited answers are messages too), the fifth is refused.
      await send('Three');
      await answered().nth(2).waitFor();
      await send('Four');
      await answered().nth(3).waitFor();
      await send('Five');
      const alert = page.getByRole('alert');
      await alert.waitFor();
      expect(await alert.textContent()).toMatch(/^Rate limit exceeded \(4 requests per window\); retry in/);
      // The refused message is not kept on the page and is given back to send again.
      expect(await page.locator('ol.chat li.user', { hasText: 'Five' }).count()).toBe(0);
      expect(await page.getByLabel('Message').inputValue()).toBe('Five');
      await keepScreenshot(page, 'agents-chat-429', { fullPage: true });

      // At a zero balance (another account, its own budget): 402 with the reason, nothing stored.
      const broke = await createUser(app);
      await h.database.db.update(accounts).set({ creditBalance: 0 }).where(eq(accounts.id, broke.account.id));
      const theirs = (
        await call(app, 'POST', '/api/v1/agents', { token: broke.sessionToken, body: { name: 'Broke' } })
      ).json();
      const page2 = await browser.newPage();
      await signIn(page2, broke, `/account/agents/${theirs.id}`);
      await page2.getByRole('heading', { name: 'Broke', level: 1 }).waitFor();
      await page2.getByLabel('Message').fill('Hello?');
      await page2.getByRole('button', { name: 'Send' }).click();
      await page2.getByRole('alert').waitFor();
      expect(await page2.getByRole('alert').textContent()).toBe(
        'Insufficient credits: the balance is exhausted; add credits to continue',
      );
      const conversations = await call(app, 'GET', `/api/v1/agents/${theirs.id}/conversations`, {
        token: broke.sessionToken,
      });
      expect(conversations.json().pagination.total).toBe(0);
      expect(new URL(page2.url()).searchParams.get('c')).toBeNull();
    });
  });
});
