import { z } from 'zod';
import type { App } from '../../http/types.ts';
import { pageQuery, paginated } from '../../lib/pagination.ts';
import {
  CreatedWebhook,
  CreateWebhook,
  DeliveryStatus,
  UpdateWebhook,
  Webhook,
  WebhookDelivery,
  WebhookParams,
} from './schema.ts';
import * as service from './service.ts';

/** Outbound webhooks (extension; docs/webhooks.md). Every route needs the `account` scope. */
export async function webhookRoutes(app: App): Promise<void> {
  const tags = ['Webhooks'];
  const config = { scopes: ['account' as const] };

  app.post(
    '/webhooks',
    {
      schema: {
        tags,
        summary: 'Register a webhook endpoint',
        description:
          'Answers the endpoint with its signing `secret` (`whsec_...`), returned this once only. A URL the SSRF guard refuses (not http(s), a private or loopback address) is a 422.',
        body: CreateWebhook,
        response: { 201: CreatedWebhook },
      },
      config,
    },
    async (req, reply) => reply.code(201).send(await service.createWebhook(req.ctx, req.body)),
  );
  app.get(
    '/webhooks',
    {
      schema: {
        tags,
        summary: "List the account's webhook endpoints, newest first",
        querystring: pageQuery(),
        response: { 200: paginated(Webhook) },
      },
      config,
    },
    (req) => service.listWebhooks(req.ctx, req.query),
  );
  app.get(
    '/webhooks/:webhookId',
    { schema: { tags, summary: 'One webhook endpoint', params: WebhookParams, response: { 200: Webhook } }, config },
    (req) => service.getWebhook(req.ctx, req.params.webhookId),
  );
  app.patch(
    '/webhooks/:webhookId',
    {
      schema: {
        tags,
        summary: 'Update a webhook endpoint (the fields given)',
        params: WebhookParams,
        body: UpdateWebhook,
        response: { 200: Webhook },
      },
      config,
    },
    (req) => service.updateWebhook(req.ctx, req.params.webhookId, req.body),
  );
  app.delete(
    '/webhooks/:webhookId',
    {
      schema: {
        tags,
        summary: 'Delete a webhook endpoint and its deliveries',
        params: WebhookParams,
        response: { 204: z.undefined() },
      },
      config,
    },
    async (req, reply) => {
      await service.deleteWebhook(req.ctx, req.params.webhookId);
      return reply.code(204).send();
    },
  );
  app.get(
    '/webhooks/:webhookId/deliveries',
    {
      schema: {
        tags,
        summary: "The endpoint's deliveries, newest first",
        description:
          'Each with its status (`pending`, `succeeded`, `failed`), attempts, last response and next attempt.',
        params: WebhookParams,
        querystring: pageQuery().extend({ status: DeliveryStatus.optional() }),
        response: { 200: paginated(WebhookDelivery) },
      },
      config,
    },
    (req) => service.listDeliveries(req.ctx, req.params.webhookId, req.query),
  );
}
