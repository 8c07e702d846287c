import type { FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../config.ts';
import { toAppError } from '../../http/error-handler.ts';
import { ipKey } from '../../http/rate-limit.ts';
import { startSse } from '../../http/sse.ts';
import type { App } from '../../http/types.ts';
import { listQuery, paginated } from '../../lib/pagination.ts';
import { sseEvent } from '../../lib/sse.ts';
import {
  Channel,
  ChannelParams,
  CreateChannel,
  Delivery,
  LinkCode,
  UnlinkAccount,
  UpdateChannel,
  WebchatMessage,
  WebchatReply,
} from './schema.ts';
import * as service from './service.ts';
import { answerWebchat, prepareWebchat } from './webchat.service.ts';
import { receiveTelegramUpdate, receiveWhatsappDelivery, verifyWhatsappWebhook } from './webhooks.service.ts';
import { WIDGET_JS } from './widget.ts';

/** SPEC §4 "Messaging channels", scope `messaging-channels`; the platforms' webhooks are public. */
export async function channelRoutes(app: App, config: Config): Promise<void> {
  const tags = ['Messaging channels'];
  const scoped = { scopes: ['messaging-channels' as const] };
  // The platforms deliver from a few addresses, often many updates a minute: the per-address global limit would
  // delay a busy bot's messages. A call without the channel's secret costs one indexed look-up.
  const platformCall = { auth: 'public' as const, rateLimit: false as const };

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
      config: platformCall,
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
      config: platformCall,
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
        config: platformCall,
      },
      (req) => {
        const header = req.headers['x-hub-signature-256'];
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        return receiveWhatsappDelivery(req.publicCtx, body, typeof header === 'string' ? header : undefined);
      },
    );
  });

  await webchatRoutes(app, config);

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

/**
 * Pages on other sites call the web chat. The preflight names no channel, so it lets any page send; the answer
 * to a message names the page only once its channel accepted that origin (the service says so), so a refused
 * or unknown page cannot read even the refusal.
 */
function allowOrigin(reply: FastifyReply, origin: string | undefined): void {
  if (origin !== undefined && origin.length <= 300) reply.header('Access-Control-Allow-Origin', origin);
}

/** The public web chat endpoint, its CORS preflight, and (at the root) the embeddable widget. */
async function webchatRoutes(app: App, config: Config): Promise<void> {
  const tags = ['Messaging channels'];
  const path = '/messaging-channels/webchat/messages';
  await app.register(async (plugin) => {
    const chat = plugin.withTypeProvider<ZodTypeProvider>();
    chat.addHook('onRequest', async (_req, reply) => {
      reply.header('Vary', 'Origin');
    });
    chat.options(path, { schema: { hide: true }, config: { auth: 'public' } }, async (req, reply) => {
      allowOrigin(reply, typeof req.headers.origin === 'string' ? req.headers.origin : undefined);
      return reply
        .code(204)
        .header('Access-Control-Allow-Methods', 'POST, OPTIONS')
        .header('Access-Control-Allow-Headers', 'content-type, accept')
        .header('Access-Control-Max-Age', '600')
        .send();
    });
    chat.post(
      path,
      {
        schema: {
          tags,
          summary: "A visitor's message to a web chat channel (public); JSON or Server-Sent Events",
          description:
            'Answers `{reply, visitorToken, conversationId}`: send the `visitorToken` back with later messages to keep the conversation; `clientMessageId` makes a retry answer the stored reply. With `Accept: text/event-stream`: events `start` `{visitorToken, conversationId}`, `delta` `{content}`..., then `done` (the JSON answer) or `error` `{error, message, statusCode}`. A channel with `allowedOrigins` refuses other pages (403). Limits: WEBCHAT_RATE_LIMIT per address, WEBCHAT_DAILY_PER_VISITOR and WEBCHAT_DAILY_PER_CHANNEL per UTC day (429 with Retry-After).',
          body: WebchatMessage,
          response: { 200: WebchatReply },
        },
        config: {
          auth: 'public',
          rateLimit: {
            max: config.channels.webchatRateLimit,
            timeWindow: config.rateLimits.windowMs,
            keyGenerator: ipKey,
          },
        },
      },
      async (req, reply) => {
        const origin = typeof req.headers.origin === 'string' ? req.headers.origin : undefined;
        const prepared = await prepareWebchat(req.publicCtx, req.body, origin, () => allowOrigin(reply, origin));
        const gone = new AbortController();
        reply.raw.on('close', () => {
          if (!reply.raw.writableFinished) gone.abort();
        });
        if (!String(req.headers.accept ?? '').includes('text/event-stream')) {
          return answerWebchat(req.publicCtx, prepared, { signal: gone.signal });
        }
        const raw = startSse(reply);
        try {
          const answer = await answerWebchat(req.publicCtx, prepared, {
            signal: gone.signal,
            onConversation: (conversationId) => {
              raw.write(sseEvent('start', { visitorToken: prepared.visitorToken, conversationId }));
            },
          });
          for (const piece of answer.reply.match(/\S+\s*|\s+/g) ?? []) raw.write(sseEvent('delta', { content: piece }));
          raw.end(sseEvent('done', answer));
        } catch (err) {
          const fault = toAppError(err);
          if (fault.statusCode >= 500) req.log.error({ err }, 'web chat failed');
          if (!raw.destroyed) raw.end(sseEvent('error', fault.toBody()));
        }
      },
    );
  });
}

/** `GET /webchat/widget.js`: the embeddable chat bubble (`<script src=".../webchat/widget.js" data-channel-id="mch_...">`). */
export async function webchatWidgetRoutes(app: App): Promise<void> {
  app.get('/webchat/widget.js', { schema: { hide: true }, config: { auth: 'public' } }, async (_req, reply) =>
    reply
      .type('application/javascript; charset=utf-8')
      .header('Cache-Control', 'public, max-age=300')
      .header('Cross-Origin-Resource-Policy', 'cross-origin')
      .send(WIDGET_JS),
  );
}
