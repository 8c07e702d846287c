import type { FastifyReply, FastifyRequest } from 'fastify';
import { serviceContextOf } from '../auth/guard.ts';
import type { OAuthServer } from '../auth/oauth/server.ts';
import type { App } from '../http/types.ts';
import { AppError, NotFoundError } from '../lib/errors.ts';
import { CreateWebhook, MAX_ENDPOINTS_PER_ACCOUNT } from '../modules/webhooks/schema.ts';
import * as webhooks from '../modules/webhooks/service.ts';
import { type Form, formIssues, many, one, pageHelpers, type SignedIn, send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { confirmPage } from './pages.ts';
import {
  WEBHOOKS_PATH,
  type WebhookDraft,
  webhookDeleteText,
  webhookPage,
  webhookPath,
  webhooksPage,
} from './webhook-pages.ts';

const WEBHOOK_ID = /^wh_[A-Za-z0-9_-]{1,96}$/;
const RECENT_DELIVERIES = 25;

/** The webhooks pages (`/account/webhooks`), over the webhooks service. */
export async function webhookPageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const { csrf, csrfOk, signedIn, csrfFailed } = pageHelpers(app, oauth);
  const page = { schema: { hide: true }, config: { auth: 'public' as const } };

  async function renderList(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    opts: { error?: string; notice?: string; draft?: WebhookDraft; created?: { url: string; secret: string } } = {},
    status = 200,
  ) {
    const ctx = serviceContextOf(req, current.actor);
    const list = await webhooks.listWebhooks(ctx, { page: 1, limit: MAX_ENDPOINTS_PER_ACCOUNT });
    const latest = await webhooks.latestDeliveries(
      ctx,
      list.data.map((w) => w.id),
    );
    return send(
      reply,
      webhooksPage({ user: current.user, csrf: csrf(req, reply), webhooks: list.data, latest, ...opts }),
      status,
    );
  }

  /** The endpoint of the URL, or the list page with the refusal (404 for another account's). */
  async function withWebhook(
    req: FastifyRequest,
    reply: FastifyReply,
    then: (current: SignedIn, id: string) => Promise<FastifyReply>,
  ): Promise<FastifyReply> {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const { webhookId } = req.params as { webhookId: string };
    try {
      if (!WEBHOOK_ID.test(webhookId)) throw new NotFoundError('No such webhook');
      return await then(current, webhookId);
    } catch (err) {
      if (!(err instanceof AppError) || err.statusCode >= 500) throw err;
      return renderList(req, reply, current, { error: err.message }, err.statusCode);
    }
  }

  app.get(WEBHOOKS_PATH, page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const flash = takeFlash(req, reply);
    return renderList(req, reply, current, {
      ...(flash.notice ? { notice: flash.notice } : {}),
      ...(flash.error ? { error: flash.error } : {}),
      ...(flash.webhookSecret ? { created: flash.webhookSecret } : {}),
    });
  });

  app.post(WEBHOOKS_PATH, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await signedIn(req, reply, WEBHOOKS_PATH);
    if (!current) return reply;
    const draft: WebhookDraft = {
      url: one(form, 'url').slice(0, 2000),
      events: many(form, 'events').slice(0, 20),
      description: one(form, 'description').slice(0, 500),
    };
    const parsed = CreateWebhook.safeParse(draft);
    if (!parsed.success) {
      const error = draft.events.length === 0 ? 'Pick at least one event.' : formIssues(parsed.error);
      return renderList(req, reply, current, { error, draft }, 422);
    }
    try {
      const created = await webhooks.createWebhook(serviceContextOf(req, current.actor), parsed.data);
      // Shown once by the page the browser lands on: the flash is sealed and read once.
      return redirectWithFlash(req, reply, WEBHOOKS_PATH, {
        webhookSecret: { url: created.url, secret: created.secret },
      });
    } catch (err) {
      if (!(err instanceof AppError) || err.statusCode >= 500) throw err;
      return renderList(req, reply, current, { error: err.message, draft }, err.statusCode);
    }
  });

  app.get(`${WEBHOOKS_PATH}/:webhookId`, page, (req, reply) =>
    withWebhook(req, reply, async (current, id) => {
      const flash = takeFlash(req, reply);
      const ctx = serviceContextOf(req, current.actor);
      const webhook = await webhooks.getWebhook(ctx, id);
      const deliveries = await webhooks.listDeliveries(ctx, id, { page: 1, limit: RECENT_DELIVERIES });
      return send(
        reply,
        webhookPage({
          user: current.user,
          csrf: csrf(req, reply),
          webhook,
          deliveries: deliveries.data,
          total: deliveries.pagination.total,
          notice: flash.notice,
        }),
      );
    }),
  );

  app.post(`${WEBHOOKS_PATH}/:webhookId/enabled`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withWebhook(req, reply, async (current, id) => {
      const value = one(form, 'enabled');
      const ctx = serviceContextOf(req, current.actor);
      // Anything but true/false changes nothing, but the endpoint must still be the caller's: 404.
      if (value !== 'true' && value !== 'false') {
        await webhooks.getWebhook(ctx, id);
        return reply.redirect(webhookPath(id), 303);
      }
      const enabled = value === 'true';
      await webhooks.updateWebhook(ctx, id, { enabled });
      return redirectWithFlash(req, reply, webhookPath(id), {
        notice: enabled ? 'Webhook enabled.' : 'Webhook disabled: nothing is sent to it until you enable it again.',
      });
    });
  });

  app.get(`${WEBHOOKS_PATH}/:webhookId/delete`, page, (req, reply) =>
    withWebhook(req, reply, async (current, id) => {
      const webhook = await webhooks.getWebhook(serviceContextOf(req, current.actor), id);
      return send(
        reply,
        confirmPage({
          user: current.user,
          csrf: csrf(req, reply),
          title: 'Delete this webhook?',
          body: webhookDeleteText(webhook.url),
          action: `${webhookPath(id)}/delete`,
          button: 'Delete webhook',
          cancelHref: webhookPath(id),
        }),
      );
    }),
  );

  app.post(`${WEBHOOKS_PATH}/:webhookId/delete`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withWebhook(req, reply, async (current, id) => {
      await webhooks.deleteWebhook(serviceContextOf(req, current.actor), id);
      return redirectWithFlash(req, reply, WEBHOOKS_PATH, { notice: 'Webhook deleted.' });
    });
  });
}
