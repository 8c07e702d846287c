import { describe, expect, it } from 'vitest';
import type { App } from '../../src/http/types.ts';
import { runChannelJobs } from '../../src/modules/channels/test-support.ts';
import type { FakeLlm } from '../fakes/llm-upstream.ts';
import { type FakeTelegram, startFakeTelegram } from '../fakes/telegram.ts';
import { call, createUser, type TestHarness } from '../harness.ts';
import { browserSuite, keepScreenshot, runBrowser, submitSignIn, type TestBrowser } from './browser.ts';

/**
 * A person on the channels page in a real browser: connects a Telegram bot by its token (a refused token is
 * shown, the form keeps the chosen agent), makes a link code, sees deliveries and a failure with its reason,
 * adds a web chat and copies its snippet, and deletes a channel.
 */
describe.skipIf(!runBrowser)('messaging channels page in a real browser (chromium)', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  let tg: FakeTelegram;
  let app: App;
  let base: string;
  let browser: TestBrowser;
  browserSuite((s) => ({ h, llm, app, base, browser } = s), {
    viewport: { width: 900, height: 1100 },
    start: async () => {
      tg = await startFakeTelegram();
      return { TELEGRAM_API_URL: tg.url, CHANNEL_SEND_INTERVAL_MS: '0' };
    },
    stop: async () => tg?.close(),
  });

  it('connects a bot, links, shows deliveries and failures, adds a web chat, deletes', async () => {
    const user = await createUser(app);
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => {
      // A refused form answers 422 by design: the browser reports that status, which is no fault of the page.
      if (m.type() === 'error' && !m.text().includes('status of 422')) errors.push(m.text());
    });
    await page.goto(`${base}/account/channels`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await submitSignIn(page, user);
    await page.getByRole('heading', { name: 'Messaging channels' }).waitFor();
    expect(await page.getByText('Make an agent first').isVisible()).toBe(true);

    for (const name of ['Front desk', 'Support']) {
      const res = await call(app, 'POST', '/api/v1/agents', { token: user.sessionToken, body: { name } });
      expect(res.statusCode).toBe(201);
    }
    await page.reload();
    expect(await page.getByText('No channels yet: connect one below.').isVisible()).toBe(true);

    // A token Telegram refuses: the reason is shown and the chosen agent kept.
    await page.locator('#tg-agent').selectOption({ label: 'Support' });
    await page.locator('#tg-token').fill('1:not-a-token');
    await page.getByRole('button', { name: 'Connect Telegram bot' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toBe(
      'Telegram refused the bot token (check it with @BotFather)',
    );
    expect(await page.locator('#tg-agent option:checked').textContent()).toBe('Support');

    const botToken = tg.addBot(4242, 'frontdesk_bot');
    await page.locator('#tg-token').fill(botToken);
    await page.getByRole('button', { name: 'Connect Telegram bot' }).click();
    await page.getByRole('heading', { name: 'Telegram @frontdesk_bot' }).waitFor();
    expect(await page.getByText(`${base}/api/v1/messaging-channels/telegram/webhook`).isVisible()).toBe(true);
    expect(await page.content()).not.toContain(botToken);
    expect(await page.getByText('Agent: Support').isVisible()).toBe(true);
    const channelId = new URL(page.url()).pathname.split('/').pop() ?? '';

    await page.getByRole('button', { name: 'Link an account' }).click();
    await page.getByRole('status').waitFor();
    const link = await page.getByRole('link', { name: /^https:\/\/t\.me\/frontdesk_bot\?start=/ }).textContent();
    expect(link).toMatch(/^https:\/\/t\.me\/frontdesk_bot\?start=[A-Z2-9]{10}$/);
    // Post-redirect-get: the code is shown on the channel's page, once; a reload neither shows it nor makes another.
    expect(new URL(page.url()).pathname).toBe(`/account/channels/${channelId}`);
    await page.reload();
    await page.getByRole('heading', { name: 'Telegram @frontdesk_bot' }).waitFor();
    expect(await page.getByText(link ?? '').count()).toBe(0);

    // Someone unknown writes (answered with the how-to-link hint); a send to another chat fails.
    const secret = tg.webhooks.get(botToken)?.secret_token ?? '';
    const deliver = (update: unknown) =>
      app.inject({
        method: 'POST',
        url: '/api/v1/messaging-channels/telegram/webhook',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': secret },
        payload: JSON.stringify(update),
      });
    const message = (id: number, chat: number) => ({
      update_id: id,
      message: { message_id: id, chat: { id: chat, type: 'private' }, from: { id: chat, first_name: 'X' }, text: 'hi' },
    });
    expect((await deliver(message(1, 501))).statusCode).toBe(200);
    await runChannelJobs(h, user.account.id);
    tg.failNextSends({ status: 400, description: 'Bad Request: chat not found' });
    expect((await deliver(message(2, 502))).statusCode).toBe(200);
    await expect(runChannelJobs(h, user.account.id)).rejects.toThrow(/chat not found/);
    await page.goto(`${base}/account/channels/${channelId}`);
    const rows = page.getByRole('table').getByRole('row');
    await rows.nth(2).waitFor();
    const cells = await rows.allTextContents();
    expect(cells.some((r) => r.includes('501') && r.includes('replied'))).toBe(true);
    expect(
      cells.some(
        (r) =>
          r.includes('502') &&
          r.includes('retrying') &&
          r.includes('Telegram sendMessage: Bad Request: chat not found'),
      ),
    ).toBe(true);
    await keepScreenshot(page, 'channels-telegram', { fullPage: true });

    // A web chat: its snippet is there to copy.
    await page.getByRole('link', { name: '← Messaging channels' }).click();
    await page.locator('#wc-origins').fill('https://shop.example');
    await page.getByRole('button', { name: 'Add web chat' }).click();
    await page.getByRole('heading', { name: 'Web chat on https://shop.example' }).waitFor();
    const snippet = await page.getByLabel('Web chat snippet (paste it into your page)').inputValue();
    const webchatId = new URL(page.url()).pathname.split('/').pop() ?? '';
    expect(snippet).toBe(`<script src="${base}/webchat/widget.js" data-channel-id="${webchatId}" async></script>`);

    // Delete it: back on the list, only the Telegram channel is left.
    await page.getByRole('button', { name: 'Delete channel' }).click();
    await page.getByRole('heading', { name: 'Messaging channels' }).waitFor();
    const items = await page.locator('ul.items li').allTextContents();
    expect(items).toHaveLength(1);
    expect(items[0]).toContain('Telegram @frontdesk_bot');
    expect(errors, errors.join('\n')).toEqual([]);
  });
});
