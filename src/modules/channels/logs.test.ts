import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import { type FakeTelegram, startFakeTelegram } from '../../../test/fakes/telegram.ts';
import { type FakeWhatsapp, hubSignature, startFakeWhatsapp, whatsappDelivery } from '../../../test/fakes/whatsapp.ts';
import { call, createHarness, createUser, type TestHarness, testConfig } from '../../../test/harness.ts';
import { buildApp, loggerOptions } from '../../app.ts';
import type { App } from '../../http/types.ts';
import { runChannelJobs } from './test-support.ts';

/** Bot tokens, access tokens, app secrets, verify tokens and webhook secrets never reach the logs, even at debug. */
describe('messaging channels: secrets stay out of the logs', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  let tg: FakeTelegram;
  let wa: FakeWhatsapp;
  let app: App;
  const lines: string[] = [];

  beforeAll(async () => {
    llm = await startFakeLlm();
    tg = await startFakeTelegram();
    wa = await startFakeWhatsapp();
    const env = {
      LLM_BASE_URL: llm.url,
      LLM_MODELS: 'fake-model=1000000/2000000',
      TELEGRAM_API_URL: tg.url,
      WHATSAPP_API_URL: wa.url,
      CHANNEL_SEND_INTERVAL_MS: '0',
    };
    h = await createHarness(env);
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    app = await buildApp({
      config: testConfig(mkdtempSync(join(tmpdir(), 'sb-chlog-')), { ...env, LOG_LEVEL: 'debug' }),
      database: h.database,
      keyRing: h.keyRing,
      logger: { ...(loggerOptions('debug') as object), stream } as never,
    });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await h?.close();
    await llm?.close();
    await tg?.close();
    await wa?.close();
  });

  it('through creation, webhooks, handshakes, replies and failures', async () => {
    const user = await createUser(app);
    const as = { token: user.sessionToken };
    const agentId = (await call(app, 'POST', '/api/v1/agents', { ...as, body: { name: 'Helper' } })).json().id;
    const botToken = tg.addBot(777001, 'logs_bot');
    const telegram = await call(app, 'POST', '/api/v1/messaging-channels', {
      ...as,
      body: { type: 'telegram', agentId, config: { botToken } },
    });
    expect(telegram.statusCode).toBe(201);
    const secret = tg.webhooks.get(botToken)?.secret_token ?? '';
    const update = {
      update_id: 1,
      message: { message_id: 1, chat: { id: 9, type: 'private' }, from: { id: 9 }, text: 'hi' },
    };
    for (const header of [secret, 'wrong-secret-value']) {
      await app.inject({
        method: 'POST',
        url: '/api/v1/messaging-channels/telegram/webhook',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': header },
        payload: JSON.stringify(update),
      });
    }
    tg.failNextSends({ status: 400, description: 'Bad Request: chat not found' });
    await expect(runChannelJobs(h, user.account.id, app)).rejects.toThrow(/chat not found/);

    const accessToken = 'EAAGsecretaccesstoken0123456789';
    const verifyToken = 'verify-secret-0123456789';
    const appSecret = 'app-secret-0123456789';
    wa.addNumber('5550777', accessToken);
    const whatsapp = await call(app, 'POST', '/api/v1/messaging-channels', {
      ...as,
      body: { type: 'whatsapp', agentId, config: { phoneNumberId: '5550777', accessToken, verifyToken, appSecret } },
    });
    expect(whatsapp.statusCode).toBe(201);
    const hs = await app.inject({
      method: 'GET',
      url: `/api/v1/messaging-channels/whatsapp/webhook?hub.mode=subscribe&hub.verify_token=${verifyToken}&hub.challenge=42`,
    });
    expect(hs.body).toBe('42');
    const raw = JSON.stringify(whatsappDelivery('5550777', [{ id: 'wamid.log1', from: '4900', text: 'hi' }]));
    await app.inject({
      method: 'POST',
      url: '/api/v1/messaging-channels/whatsapp/webhook',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': hubSignature(raw, appSecret) },
      payload: raw,
    });
    await runChannelJobs(h, user.account.id, app);
    await call(app, 'DELETE', `/api/v1/messaging-channels/${telegram.json().id}`, as);

    const text = lines.join('');
    expect(text).toContain(
      '/api/v1/messaging-channels/whatsapp/webhook?hub.mode=subscribe&hub.verify_token=[REDACTED]',
    );
    for (const value of [botToken, secret, accessToken, verifyToken, appSecret]) expect(text).not.toContain(value);
  });
});
