import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { type FakeTelegram, startFakeTelegram } from '../../../test/fakes/telegram.ts';
import { guardTests } from '../../../test/guards.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import {
  channelDeliveries,
  channelLinkCodes,
  channelLinks,
  messages,
  messagingChannels,
} from '../../db/schema/index.ts';
import { deliverToAgentChannels } from './deliver.service.ts';
import { BAD_CODE_REPLY, LINKED_REPLY } from './inbound.ts';
import { channelAgentContext } from './service.ts';
import { channelJobCount, runChannelJobs, secondInstance } from './test-support.ts';

const API = '/api/v1/messaging-channels';
const WEBHOOK = `${API}/telegram/webhook`;

describe('messaging channels: API and Telegram', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  let tg: FakeTelegram;
  let botIds = 1000;

  beforeAll(async () => {
    llm = await startFakeLlm();
    tg = await startFakeTelegram();
    h = await createHarness({
      LLM_BASE_URL: llm.url,
      LLM_MODELS: 'fake-model=1000000/2000000',
      TELEGRAM_API_URL: tg.url,
      CHANNEL_SEND_INTERVAL_MS: '0',
    });
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
    await tg?.close();
  });
  beforeEach(() => {
    llm.reset();
    llm.requests.length = 0;
    tg.reset();
  });

  const as = (u: TestUser) => ({ token: u.sessionToken });
  const makeAgent = async (u: TestUser, body: Record<string, unknown> = {}) => {
    const res = await call(h.app, 'POST', '/api/v1/agents', { ...as(u), body: { name: 'Helper', ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().id as string;
  };
  /** A user with an agent and a Telegram channel on a fresh bot. */
  const telegramChannel = async (u?: TestUser) => {
    const user = u ?? (await createUser(h.app));
    const agentId = await makeAgent(user);
    const botId = ++botIds;
    const username = `helper${botId}_bot`;
    const botToken = tg.addBot(botId, username);
    const res = await call(h.app, 'POST', API, {
      ...as(user),
      body: { type: 'telegram', agentId, config: { botToken } },
    });
    expect(res.statusCode, res.body).toBe(201);
    const channel = res.json() as { id: string; config: Record<string, unknown> };
    const secret = tg.webhooks.get(botToken)?.secret_token ?? '';
    return { user, agentId, botId, username, botToken, channel, secret };
  };
  let updateIds = 1;
  const message = (
    chatId: number,
    text: string,
    opts: { fromId?: number; chatType?: string; replyToBot?: number; updateId?: number } = {},
  ) => ({
    update_id: opts.updateId ?? updateIds++,
    message: {
      message_id: updateIds,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: opts.chatType ?? 'private' },
      from: { id: opts.fromId ?? chatId, is_bot: false, first_name: 'Ada', username: 'ada' },
      text,
      ...(opts.replyToBot ? { reply_to_message: { from: { id: opts.replyToBot, is_bot: true } } } : {}),
    },
  });
  const deliver = (secret: string | undefined, update: unknown, app = h.app) =>
    app.inject({
      method: 'POST',
      url: WEBHOOK,
      headers: { 'content-type': 'application/json', ...(secret ? { 'x-telegram-bot-api-secret-token': secret } : {}) },
      payload: JSON.stringify(update),
    });
  const linkUser = async (t: Awaited<ReturnType<typeof telegramChannel>>, chatId: number) => {
    const code = (await call(h.app, 'POST', `${API}/${t.channel.id}/link-account`, as(t.user))).json().code as string;
    expect((await deliver(t.secret, message(chatId, `/start ${code}`))).statusCode).toBe(200);
    await runChannelJobs(h, t.user.account.id);
    tg.reset();
  };
  const deliveryRows = (channelId: string) =>
    h.database.db.select().from(channelDeliveries).where(eq(channelDeliveries.channelId, channelId));

  describe('channels API', () => {
    it('creates a Telegram channel: token checked, webhook registered with a secret, the token sealed and never returned', async () => {
      const t = await telegramChannel();
      expect(t.channel).toEqual({
        id: expect.stringMatching(/^mch_/),
        accountId: t.user.account.id,
        type: 'telegram',
        agentId: t.agentId,
        config: { botUsername: t.username, botId: String(t.botId), botTokenSet: true },
        webhookUrl: 'http://localhost:8080/api/v1/messaging-channels/telegram/webhook',
        linkedUsers: [],
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect(JSON.stringify(t.channel)).not.toContain(t.botToken);
      const hook = tg.webhooks.get(t.botToken);
      expect(hook?.url).toBe('http://localhost:8080/api/v1/messaging-channels/telegram/webhook');
      expect(hook?.secret_token).toMatch(/^[A-Za-z0-9_-]{40,256}$/);
      const [row] = await h.database.db.select().from(messagingChannels).where(eq(messagingChannels.id, t.channel.id));
      expect(JSON.stringify(row)).not.toContain(t.botToken);
      expect(JSON.stringify(row)).not.toContain(hook?.secret_token);
      expect(JSON.parse(h.keyRing.decrypt(row?.secretsEnc ?? '', t.channel.id))).toEqual({ botToken: t.botToken });
      expect(() => h.keyRing.decrypt(row?.secretsEnc ?? '', 'mch_other')).toThrow();

      const listed = await call(h.app, 'GET', API, as(t.user));
      expect(listed.json()).toEqual({
        data: [t.channel],
        pagination: { page: 1, limit: 20, total: 1, hasMore: false },
      });
      expect((await call(h.app, 'GET', `${API}/${t.channel.id}`, as(t.user))).json()).toEqual(t.channel);
    });

    it('refuses a token Telegram refuses (422), a bot already serving a channel (409) and an unknown agent (404)', async () => {
      const t = await telegramChannel();
      const bad = await call(h.app, 'POST', API, {
        ...as(t.user),
        body: { type: 'telegram', agentId: t.agentId, config: { botToken: '1:not-a-token' } },
      });
      expect(bad.statusCode).toBe(422);
      expect(bad.json().message).toBe('Telegram refused the bot token (check it with @BotFather)');

      const other = await createUser(h.app);
      const again = await call(h.app, 'POST', API, {
        ...as(other),
        body: { type: 'telegram', agentId: await makeAgent(other), config: { botToken: t.botToken } },
      });
      expect(again.statusCode).toBe(409);
      expect(again.json()).toEqual({
        error: 'ConflictError',
        message: 'This bot is already attached to another messaging channel',
        statusCode: 409,
      });
      // The first channel's webhook is untouched.
      expect(tg.webhooks.get(t.botToken)?.secret_token).toBe(t.secret);

      const foreignAgent = await call(h.app, 'POST', API, {
        ...as(other),
        body: { type: 'webchat', agentId: t.agentId, config: {} },
      });
      expect(foreignAgent.statusCode).toBe(404);
      const missing = await call(h.app, 'POST', API, { ...as(other), body: { type: 'telegram', agentId: 'x' } });
      expect(missing.statusCode).toBe(422);
    });

    it('updates the agent and moves the webhook to a new bot token; deleting removes the webhook', async () => {
      const t = await telegramChannel();
      const second = await makeAgent(t.user, { name: 'Second' });
      const moved = await call(h.app, 'PUT', `${API}/${t.channel.id}`, { ...as(t.user), body: { agentId: second } });
      expect(moved.statusCode, moved.body).toBe(200);
      expect(moved.json().agentId).toBe(second);

      const newToken = tg.addBot(++botIds, `renamed${botIds}_bot`);
      const changed = await call(h.app, 'PUT', `${API}/${t.channel.id}`, {
        ...as(t.user),
        body: { config: { botToken: newToken } },
      });
      expect(changed.statusCode, changed.body).toBe(200);
      expect(changed.json().config).toEqual({
        botUsername: `renamed${botIds}_bot`,
        botId: String(botIds),
        botTokenSet: true,
      });
      expect(tg.webhooks.has(t.botToken)).toBe(false);
      const newSecret = tg.webhooks.get(newToken)?.secret_token;
      expect(newSecret).toBeTruthy();
      expect(newSecret).not.toBe(t.secret);
      expect((await deliver(t.secret, message(1, 'hi'))).statusCode).toBe(401);
      expect((await deliver(newSecret, message(1, 'hi'))).statusCode).toBe(200);

      const bad = await call(h.app, 'PUT', `${API}/${t.channel.id}`, {
        ...as(t.user),
        body: { config: { botToken: 7 } },
      });
      expect(bad.statusCode).toBe(422);

      expect((await call(h.app, 'DELETE', `${API}/${t.channel.id}`, as(t.user))).statusCode).toBe(204);
      expect(tg.webhooks.has(newToken)).toBe(false);
      expect((await call(h.app, 'GET', `${API}/${t.channel.id}`, as(t.user))).statusCode).toBe(404);
      expect((await deliver(newSecret, message(1, 'hi'))).statusCode).toBe(401);
    });

    it("deleting the agent removes its channels and their bots' webhooks", async () => {
      const t = await telegramChannel();
      expect(tg.webhooks.has(t.botToken)).toBe(true);
      expect((await call(h.app, 'DELETE', `/api/v1/agents/${t.agentId}`, as(t.user))).statusCode).toBe(204);
      expect(tg.webhooks.has(t.botToken)).toBe(false);
      expect((await call(h.app, 'GET', `${API}/${t.channel.id}`, as(t.user))).statusCode).toBe(404);
      expect((await deliver(t.secret, message(1, 'hi'))).statusCode).toBe(401);
    });
  });

  describe('Telegram webhook', () => {
    it('refuses a wrong or missing secret token (401) and records nothing', async () => {
      const t = await telegramChannel();
      for (const secret of [undefined, 'wrong', `${t.secret}x`, t.secret.slice(0, -1)]) {
        const res = await deliver(secret, message(5, 'hello'));
        expect(res.statusCode).toBe(401);
        expect(res.json()).toEqual({
          error: 'UnauthorizedError',
          message: 'Invalid X-Telegram-Bot-Api-Secret-Token',
          statusCode: 401,
        });
      }
      expect(await deliveryRows(t.channel.id)).toEqual([]);
      expect(await channelJobCount(h, t.user.account.id)).toBe(0);
    });

    it('is not held back by the per-address global rate limit (the platform sends from few addresses)', async () => {
      const t = await telegramChannel();
      const strict = await h.extraApp({ RATE_LIMIT_GLOBAL: '2' });
      const codes = [];
      for (let i = 0; i < 5; i++) codes.push((await deliver(t.secret, message(3, `m${i}`), strict)).statusCode);
      expect(codes).toEqual([200, 200, 200, 200, 200]);
      expect((await call(strict, 'GET', API, as(t.user))).statusCode).toBe(200);
      const limited = [];
      for (let i = 0; i < 3; i++) limited.push((await call(strict, 'GET', API, as(t.user))).statusCode);
      expect(limited).toContain(429);
    });

    it('a duplicate and a concurrent duplicate (also through a second instance) cause one agent run', async () => {
      const t = await telegramChannel();
      await linkUser(t, 42);
      const second = await secondInstance(h);
      const jobsBefore = await channelJobCount(h, t.user.account.id);
      const update = message(42, 'What is on today?');
      // The same update delivered ten times at once, half through each instance.
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => deliver(t.secret, update, i % 2 ? second.app : h.app)),
      ).finally(() => second.close());
      expect(answers.map((a) => a.statusCode)).toEqual(Array(10).fill(200));
      expect(answers.filter((a) => !a.json().duplicate)).toHaveLength(1);
      expect(await channelJobCount(h, t.user.account.id)).toBe(jobsBefore + 1);
      expect((await deliver(t.secret, update)).json()).toEqual({ ok: true, duplicate: true });
      llm.enqueue({ content: 'A **quiet** day <3' });
      await runChannelJobs(h, t.user.account.id);
      await runChannelJobs(h, t.user.account.id);
      expect(llm.requests).toHaveLength(1);
      expect(llm.requests[0]?.messages.at(-1)).toMatchObject({ role: 'user', content: 'What is on today?' });
      expect(tg.sent()).toEqual([
        { chatId: '42', text: 'A <b>quiet</b> day &lt;3', parseMode: 'HTML', at: expect.any(Number) },
      ]);
      expect(tg.calls.some((c) => c.method === 'sendChatAction' && c.body.action === 'typing')).toBe(true);
      const rows = (await deliveryRows(t.channel.id)).filter((r) => r.key === `update:${update.update_id}`);
      expect(rows).toMatchObject([{ status: 'replied', sentParts: 1, error: null }]);
      // The chat keeps one conversation of the channel's agent.
      llm.enqueue({ content: 'Still quiet.' });
      await deliver(t.secret, message(42, 'And tomorrow?'));
      await runChannelJobs(h, t.user.account.id);
      expect(llm.requests[1]?.messages.map((m) => m.content)).toEqual(
        expect.arrayContaining(['What is on today?', 'A **quiet** day <3', 'And tomorrow?']),
      );
    });

    it('links with a single-use code; a reused or expired code is refused; unknown senders get the hint at most hourly', async () => {
      const t = await telegramChannel();
      const unknown = message(77, 'hello?');
      await deliver(t.secret, unknown);
      await deliver(t.secret, message(77, 'anyone?'));
      await runChannelJobs(h, t.user.account.id);
      expect(llm.requests).toHaveLength(0);
      expect(tg.sent().map((s) => s.text)).toHaveLength(1);
      expect(tg.sent()[0]?.text).toContain('answers linked accounts only');
      expect((await deliveryRows(t.channel.id)).map((r) => r.status).sort()).toEqual(['replied', 'unlinked']);

      const res = await call(h.app, 'POST', `${API}/${t.channel.id}/link-account`, as(t.user));
      expect(res.statusCode).toBe(200);
      const code = res.json().code as string;
      expect(res.json()).toEqual({
        code: expect.stringMatching(/^[A-Z2-9]{10}$/),
        expiresAt: expect.any(String),
        link: `https://t.me/${t.username}?start=${code}`,
        instructions: expect.stringContaining(`https://t.me/${t.username}?start=${code}`),
      });
      tg.reset();
      await deliver(t.secret, message(77, `/start ${code}`));
      await deliver(t.secret, message(88, `/start ${code}`));
      await runChannelJobs(h, t.user.account.id);
      const replies = Object.fromEntries(tg.sent().map((s) => [s.chatId, s.text]));
      expect(replies).toEqual({ '77': LINKED_REPLY, '88': BAD_CODE_REPLY });
      const channel = (await call(h.app, 'GET', `${API}/${t.channel.id}`, as(t.user))).json();
      expect(channel.linkedUsers).toEqual([
        { externalUserId: '77', displayName: '@ada', linkedAt: expect.any(String) },
      ]);
      // The list reads every channel's links at once and gives each its own.
      const listed = (await call(h.app, 'GET', API, as(t.user))).json().data as Array<{ id: string }>;
      expect(listed.find((c) => c.id === t.channel.id)).toEqual(channel);

      // An expired code.
      const late = (await call(h.app, 'POST', `${API}/${t.channel.id}/link-account`, as(t.user))).json().code;
      await h.database.db
        .update(channelLinkCodes)
        .set({ expiresAt: new Date(Date.now() - 1000) })
        .where(eq(channelLinkCodes.channelId, t.channel.id));
      tg.reset();
      await deliver(t.secret, message(99, `/start ${late}`));
      await runChannelJobs(h, t.user.account.id);
      expect(tg.sent().map((s) => s.text)).toEqual([BAD_CODE_REPLY]);

      // The linked user talks to the agent; unlinking makes them unknown again.
      tg.reset();
      llm.enqueue({ content: 'Hi Ada.' });
      await deliver(t.secret, message(77, 'hi'));
      await runChannelJobs(h, t.user.account.id);
      expect(tg.sent().map((s) => s.text)).toEqual(['Hi Ada.']);
      const unlinked = await call(h.app, 'POST', `${API}/${t.channel.id}/unlink-account`, {
        ...as(t.user),
        body: { externalUserId: '77' },
      });
      expect(unlinked.json()).toEqual({ unlinked: 1 });
      tg.reset();
      await deliver(t.secret, message(77, 'still there?'));
      await runChannelJobs(h, t.user.account.id);
      expect(llm.requests).toHaveLength(1);
      // The hint was sent to chat 77 within the hour: nothing now.
      expect(tg.sent()).toEqual([]);
    });

    it('splits a long reply on paragraphs under 4096 characters', async () => {
      const t = await telegramChannel();
      await linkUser(t, 5);
      const paragraph = (c: string) => `${c.repeat(1500)}.`;
      const long = Array.from({ length: 6 }, (_, i) => paragraph(String.fromCharCode(97 + i))).join('\n\n');
      llm.enqueue({ content: long });
      await deliver(t.secret, message(5, 'Tell me everything'));
      await runChannelJobs(h, t.user.account.id);
      const parts = tg.sent().map((s) => s.text);
      expect(parts).toHaveLength(3);
      for (const p of parts) expect(p.length).toBeLessThanOrEqual(4096);
      expect(parts.join('\n\n')).toBe(long);
    });

    it('waits out a 429 for retry_after, and falls back to plain text when Telegram cannot parse the HTML', async () => {
      const t = await telegramChannel();
      await linkUser(t, 6);
      tg.failNextSends({ status: 429, description: 'Too Many Requests: retry after 1', retryAfter: 1 });
      llm.enqueue({ content: 'Done.' });
      await deliver(t.secret, message(6, 'go'));
      await runChannelJobs(h, t.user.account.id);
      const attempts = tg.calls.filter((c) => c.method === 'sendMessage');
      expect(attempts).toHaveLength(2);
      expect((attempts[1]?.at ?? 0) - (attempts[0]?.at ?? 0)).toBeGreaterThanOrEqual(1000);
      expect(tg.sent().at(-1)?.text).toBe('Done.');

      tg.reset();
      tg.failNextSends({ status: 400, description: "Bad Request: can't parse entities: unsupported start tag" });
      llm.enqueue({ content: 'Use **bold** here' });
      await deliver(t.secret, message(6, 'again'));
      await runChannelJobs(h, t.user.account.id);
      expect(tg.calls.filter((c) => c.method === 'sendMessage').map((c) => c.body.parse_mode)).toEqual([
        'HTML',
        undefined,
      ]);
      expect(tg.sent().at(-1)?.text).toBe('Use **bold** here');
    });

    it('a failed send is retried without running the agent again, sending only what is left', async () => {
      const t = await telegramChannel();
      await linkUser(t, 8);
      tg.failNextSends({ status: 500, description: 'Internal Server Error' });
      llm.enqueue({ content: 'Answer.' });
      const update = message(8, 'question');
      await deliver(t.secret, update);
      await expect(runChannelJobs(h, t.user.account.id)).rejects.toThrow(/Internal Server Error/);
      const [row] = (await deliveryRows(t.channel.id)).filter((r) => r.key === `update:${update.update_id}`);
      expect(row).toMatchObject({ status: 'answered', reply: 'Answer.', sentParts: 0 });
      expect(row?.error).toContain('Internal Server Error');
      // The worker's retry.
      const { channelJobs } = await import('./jobs.ts');
      await channelJobs['channels.deliver'].run(
        h.app.deps,
        { channelId: t.channel.id, key: `update:${update.update_id}` },
        { jobId: 'job_x', attempt: 2, signal: new AbortController().signal, log: h.app.log },
      );
      expect(llm.requests).toHaveLength(1);
      expect(tg.sent().map((s) => s.text)).toEqual(['Answer.']);
    });

    it("the agent's usage limits count each sender", async () => {
      const user = await createUser(h.app);
      const t = await telegramChannel(user);
      await call(h.app, 'PUT', `/api/v1/agents/${t.agentId}`, {
        ...as(user),
        body: { usageLimits: { dailyMessagesPerUser: 1, limitReachedMessage: 'Enough for today.' } },
      });
      await linkUser(t, 11);
      await linkUser(t, 12);
      llm.enqueue({ content: 'First answer.' }, { content: 'First answer.' });
      for (const chat of [11, 12, 11, 12]) {
        await deliver(t.secret, message(chat, `hello from ${chat}`));
        await runChannelJobs(h, user.account.id);
      }
      expect(llm.requests).toHaveLength(2);
      expect(tg.sent().map((s) => `${s.chatId}: ${s.text}`)).toEqual([
        '11: First answer.',
        '12: First answer.',
        '11: Enough for today.',
        '12: Enough for today.',
      ]);
    });

    it('in groups answers only when mentioned or replied to', async () => {
      const t = await telegramChannel();
      await linkUser(t, 9);
      await deliver(t.secret, message(-100, 'chatting among ourselves', { fromId: 9, chatType: 'supergroup' }));
      await runChannelJobs(h, t.user.account.id);
      expect(llm.requests).toHaveLength(0);
      llm.enqueue({ content: 'Yes?' }, { content: 'Sure.' });
      await deliver(t.secret, message(-100, `@${t.username} what time is it?`, { fromId: 9, chatType: 'group' }));
      await deliver(t.secret, message(-100, 'and you?', { fromId: 9, chatType: 'group', replyToBot: t.botId }));
      await runChannelJobs(h, t.user.account.id);
      expect(llm.requests).toHaveLength(2);
      expect(llm.requests.map((r) => r.messages.at(-1)?.content).sort()).toEqual(['and you?', 'what time is it?']);
      expect(tg.sent().map((s) => s.chatId)).toEqual(['-100', '-100']);
    });

    it("deliverToAgentChannels pushes a text to the linked users of the agent's channels, once per key", async () => {
      const t = await telegramChannel();
      await linkUser(t, 10);
      const pushed = await deliverToAgentChannels(t.user.ctx, t.agentId, 'Your daily summary', { key: 'run_1' });
      expect(pushed).toEqual({ queued: 1, channelIds: [t.channel.id] });
      expect(await deliverToAgentChannels(t.user.ctx, t.agentId, 'Your daily summary', { key: 'run_1' })).toEqual({
        queued: 0,
        channelIds: [t.channel.id],
      });
      await runChannelJobs(h, t.user.account.id);
      expect(tg.sent()).toMatchObject([{ chatId: '10', text: 'Your daily summary' }]);
      const other = await makeAgent(t.user, { name: 'No channel' });
      expect(await deliverToAgentChannels(t.user.ctx, other, 'x')).toEqual({ queued: 0, channelIds: [] });
    });
  });

  describe("a channel answers with its writer's whole restriction set", () => {
    /** The user's default base (a page on anvils) and a second one, "Private" (a page on salaries). */
    const basesOf = async (u: TestUser) => {
      const def = (await call(h.app, 'GET', '/api/v1/knowledge/bases', as(u))).json().data[0].id as string;
      const other = (
        await call(h.app, 'POST', '/api/v1/knowledge/bases', { ...as(u), body: { name: 'Private' } })
      ).json().id as string;
      for (const [kb, slug, title, content] of [
        [def, 'anvils', 'Anvils', 'Acme sells anvils to coyotes.'],
        [other, 'salaries', 'Salaries', 'Secret anvils budget.'],
      ]) {
        const put = await call(h.app, 'PUT', `/api/v1/knowledge/bases/${kb}/pages/${slug}`, {
          ...as(u),
          body: { title, content },
        });
        expect(put.statusCode, put.body).toBe(200);
      }
      return { def, other };
    };
    /** A Telegram channel of a knowledge agent, created with `token`. */
    const channelBy = async (u: TestUser, token: string) => {
      const agentId = await makeAgent(u, { enabledBuiltInTools: ['knowledge-base'] });
      const botId = ++botIds;
      const botToken = tg.addBot(botId, `kb${botId}_bot`);
      const res = await call(h.app, 'POST', API, { token, body: { type: 'telegram', agentId, config: { botToken } } });
      expect(res.statusCode, res.body).toBe(201);
      const id = res.json().id as string;
      return { id, agentId, botToken, secret: () => tg.webhooks.get(botToken)?.secret_token ?? '' };
    };
    const link = async (u: TestUser, c: { id: string; secret: () => string }, token: string, chatId: number) => {
      const code = (await call(h.app, 'POST', `${API}/${c.id}/link-account`, { token })).json().code as string;
      expect((await deliver(c.secret(), message(chatId, `/start ${code}`))).statusCode).toBe(200);
      await runChannelJobs(h, u.account.id);
      tg.reset();
    };
    /** One message from `chatId`, the model scripted to search the default base, then any base; what it was told. */
    const ask = async (u: TestUser, c: { id: string; secret: () => string }, chatId: number, def: string) => {
      llm.requests.length = 0;
      llm.enqueue(
        { toolCalls: [{ name: 'knowledge-search', arguments: { query: 'anvils', kbId: def } }] },
        { toolCalls: [{ name: 'knowledge-search', arguments: { query: 'anvils' } }] },
        { content: 'Done.' },
      );
      expect((await deliver(c.secret(), message(chatId, 'What do we know about anvils?'))).statusCode).toBe(200);
      await runChannelJobs(h, u.account.id);
      // The conversation's messages are written by group commit just after the answer: wait for them.
      await h.app.deps.background.drain();
      const [delivery] = (await deliveryRows(c.id)).filter((d) => d.conversationId).slice(-1);
      const stored = await h.database.db
        .select()
        .from(messages)
        .where(eq(messages.conversationId, delivery?.conversationId ?? ''));
      return {
        told: llm.requests.slice(1, 3).map((r) => r.messages.at(-1)?.content ?? ''),
        conversation: JSON.stringify(stored),
      };
    };
    const expectLimited = (run: { told: string[]; conversation: string }, def: string) => {
      expect(run.told[0]).toContain(`This token may not use knowledge base ${def}`);
      expect(run.told[1]).toContain('"slug":"salaries"');
      expect(run.conversation).not.toContain('coyotes');
      expect(run.conversation).not.toContain('"slug":"anvils"');
      expect(run.conversation).toContain('salaries');
    };
    const runAsOf = async (channelId: string) =>
      (await h.database.db.select().from(messagingChannels).where(eq(messagingChannels.id, channelId)))[0]?.runAs;

    it('created and linked by a PAT limited to one base: the answers are refused the others', async () => {
      const u = await createUser(h.app);
      const { def, other } = await basesOf(u);
      const limited = await u.pat(['messaging-channels', 'agents-use'], {
        knowledge_base_ids: [other],
        provider_permissions: { github: 'read-write' },
        default_provider_permission: 'read',
      });
      const c = await channelBy(u, limited);
      expect(await runAsOf(c.id)).toEqual({
        scopes: ['agents-use', 'messaging-channels'],
        providerPermissions: { github: 'read-write' },
        defaultProviderPermission: 'read',
        allowedKnowledgeBaseIds: [other],
      });
      await link(u, c, limited, 5101);
      expectLimited(await ask(u, c, 5101, def), def);
    });

    it("a person linked by a limited token's code is held to it on the owner's open channel; others are not", async () => {
      const u = await createUser(h.app);
      const { def, other } = await basesOf(u);
      const c = await channelBy(u, u.sessionToken);
      const limited = await u.pat(['messaging-channels', 'agents-use'], { knowledge_base_ids: [other] });
      await link(u, c, limited, 5201);
      await link(u, c, u.sessionToken, 5202);
      const links = await h.database.db.select().from(channelLinks).where(eq(channelLinks.channelId, c.id));
      expect(Object.fromEntries(links.map((l) => [l.externalUserId, l.runAs?.allowedKnowledgeBaseIds]))).toEqual({
        '5201': [other],
        '5202': null,
      });
      expectLimited(await ask(u, c, 5201, def), def);
      // The owner's own link: every base.
      const open = await ask(u, c, 5202, def);
      expect(open.told[0]).toContain('"slug":"anvils"');
      expect(open.conversation).toContain('coyotes');
    });

    it("changed by a limited token: the channel answers with the changer's set from then on", async () => {
      const u = await createUser(h.app);
      const { def, other } = await basesOf(u);
      const c = await channelBy(u, u.sessionToken);
      await link(u, c, u.sessionToken, 5301);
      const limited = await u.pat(['messaging-channels', 'agents-all'], { knowledge_base_ids: [other] });
      const put = await call(h.app, 'PUT', `${API}/${c.id}`, { token: limited, body: { agentId: c.agentId } });
      expect(put.statusCode, put.body).toBe(200);
      expect(await runAsOf(c.id)).toMatchObject({ allowedKnowledgeBaseIds: [other] });
      // agents-all holds what an answer needs (agents-use); the answer holds no more than that.
      const ctx = channelAgentContext(h.app.deps, h.app.log, {
        accountId: u.account.id,
        runAs: (await runAsOf(c.id)) ?? null,
      });
      expect([...ctx.scopes]).toEqual(['agents-use']);
      expectLimited(await ask(u, c, 5301, def), def);
    });

    it('a channel written by a token that may not chat with agents answers nothing: the delivery says why', async () => {
      const u = await createUser(h.app);
      const channelsOnly = await u.pat(['messaging-channels'], { default_provider_permission: 'read' });
      const c = await channelBy(u, channelsOnly);
      await link(u, c, channelsOnly, 5401);
      expect((await deliver(c.secret(), message(5401, 'hello'))).statusCode).toBe(200);
      await runChannelJobs(h, u.account.id);
      expect(llm.requests).toEqual([]);
      const failed = (await deliveryRows(c.id)).find((d) => d.status === 'failed');
      expect(failed?.error).toBe('ForbiddenError: Missing required scope: agents-all or agents-use');
    });

    it('a channel and link kept before the set was: they answer, read-only on providers, with no knowledge base', async () => {
      const u = await createUser(h.app);
      const { def } = await basesOf(u);
      const c = await channelBy(u, u.sessionToken);
      await link(u, c, u.sessionToken, 5501);
      await h.database.db.update(messagingChannels).set({ runAs: null }).where(eq(messagingChannels.id, c.id));
      await h.database.db.update(channelLinks).set({ runAs: null }).where(eq(channelLinks.channelId, c.id));
      const ctx = channelAgentContext(h.app.deps, h.app.log, { accountId: u.account.id, runAs: null }, { runAs: null });
      expect(ctx.actor).toMatchObject({ defaultProviderPermission: 'read', allowedKnowledgeBaseIds: [] });
      const run = await ask(u, c, 5501, def);
      expect(run.told[0]).toContain(`This token may not use knowledge base ${def}`);
      expect(run.told[1]).toContain('This token may not use any knowledge base');
      expect(run.conversation).not.toContain('coyotes');
      expect((await deliveryRows(c.id)).filter((d) => d.status === 'replied')).toHaveLength(2);
    });
  });

  guardTests(
    () => h,
    [
      { method: 'GET', url: API, scopes: ['messaging-channels'] },
      {
        method: 'POST',
        url: API,
        scopes: ['messaging-channels'],
        body: { type: 'webchat', agentId: 'agt_x', config: {} },
      },
      ...(['GET', 'PUT', 'DELETE'] as const).map((method) => ({
        method,
        url: `${API}/mch_x`,
        scopes: ['messaging-channels' as const],
        ...(method === 'PUT' ? { body: { config: {} } } : {}),
        ownedUrl: async (owner: TestUser) => `${API}/${(await telegramChannel(owner)).channel.id}`,
      })),
      ...(['link-account', 'unlink-account'] as const).map((action) => ({
        method: 'POST' as const,
        url: `${API}/mch_x/${action}`,
        scopes: ['messaging-channels' as const],
        ownedUrl: async (owner: TestUser) => `${API}/${(await telegramChannel(owner)).channel.id}/${action}`,
      })),
      {
        method: 'GET',
        url: `${API}/mch_x/deliveries`,
        scopes: ['messaging-channels'],
        ownedUrl: async (owner: TestUser) => `${API}/${(await telegramChannel(owner)).channel.id}/deliveries`,
      },
    ],
  );
});
