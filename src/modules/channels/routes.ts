import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../config.ts';
import type { App } from '../../http/types.ts';
import { listQuery, paginated } from '../../lib/pagination.ts';
import { Channel, ChannelParams, CreateChannel, Delivery, LinkCode, UnlinkAccount, UpdateChannel } from './schema.ts';
import * as service from './service.ts';
import { receiveTelegramUpdate, receiveWhatsappDelivery, verifyWhatsappWebhook } from './webhooks.service.ts';

/** SPEC §4 "Messaging channels", scope `messaging-channels`; the platforms' webhooks are public. */
export async function channelRoutes(app: App, _config: Config): Promise<void> {
  const tags = ['Messaging channels'];
  const scoped = { scopes: ['messaging-channels' as const] };

  app.post(
    '/messaging-channels/telegram/webhook',
    {
      schema: {
        tags,
        summary: 'Telegram delivers updates here (public; X-Telegram-Bot-Api-Secret-Token)',
        description:
          'The channel is found by the secret token registered with the webhook (wrong or missing: 401). The update is recorded once per `update_id` and handled by a job; the answer is immediate.',
        body: z.unknown(),
        response: { 200: z.object({ ok: z.literal(true), duplicate: z.boolean() }) },
      },
      config: { auth: 'public' },
    },
    (req) => {
      const header = req.headers['x-telegram-bot-api-secret-token'];
      return receiveTelegramUpdate(req.publicCtx, typeof header === 'string' ? header : undefined, req.body);
    },
  );

  app.get(
    '/messaging-channels/whatsapp/webhook',
    {
      schema: {
        tags,
        summary: "Meta's webhook verification handshake (public)",
        description:
          'Answers `hub.challenge` as text/plain when `hub.mode` is `subscribe` and `hub.verify_token` is the verifyToken of a WhatsApp channel; otherwise 403.',
        querystring: z.object({
          'hub.mode': z.string().max(100).optional(),
          'hub.verify_token': z.string().max(1000).optional(),
          'hub.challenge': z.string().max(500).optional(),
        }),
      },
      config: { auth: 'public' },
    },
    async (req, reply) => {
      const challenge = await verifyWhatsappWebhook(req.publicCtx, req.query);
      return reply.type('text/plain; charset=utf-8').header('X-Content-Type-Options', 'nosniff').send(challenge);
    },
  );
  // The signature covers the exact bytes received: this route alone reads its JSON body as raw bytes.
  await app.register(async (plugin) => {
    const raw = plugin.withTypeProvider<ZodTypeProvider>();
    raw.removeContentTypeParser('application/json');
    raw.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    raw.post(
      '/messaging-channels/whatsapp/webhook',
      {
        schema: {
          tags,
          summary: 'WhatsApp Cloud API deliveries (public; X-Hub-Signature-256)',
          description:
            "The signature is checked over the raw body with the channel's appSecret or WHATSAPP_APP_SECRET (bad, missing or no secret: 401). Messages are recorded once per id and handled by a job; statuses are ignored.",
          response: {
            200: z.object({ ok: z.literal(true), received: z.number().int(), duplicates: z.number().int() }),
          },
        },
        config: { auth: 'public' },
      },
      (req) => {
        const header = req.headers['x-hub-signature-256'];
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        return receiveWhatsappDelivery(req.publicCtx, body, typeof header === 'string' ? header : undefined);
      },
    );
  });

  app.post(
    '/messaging-channels',
    {
      schema: {
        tags,
        summary: 'Create a messaging channel',
        description:
          'telegram `{botToken}`: the token is checked (getMe; refused: 422), a bot already serving a channel is 409, and the webhook is registered with a fresh secret. whatsapp `{phoneNumberId, accessToken, verifyToken, appSecret?}`: a number already serving a channel is 409. webchat `{allowedOrigins?}`. Secrets are sealed and never returned.',
        body: CreateChannel,
        response: { 201: Channel },
      },
      config: scoped,
    },
    async (req, reply) => reply.code(201).send(await service.createChannel(req.ctx, req.body)),
  );
  app.get(
    '/messaging-channels',
    {
      schema: {
        tags,
        summary: 'List messaging channels, newest first',
        querystring: listQuery(['createdAt']),
        response: { 200: paginated(Channel) },
      },
      config: scoped,
    },
    (req) => service.listChannels(req.ctx, req.query),
  );
  app.get(
    '/messaging-channels/:channelId',
    {
      schema: { tags, summary: 'Get a messaging channel', params: ChannelParams, response: { 200: Channel } },
      config: scoped,
    },
    (req) => service.getChannel(req.ctx, req.params.channelId),
  );
  app.put(
    '/messaging-channels/:channelId',
    {
      schema: {
        tags,
        summary: 'Update a channel: its agent, or config fields of its type (secrets replaced when given)',
        params: ChannelParams,
        body: UpdateChannel,
        response: { 200: Channel },
      },
      config: scoped,
    },
    (req) => service.updateChannel(req.ctx, req.params.channelId, req.body),
  );
  app.delete(
    '/messaging-channels/:channelId',
    {
      schema: {
        tags,
        summary: "Delete a channel (a Telegram bot's webhook is removed)",
        params: ChannelParams,
        response: { 204: z.undefined() },
      },
      config: scoped,
    },
    async (req, reply) => {
      await service.deleteChannel(req.ctx, req.params.channelId);
      return reply.code(204).send();
    },
  );
  app.post(
    '/messaging-channels/:channelId/link-account',
    {
      schema: {
        tags,
        summary: 'A single-use code (15 minutes) that links the external user who sends it to this account',
        description:
          'No body. telegram: `link` is the deep link `https://t.me/<bot>?start=CODE`; whatsapp: send `link CODE` to the number. Web chat channels: 422.',
        params: ChannelParams,
        response: { 200: LinkCode },
      },
      config: scoped,
    },
    (req) => service.createLinkCode(req.ctx, req.params.channelId),
  );
  app.post(
    '/messaging-channels/:channelId/unlink-account',
    {
      schema: {
        tags,
        summary: 'Unlink one external user (`externalUserId`) or, with no body, every one',
        params: ChannelParams,
        body: UnlinkAccount.nullish(),
        response: { 200: z.object({ unlinked: z.number().int() }) },
      },
      config: scoped,
    },
    (req) => service.unlinkAccount(req.ctx, req.params.channelId, req.body?.externalUserId),
  );
  app.get(
    '/messaging-channels/:channelId/deliveries',
    {
      schema: {
        tags,
        summary: 'Recent deliveries, newest first, with why one failed (extension)',
        params: ChannelParams,
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(100).default(20) }),
        response: { 200: z.object({ data: z.array(Delivery) }) },
      },
      config: scoped,
    },
    async (req) => ({ data: await service.listDeliveries(req.ctx, req.params.channelId, req.query.limit) }),
  );
}
