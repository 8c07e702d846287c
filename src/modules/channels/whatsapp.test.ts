import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../../../test/fakes/llm-upstream.ts';
import {
  type FakeWhatsapp,
  hubSignature,
  startFakeWhatsapp,
  whatsappDelivery,
  whatsappStatuses,
} from '../../../test/fakes/whatsapp.ts';
import { call, createHarness, createUser, type TestHarness, type TestUser } from '../../../test/harness.ts';
import { channelChats, channelDeliveries, messagingChannels } from '../../db/schema/index.ts';
import type { App } from '../../http/types.ts';
import { deliverToAgentChannels } from './deliver.service.ts';
import { LINKED_REPLY } from './inbound.ts';
import { channelJobCount, runChannelJobs, secondInstance } from './test-support.ts';

const API = '/api/v1/messaging-channels';
const WEBHOOK = `${API}/whatsapp/webhook`;
const GLOBAL_SECRET = 'global-app-secret';

describe('messaging channels: WhatsApp Cloud API', () => {
  let h: TestHarness;
  let withGlobalSecret: App;
  let llm: FakeLlm;
  let wa: FakeWhatsapp;
  let numbers = 5550100;
  let messageIds = 1;

  beforeAll(async () => {
    llm = await startFakeLlm();
    wa = await startFakeWhatsapp();
    h = await createHarness({
      LLM_BASE_URL: llm.url,
      LLM_MODELS: 'fake-model=1000000/2000000',
      WHATSAPP_API_URL: wa.url,
      CHANNEL_SEND_INTERVAL_MS: '0',
    });
    withGlobalSecret = await h.extraApp({ WHATSAPP_APP_SECRET: GLOBAL_SECRET });
  });
  afterAll(async () => {
    await h?.close();
    await llm?.close();
    await wa?.close();
  });
  beforeEach(() => {
    llm.reset();
    llm.requests.length = 0;
    wa.reset();
  });

  const as = (u: TestUser) => ({ token: u.sessionToken });
  const whatsappChannel = async (opts: { appSecret?: string | null } = {}) => {
    const user = await createUser(h.app);
    const agent = await call(h.app, 'POST', '/api/v1/agents', { ...as(user), body: { name: 'Helper' } });
    const agentId = agent.json().id as string;
    const phoneNumberId = String(++numbers);
    const accessToken = `EAAG${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
    const verifyToken = `verify-${phoneNumberId}`;
    const appSecret = opts.appSecret === null ? undefined : (opts.appSecret ?? `secret-${phoneNumberId}`);
    wa.addNumber(phoneNumberId, accessToken);
    const res = await call(h.app, 'POST', API, {
      ...as(user),
      body: {
        type: 'whatsapp',
        agentId,
        config: { phoneNumberId, accessToken, verifyToken, ...(appSecret ? { appSecret } : {}) },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    return { user, agentId, phoneNumberId, accessToken, verifyToken, appSecret, channel: res.json() };
  };
  const post = (raw: string, signature: string | undefined, app = h.app) =>
    app.inject({
      method: 'POST',
      url: WEBHOOK,
      headers: { 'content-type': 'application/json', ...(signature ? { 'x-hub-signature-256': signature } : {}) },
      payload: raw,
    });
  const text = (c: Awaited<ReturnType<typeof whatsappChannel>>, from: string, body: string, id?: string) =>
    JSON.stringify(whatsappDelivery(c.phoneNumberId, [{ id: id ?? `wamid.in${messageIds++}`, from, text: body }]));
  const send = (c: Awaited<ReturnType<typeof whatsappChannel>>, from: string, body: string) => {
    const raw = text(c, from, body);
    return post(raw, hubSignature(raw, c.appSecret ?? GLOBAL_SECRET));
  };
  const link = async (c: Awaited<ReturnType<typeof whatsappChannel>>, from: string) => {
    const code = (await call(h.app, 'POST', `${API}/${c.channel.id}/link-account`, as(c.user))).json().code;
    expect((await send(c, from, `link ${code}`)).statusCode).toBe(200);
    await runChannelJobs(h, c.user.account.id);
    expect(wa.sent.at(-1)).toEqual({ phoneNumberId: c.phoneNumberId, to: from, text: LINKED_REPLY });
    wa.reset();
  };

  it('creates a channel: secrets sealed and reported only as set, one channel per number (409)', async () => {
    const c = await whatsappChannel();
    expect(c.channel).toMatchObject({
      type: 'whatsapp',
      config: { phoneNumberId: c.phoneNumberId, accessTokenSet: true, verifyTokenSet: true, appSecretSet: true },
      webhookUrl: 'http://localhost:8080/api/v1/messaging-channels/whatsapp/webhook',
    });
    const [row] = await h.database.db.select().from(messagingChannels).where(eq(messagingChannels.id, c.channel.id));
    for (const secret of [c.accessToken, c.verifyToken, c.appSecret ?? '']) {
      expect(JSON.stringify(c.channel)).not.toContain(secret);
      expect(JSON.stringify(row)).not.toContain(secret);
    }
    const other = await createUser(h.app);
    const agentId = (await call(h.app, 'POST', '/api/v1/agents', { ...as(other), body: { name: 'x' } })).json().id;
    const again = await call(h.app, 'POST', API, {
      ...as(other),
      body: {
        type: 'whatsapp',
        agentId,
        config: { phoneNumberId: c.phoneNumberId, accessToken: 'a', verifyToken: 'b' },
      },
    });
    expect(again.statusCode).toBe(409);
  });

  it('answers the verification handshake for the right verify token only', async () => {
    const c = await whatsappChannel();
    const ok = await h.app.inject({
      method: 'GET',
      url: `${WEBHOOK}?hub.mode=subscribe&hub.verify_token=${c.verifyToken}&hub.challenge=1158201444`,
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(ok.body).toBe('1158201444');
    for (const query of [
      `hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1`,
      `hub.mode=unsubscribe&hub.verify_token=${c.verifyToken}&hub.challenge=1`,
      `hub.challenge=1`,
    ]) {
      const res = await h.app.inject({ method: 'GET', url: `${WEBHOOK}?${query}` });
      expect(res.statusCode).toBe(403);
      expect(res.json().error).toBe('ForbiddenError');
    }
  });

  it('refuses forged, missing and re-serialized signatures, and deliveries no secret can verify', async () => {
    const c = await whatsappChannel();
    const raw = text(c, '4915100000001', 'hello');
    const reserialized = JSON.stringify(JSON.parse(raw), null, 2);
    for (const [body, signature] of [
      [raw, hubSignature(raw, 'not-the-secret')],
      [raw, undefined],
      [raw, 'sha256=zz'],
      [reserialized, hubSignature(raw, c.appSecret ?? '')],
    ] as const) {
      const res = await post(body, signature);
      expect(res.statusCode, res.body).toBe(401);
      expect(res.json().error).toBe('UnauthorizedError');
    }
    expect(await channelJobCount(h, c.user.account.id)).toBe(0);
    expect((await post(raw, hubSignature(raw, c.appSecret ?? ''))).json()).toEqual({
      ok: true,
      received: 1,
      duplicates: 0,
    });

    // Without its own appSecret: refused unless WHATSAPP_APP_SECRET is set, then verified with it.
    const bare = await whatsappChannel({ appSecret: null });
    const raw2 = text(bare, '4915100000002', 'hi');
    const refused = await post(raw2, hubSignature(raw2, GLOBAL_SECRET));
    expect(refused.statusCode).toBe(401);
    expect(refused.json().message).toBe('No app secret is configured to verify this delivery');
    expect((await post(raw2, hubSignature(raw2, 'other'), withGlobalSecret)).statusCode).toBe(401);
    expect((await post(raw2, hubSignature(raw2, GLOBAL_SECRET), withGlobalSecret)).statusCode).toBe(200);
  });

  it('a signed delivery holding text no column can store (a lone surrogate, NUL) is a 400, not a 500', async () => {
    const c = await whatsappChannel();
    for (const [body, message] of [
      ['hi \ud800 there', 'Text must not contain unpaired surrogates (a lone \\uD800-\\uDFFF escape)'],
      ['hi \u0000 there', 'Text must not contain NUL (\\u0000) characters'],
    ] as const) {
      const res = await send(c, '15550001111', body);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toEqual({ error: 'BadRequestError', message, statusCode: 400 });
    }
  });

  it('a delivery nested thousands of levels deep: unsigned a 401 before anything walks it, signed a 400', async () => {
    const c = await whatsappChannel();
    const deep = `${'['.repeat(5_000)}"\\ud800"${']'.repeat(5_000)}`;
    const raw = text(c, '15550002222', '@deep@').replace('"@deep@"', deep);
    for (const [body, signature, app] of [
      [raw, undefined, h.app],
      [raw, hubSignature(raw, 'not-the-secret'), h.app],
      // A number we do not know, on an instance with WHATSAPP_APP_SECRET: still the signature first.
      [raw.replace(`"${c.phoneNumberId}"`, '"1"'), undefined, withGlobalSecret],
    ] as const) {
      const res = await post(body, signature, app);
      expect(res.statusCode, res.body).toBe(401);
      expect(res.json().error).toBe('UnauthorizedError');
    }
    const signed = await post(raw, hubSignature(raw, c.appSecret ?? ''));
    expect(signed.statusCode, signed.body).toBe(400);
    expect(signed.json()).toEqual({
      error: 'BadRequestError',
      message: 'JSON must not nest arrays and objects more than 64 levels deep',
      statusCode: 400,
    });
    expect(await channelJobCount(h, c.user.account.id)).toBe(0);
  });

  it('links with "link CODE"; a duplicate and a concurrent duplicate message cause one agent run; statuses are ignored', async () => {
    const c = await whatsappChannel();
    await link(c, '4915100000003');
    const raw = text(c, '4915100000003', 'Where is my order?', 'wamid.dup');
    const signature = hubSignature(raw, c.appSecret ?? '');
    const second = await secondInstance(h);
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => post(raw, signature, i % 2 ? second.app : h.app)),
    ).finally(() => second.close());
    expect(answers.map((a) => a.json().received).sort()).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    expect((await post(raw, signature)).json()).toEqual({ ok: true, received: 0, duplicates: 1 });
    const statuses = JSON.stringify(whatsappStatuses(c.phoneNumberId));
    expect((await post(statuses, hubSignature(statuses, c.appSecret ?? ''))).json()).toEqual({
      ok: true,
      received: 0,
      duplicates: 0,
    });
    llm.enqueue({ content: 'It ships tomorrow.' });
    await runChannelJobs(h, c.user.account.id);
    expect(llm.requests).toHaveLength(1);
    expect(wa.sent).toEqual([{ phoneNumberId: c.phoneNumberId, to: '4915100000003', text: 'It ships tomorrow.' }]);
    // While the agent worked, the message was marked read with the typing indicator.
    expect(wa.reads).toEqual([{ messageId: 'wamid.dup', typing: true }]);
  });

  it('replies within the 24-hour window only, and records why when it cannot', async () => {
    const c = await whatsappChannel();
    const user = '4915100000004';
    await link(c, user);
    expect((await deliverToAgentChannels(c.user.ctx, c.agentId, 'Report ready', { key: 'in-window' })).queued).toBe(1);
    await runChannelJobs(h, c.user.account.id);
    expect(wa.sent.map((s) => s.text)).toEqual(['Report ready']);

    const longAgo = new Date(Date.now() - 25 * 3600 * 1000);
    await h.database.db
      .update(channelChats)
      .set({ lastInboundAt: longAgo })
      .where(and(eq(channelChats.channelId, c.channel.id), eq(channelChats.chatId, user)));
    wa.reset();
    await deliverToAgentChannels(c.user.ctx, c.agentId, 'Report ready', { key: 'late' });
    await runChannelJobs(h, c.user.account.id);
    expect(wa.sent).toEqual([]);
    const [row] = await h.database.db
      .select()
      .from(channelDeliveries)
      .where(and(eq(channelDeliveries.channelId, c.channel.id), eq(channelDeliveries.key, `push:late:${user}`)));
    expect(row).toMatchObject({ status: 'failed', direction: 'out' });
    expect(row?.error).toBe(
      `Outside WhatsApp's 24-hour window: the user last wrote at ${longAgo.toISOString()} (only template messages may be sent)`,
    );
    const listed = await call(h.app, 'GET', `${API}/${c.channel.id}/deliveries`, as(c.user));
    expect(listed.json().data[0]).toMatchObject({ key: `push:late:${user}`, status: 'failed', error: row?.error });
  });
});
