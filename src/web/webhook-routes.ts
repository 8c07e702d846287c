import { z } from 'zod';
import type { OAuthServer } from '../access/oauth/server.ts';
import type { App } from '../http/types.ts';
import { AppError } from '../lib/errors.ts';
import * as webhooks from '../modules/webhooks/index.ts';
import { CreateWebhook, MAX_ENDPOINTS_PER_ACCOUNT } from '../modules/webhooks/index.ts';
import { formIssues, send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { formOf, idParam, list, type PageBase, pageRouter, text } from './page-route.ts';
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

const WebhookParams = z.object({ webhookId: idParam(WEBHOOK_ID, () => 'No such webhook') });
const WebhookForm = formOf({ url: text, events: list, description: text });
const EnabledForm = formOf({ enabled: text });

/** The webhooks pages (`/account/webhooks`), over the webhooks service. */
export async function webhookPageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const pages = pageRouter(app, oauth);

  async function renderList(
    { reply, current, ctx, csrf }: PageBase,
    opts: { error?: string; notice?: string; draft?: WebhookDraft; created?: { url: string; secret: string } } = {},
    status = 200,
  ) {
    const list = await webhooks.listWebhooks(ctx, { page: 1, limit: MAX_ENDPOINTS_PER_ACCOUNT });
    const latest = await webhooks.latestDeliveries(
      ctx,
      list.data.map((w) => w.id),
    );
    return send(
      reply,
      webhooksPage({ user: current.user, csrf: csrf(), webhooks: list.data, latest, ...opts }),
      status,
    );
  }

  /** A refusal on the list page (404 for another account's endpoint); faults of ours stay 500s. */
  const refused = (page: PageBase, err: AppError) =>
    err.statusCode < 500 ? renderList(page, { error: err.message }, err.statusCode) : undefined;
  const onWebhook = { params: WebhookParams, refused };

  pages.get(WEBHOOKS_PATH, {}, (page) => {
    const flash = takeFlash(page.req, page.reply);
    return renderList(page, {
      ...(flash.notice ? { notice: flash.notice } : {}),
      ...(flash.error ? { error: flash.error } : {}),
      ...(flash.webhookSecret ? { created: flash.webhookSecret } : {}),
    });
  });

  pages.post(WEBHOOKS_PATH, { form: WebhookForm, refused }, async (page) => {
    const { form } = page;
    const draft: WebhookDraft = {
      url: form.url.slice(0, 2000),
      events: form.events.slice(0, 20),
      description: form.description.slice(0, 500),
    };
    const parsed = CreateWebhook.safeParse(draft);
    if (!parsed.success) {
      const error = draft.events.length === 0 ? 'Pick at least one event.' : formIssues(parsed.error);
      return renderList(page, { error, draft }, 422);
    }
    try {
      const created = await webhooks.createWebhook(page.ctx, parsed.data);
      // Shown once by the page the browser lands on: the flash is sealed and read once.
      return redirectWithFlash(page.req, page.reply, WEBHOOKS_PATH, {
        webhookSecret: { url: created.url, secret: created.secret },
      });
    } catch (err) {
      if (!(err instanceof AppError) || err.statusCode >= 500) throw err;
      return renderList(page, { error: err.message, draft }, err.statusCode);
    }
  });

  pages.get(`${WEBHOOKS_PATH}/:webhookId`, onWebhook, async ({ req, reply, current, ctx, csrf, params }) => {
    const flash = takeFlash(req, reply);
    const webhook = await webhooks.getWebhook(ctx, params.webhookId);
    const deliveries = await webhooks.listDeliveries(ctx, params.webhookId, { page: 1, limit: RECENT_DELIVERIES });
    return send(
      reply,
      webhookPage({
        user: current.user,
        csrf: csrf(),
        webhook,
        deliveries: deliveries.data,
        total: deliveries.pagination.total,
        notice: flash.notice,
      }),
    );
  });

  pages.post(
    `${WEBHOOKS_PATH}/:webhookId/enabled`,
    { ...onWebhook, form: EnabledForm },
    async ({ req, reply, ctx, params, form }) => {
      const id = params.webhookId;
      // Anything but true/false changes nothing, but the endpoint must still be the caller's: 404.
      if (form.enabled !== 'true' && form.enabled !== 'false') {
        await webhooks.getWebhook(ctx, id);
        return reply.redirect(webhookPath(id), 303);
      }
      const enabled = form.enabled === 'true';
      await webhooks.updateWebhook(ctx, id, { enabled });
      return redirectWithFlash(req, reply, webhookPath(id), {
        notice: enabled ? 'Webhook enabled.' : 'Webhook disabled: nothing is sent to it until you enable it again.',
      });
    },
  );

  pages.get(`${WEBHOOKS_PATH}/:webhookId/delete`, onWebhook, async ({ reply, current, ctx, csrf, params }) => {
    const id = params.webhookId;
    const webhook = await webhooks.getWebhook(ctx, id);
    return send(
      reply,
      confirmPage({
        user: current.user,
        csrf: csrf(),
        title: 'Delete this webhook?',
        body: webhookDeleteText(webhook.url),
        action: `${webhookPath(id)}/delete`,
        button: 'Delete webhook',
        cancelHref: webhookPath(id),
      }),
    );
  });

  pages.post(`${WEBHOOKS_PATH}/:webhookId/delete`, onWebhook, async ({ req, reply, ctx, params }) => {
    await webhooks.deleteWebhook(ctx, params.webhookId);
    return redirectWithFlash(req, reply, WEBHOOKS_PATH, { notice: 'Webhook deleted.' });
  });
}
