import { eq } from 'drizzle-orm';
import type { Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { accounts } from '../../src/db/schema/index.ts';
import type { App } from '../../src/http/types.ts';
import type { FakeLlm } from '../fakes/llm-upstream.ts';
import { call, createUser, type TestHarness, type TestUser } from '../harness.ts';
import { artifactPath, browserSuite, runBrowser, submitSignIn, suiteBrowser, type TestBrowser } from './browser.ts';

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
  browserSuite((s) => ({ h, llm, app, base } = s), { appEnv: { RATE_LIMIT_LLM: '4' }, viewport: false });
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
        { toolCalls: [{ name: 'knowledge-list-bases', arguments: {} }] },
        { content: words, chunkDelayMs: 300 },
      );
      await page.getByLabel('Message').fill('Which knowledge bases do I have?');
      await page.getByRole('button', { name: 'Send' }).click();
      // The tool step shows while the model is still writing.
      await page.locator('ol.chat li.tool', { hasText: 'Called knowledge-list-bases' }).waitFor();
      const streaming = page.locator('ol.chat li.assistant.streaming');
      await streaming.getByText('Streaming words').waitFor();
      const partial = (await streaming.textContent()) ?? '';
      expect(partial).toContain('Streaming words');
      expect(partial).not.toContain('to read');
      expect(await page.locator('ol.chat').getAttribute('aria-busy')).toBe('true');
      // The conversation's URL is there before the answer is complete.
      expect(new URL(page.url()).searchParams.get('c')).toMatch(/^conv_/);
      await page.screenshot({ path: artifactPath('agents-chat-streaming'), fullPage: true });

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
      await page.screenshot({ path: artifactPath('agents-chat-streamed'), fullPage: true });
      expect(scriptErrors).toEqual([]);
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
      await page.screenshot({ path: artifactPath('agents-chat-429'), fullPage: true });

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
