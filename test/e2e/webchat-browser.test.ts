import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/http/types.ts';
import type { FakeLlm } from '../fakes/llm-upstream.ts';
import { call, createUser } from '../harness.ts';
import { browserSuite, keepScreenshot, runBrowser, type TestBrowser } from './browser.ts';

/**
 * The web chat widget on a plain HTML page of another site, in a real browser: the bubble opens the chat, a
 * message gets the agent's reply streamed in, the conversation survives a reload (the visitor token kept in
 * localStorage), and a page whose origin the channel does not allow sees the refusal.
 */
describe.skipIf(!runBrowser)('web chat widget in a real browser (chromium)', () => {
  let llm: FakeLlm;
  let app: App;
  let base: string;
  let browser: TestBrowser;
  let site: Server;
  let siteOrigin: string;
  let channelOf: Record<string, string> = {};

  browserSuite((s) => ({ llm, app, base, browser } = s), {
    viewport: { width: 900, height: 800 },
    // The shop's own site: a plain page that embeds the widget, on another origin than the service (it reads
    // `base` per request, so it can start before the app).
    start: async () => {
      site = createServer((req, res) => {
        const id = channelOf[(req.url ?? '/').slice(1)] ?? '';
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          `<!doctype html><html lang="en"><head><title>Shop</title></head><body><h1>Anvils for sale</h1><script src="${base}/webchat/widget.js" data-channel-id="${id}"></script></body></html>`,
        );
      });
      await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
      siteOrigin = `http://localhost:${(site.address() as AddressInfo).port}`;
      return {};
    },
    // After the browser, whose kept-alive connections would hold it open.
    stop: () => new Promise<void>((r) => site?.close(() => r())),
  });

  const makeChannel = async (allowedOrigins: string[]) => {
    const user = await createUser(app);
    const agentId = (
      await call(app, 'POST', '/api/v1/agents', { token: user.sessionToken, body: { name: 'Shop' } })
    ).json().id as string;
    const res = await call(app, 'POST', '/api/v1/messaging-channels', {
      token: user.sessionToken,
      body: { type: 'webchat', agentId, config: { allowedOrigins } },
    });
    expect(res.statusCode, res.body).toBe(201);
    return { user, agentId, id: res.json().id as string };
  };

  it('opens from the bubble, streams the reply, and keeps the conversation across a reload', async () => {
    const channel = await makeChannel([siteOrigin]);
    channelOf = { ...channelOf, shop: channel.id };
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${siteOrigin}/shop`);
    await page.getByRole('heading', { name: 'Anvils for sale' }).waitFor();

    expect(await page.getByRole('dialog', { name: 'Chat' }).isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Open chat' }).click();
    await page.getByRole('dialog', { name: 'Chat' }).waitFor();
    llm.enqueue({ content: 'Hello! Our anvils ship worldwide.' });
    await page.getByLabel('Message').fill('Do you ship abroad?');
    await page.getByRole('button', { name: 'Send' }).click();
    const log = page.locator('ol.log li');
    await page.getByText('Hello! Our anvils ship worldwide.').waitFor();
    expect(await log.allTextContents()).toEqual(['Do you ship abroad?', 'Hello! Our anvils ship worldwide.']);
    await keepScreenshot(page, 'webchat-widget');

    // After a reload the visitor token in localStorage continues the same conversation.
    await page.reload();
    await page.getByRole('button', { name: 'Open chat' }).click();
    llm.enqueue({ content: 'Three to five days.' });
    await page.getByLabel('Message').fill('How long does it take?');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('Three to five days.').waitFor();
    const second = llm.requests.at(-1)?.messages.map((m) => m.content) ?? [];
    expect(second).toEqual(
      expect.arrayContaining(['Do you ship abroad?', 'Hello! Our anvils ship worldwide.', 'How long does it take?']),
    );
    const conversations = await call(app, 'GET', `/api/v1/agents/${channel.agentId}/conversations`, {
      token: channel.user.sessionToken,
    });
    expect(conversations.json().pagination.total).toBe(1);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('a page whose origin the channel does not allow cannot read even the refusal (no CORS header for it)', async () => {
    const channel = await makeChannel(['https://only-this.example']);
    channelOf = { ...channelOf, other: channel.id };
    const page = await browser.newPage();
    await page.goto(`${siteOrigin}/other`);
    await page.getByRole('button', { name: 'Open chat' }).click();
    await page.getByLabel('Message').fill('Hello?');
    await page.getByRole('button', { name: 'Send' }).click();
    // The browser withholds the 403 from the page: the widget can only say the chat is out of reach.
    await page.getByText('The chat cannot be reached. Try again in a moment.').waitFor();
    expect(await page.getByText("This page's origin is not allowed to use this web chat").count()).toBe(0);
    await page.close();
  });
});
