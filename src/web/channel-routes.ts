import type { FastifyReply, FastifyRequest } from 'fastify';
import { serviceContextOf } from '../auth/guard.ts';
import type { OAuthServer } from '../auth/oauth/server.ts';
import type { App } from '../http/types.ts';
import { AppError, NotFoundError } from '../lib/errors.ts';
import { getAgent, listAgents } from '../modules/agents/service.ts';
import { CreateChannel } from '../modules/channels/schema.ts';
import {
  createChannel,
  createLinkCode,
  deleteChannel,
  getChannel,
  listChannels,
  listDeliveries,
  unlinkAccount,
} from '../modules/channels/service.ts';
import { CHANNELS_PATH, type ChannelDraft, channelPage, channelPath, channelsPage } from './channel-pages.ts';
import { type Form, one, pageHelpers, type SignedIn, send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';

const CHANNEL_ID = /^mch_[A-Za-z0-9_-]{1,96}$/;

/** The messaging channels pages (`/account/channels`), over the channels services. */
export async function channelPageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const { csrf, csrfOk, signedIn, csrfFailed } = pageHelpers(app, oauth);
  const page = { schema: { hide: true }, config: { auth: 'public' as const } };
  const agentsOf = async (req: FastifyRequest, current: SignedIn) =>
    (
      await listAgents(serviceContextOf(req, current.actor), {
        page: 1,
        limit: 100,
        sortBy: 'createdAt',
        sortOrder: 'asc',
      })
    ).data;

  async function renderList(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    opts: { error?: string; notice?: string; draft?: ChannelDraft } = {},
    status = 200,
  ) {
    const ctx = serviceContextOf(req, current.actor);
    const channels = await listChannels(ctx, { page: 1, limit: 100, sortOrder: 'desc' });
    return send(
      reply,
      channelsPage({
        user: current.user,
        csrf: csrf(req, reply),
        channels: channels.data,
        agents: await agentsOf(req, current),
        baseUrl: app.deps.config.baseUrl,
        ...opts,
      }),
      status,
    );
  }

  async function renderChannel(req: FastifyRequest, reply: FastifyReply, current: SignedIn, channelId: string) {
    const flash = takeFlash(req, reply);
    const ctx = serviceContextOf(req, current.actor);
    const channel = await getChannel(ctx, channelId);
    // The agent exists: deleting it deletes its channels.
    const agent = await getAgent(ctx, channel.agentId);
    return send(
      reply,
      channelPage({
        user: current.user,
        csrf: csrf(req, reply),
        channel,
        agentName: agent.name,
        deliveries: await listDeliveries(ctx, channelId, 20),
        code: flash.linkCode,
        message: flash.notice,
        error: flash.error,
      }),
    );
  }

  /** The channel of the URL, or the list page with the refusal (404 for another account's). */
  async function withChannel(
    req: FastifyRequest,
    reply: FastifyReply,
    then: (current: SignedIn, channelId: string) => Promise<FastifyReply>,
  ): Promise<FastifyReply> {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const { channelId } = req.params as { channelId: string };
    try {
      if (!CHANNEL_ID.test(channelId)) throw new NotFoundError('No such messaging channel');
      return await then(current, channelId);
    } catch (err) {
      if (!(err instanceof AppError) || err.statusCode >= 500) throw err;
      return renderList(req, reply, current, { error: err.message }, err.statusCode);
    }
  }

  app.get(CHANNELS_PATH, page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    return renderList(req, reply, current, takeFlash(req, reply));
  });

  app.post(CHANNELS_PATH, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await signedIn(req, reply, CHANNELS_PATH);
    if (!current) return reply;
    const type = one(form, 'type');
    const origins = one(form, 'allowedOrigins');
    const draft: ChannelDraft = {
      type,
      agentId: one(form, 'agentId'),
      phoneNumberId: one(form, 'phoneNumberId'),
      allowedOrigins: origins,
    };
    const config =
      type === 'telegram'
        ? { botToken: one(form, 'botToken') }
        : type === 'whatsapp'
          ? {
              phoneNumberId: one(form, 'phoneNumberId'),
              accessToken: one(form, 'accessToken'),
              verifyToken: one(form, 'verifyToken'),
              ...(one(form, 'appSecret') ? { appSecret: one(form, 'appSecret') } : {}),
            }
          : {
              allowedOrigins: origins
                .split(/[\s,]+/)
                .map((o) => o.trim().replace(/\/+$/, ''))
                .filter(Boolean),
            };
    const parsed = CreateChannel.safeParse({ type, agentId: draft.agentId, config });
    if (!parsed.success) {
      const error = parsed.error.issues
        .map((i) => `${i.path.filter((p) => p !== 'config').join('.') || 'form'}: ${i.message}`)
        .join('; ');
      return renderList(req, reply, current, { error, draft }, 422);
    }
    try {
      const channel = await createChannel(serviceContextOf(req, current.actor), parsed.data);
      return reply.redirect(channelPath(channel.id), 303);
    } catch (err) {
      if (err instanceof AppError && err.statusCode < 500) {
        return renderList(req, reply, current, { error: err.message, draft }, err.statusCode);
      }
      if (err instanceof AppError) return renderList(req, reply, current, { error: err.message, draft }, 502);
      throw err;
    }
  });

  app.get(`${CHANNELS_PATH}/:channelId`, page, (req, reply) =>
    withChannel(req, reply, (current, channelId) => renderChannel(req, reply, current, channelId)),
  );

  // A link code is shown once, on the channel's page this POST redirects to (a reload shows it no more).
  app.post(`${CHANNELS_PATH}/:channelId/link`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withChannel(req, reply, async (current, channelId) => {
      const linkCode = await createLinkCode(serviceContextOf(req, current.actor), channelId);
      return redirectWithFlash(req, reply, channelPath(channelId), { linkCode });
    });
  });

  app.post(`${CHANNELS_PATH}/:channelId/unlink`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withChannel(req, reply, async (current, channelId) => {
      const ctx = serviceContextOf(req, current.actor);
      const user = one(form, 'externalUserId');
      // Without a person nothing is unlinked (never everyone), but the channel must still be the caller's: 404.
      if (!user) {
        await getChannel(ctx, channelId);
        return reply.redirect(channelPath(channelId), 303);
      }
      await unlinkAccount(ctx, channelId, user.slice(0, 200));
      return redirectWithFlash(req, reply, channelPath(channelId), {
        notice: 'Unlinked: that person talks to the agent as a stranger now.',
      });
    });
  });

  app.post(`${CHANNELS_PATH}/:channelId/delete`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withChannel(req, reply, async (current, channelId) => {
      await deleteChannel(serviceContextOf(req, current.actor), channelId);
      return redirectWithFlash(req, reply, CHANNELS_PATH, { notice: 'Channel deleted.' });
    });
  });
}
