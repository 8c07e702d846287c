import { z } from 'zod';
import type { OAuthServer } from '../access/oauth/server.ts';
import type { App } from '../http/types.ts';
import { AppError } from '../lib/errors.ts';
import { getAgent, listAgents } from '../modules/agents/index.ts';
import {
  CreateChannel,
  createChannel,
  createLinkCode,
  deleteChannel,
  getChannel,
  listChannels,
  listDeliveries,
  unlinkAccount,
} from '../modules/channels/index.ts';
import { CHANNELS_PATH, type ChannelDraft, channelPage, channelPath, channelsPage } from './channel-pages.ts';
import { send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { formOf, idParam, type PageBase, pageRouter, text } from './page-route.ts';

const CHANNEL_ID = /^mch_[A-Za-z0-9_-]{1,96}$/;

const ChannelParams = z.object({ channelId: idParam(CHANNEL_ID, () => 'No such messaging channel') });
const ChannelForm = formOf({
  type: text,
  agentId: text,
  allowedOrigins: text,
  botToken: text,
  phoneNumberId: text,
  accessToken: text,
  verifyToken: text,
  appSecret: text,
});
const UnlinkForm = formOf({ externalUserId: text });

/** The channel's settings as CreateChannel takes them, by its type. */
function configOf(form: z.infer<typeof ChannelForm>) {
  if (form.type === 'telegram') return { botToken: form.botToken };
  if (form.type === 'whatsapp') {
    return {
      phoneNumberId: form.phoneNumberId,
      accessToken: form.accessToken,
      verifyToken: form.verifyToken,
      ...(form.appSecret ? { appSecret: form.appSecret } : {}),
    };
  }
  return {
    allowedOrigins: form.allowedOrigins
      .split(/[\s,]+/)
      .map((o) => o.trim().replace(/\/+$/, ''))
      .filter(Boolean),
  };
}

/** The messaging channels pages (`/account/channels`), over the channels services. */
export async function channelPageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const pages = pageRouter(app, oauth);

  async function renderList(
    { reply, current, ctx, csrf }: PageBase,
    opts: { error?: string; notice?: string; draft?: ChannelDraft } = {},
    status = 200,
  ) {
    const channels = await listChannels(ctx, { page: 1, limit: 100, sortOrder: 'desc' });
    const agents = await listAgents(ctx, { page: 1, limit: 100, sortBy: 'createdAt', sortOrder: 'asc' });
    return send(
      reply,
      channelsPage({
        user: current.user,
        csrf: csrf(),
        channels: channels.data,
        agents: agents.data,
        baseUrl: app.deps.config.baseUrl,
        ...opts,
      }),
      status,
    );
  }

  /** A refusal on the list page (404 for another account's channel); faults of ours stay 500s. */
  const refused = (page: PageBase, err: AppError) =>
    err.statusCode < 500 ? renderList(page, { error: err.message }, err.statusCode) : undefined;
  const onChannel = { params: ChannelParams, refused };

  pages.get(CHANNELS_PATH, {}, (page) => renderList(page, takeFlash(page.req, page.reply)));

  pages.post(CHANNELS_PATH, { form: ChannelForm, refused }, async (page) => {
    const { form } = page;
    const draft: ChannelDraft = {
      type: form.type,
      agentId: form.agentId,
      phoneNumberId: form.phoneNumberId,
      allowedOrigins: form.allowedOrigins,
    };
    const parsed = CreateChannel.safeParse({ type: form.type, agentId: draft.agentId, config: configOf(form) });
    if (!parsed.success) {
      const error = parsed.error.issues
        .map((i) => `${i.path.filter((p) => p !== 'config').join('.') || 'form'}: ${i.message}`)
        .join('; ');
      return renderList(page, { error, draft }, 422);
    }
    try {
      const channel = await createChannel(page.ctx, parsed.data);
      return page.reply.redirect(channelPath(channel.id), 303);
    } catch (err) {
      if (err instanceof AppError && err.statusCode < 500) {
        return renderList(page, { error: err.message, draft }, err.statusCode);
      }
      if (err instanceof AppError) return renderList(page, { error: err.message, draft }, 502);
      throw err;
    }
  });

  pages.get(`${CHANNELS_PATH}/:channelId`, onChannel, async ({ req, reply, current, ctx, csrf, params }) => {
    const flash = takeFlash(req, reply);
    const channel = await getChannel(ctx, params.channelId);
    // The agent exists: deleting it deletes its channels.
    const agent = await getAgent(ctx, channel.agentId);
    return send(
      reply,
      channelPage({
        user: current.user,
        csrf: csrf(),
        channel,
        agentName: agent.name,
        deliveries: await listDeliveries(ctx, params.channelId, 20),
        code: flash.linkCode,
        message: flash.notice,
        error: flash.error,
      }),
    );
  });

  // A link code is shown once, on the channel's page this POST redirects to (a reload shows it no more).
  pages.post(`${CHANNELS_PATH}/:channelId/link`, onChannel, async ({ req, reply, ctx, params }) => {
    const linkCode = await createLinkCode(ctx, params.channelId);
    return redirectWithFlash(req, reply, channelPath(params.channelId), { linkCode });
  });

  pages.post(
    `${CHANNELS_PATH}/:channelId/unlink`,
    { ...onChannel, form: UnlinkForm },
    async ({ req, reply, ctx, params, form }) => {
      const { channelId } = params;
      // Without a person nothing is unlinked (never everyone), but the channel must still be the caller's: 404.
      if (!form.externalUserId) {
        await getChannel(ctx, channelId);
        return reply.redirect(channelPath(channelId), 303);
      }
      await unlinkAccount(ctx, channelId, form.externalUserId.slice(0, 200));
      return redirectWithFlash(req, reply, channelPath(channelId), {
        notice: 'Unlinked: that person talks to the agent as a stranger now.',
      });
    },
  );

  pages.post(`${CHANNELS_PATH}/:channelId/delete`, onChannel, async ({ req, reply, ctx, params }) => {
    await deleteChannel(ctx, params.channelId);
    return redirectWithFlash(req, reply, CHANNELS_PATH, { notice: 'Channel deleted.' });
  });
}
