import { z } from 'zod';
import { WEBHOOK_DELIVERY_STATUSES } from '../../db/values.ts';
import { Timestamp } from '../../lib/pagination.ts';

/** Outbound webhooks (an extension: SPEC §6 leaves them unspecified): endpoints, their events and deliveries. */

/** Every event an endpoint may pick; docs/webhooks.md gives each one's `data`. */
export const WEBHOOK_EVENTS = [
  'connection.created',
  'connection.expired',
  'connection.error',
  'connection.revoked',
  'task_run.finished',
  'knowledge_source.compiled',
  'knowledge_source.failed',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The most endpoints one account registers. */
export const MAX_ENDPOINTS_PER_ACCOUNT = 20;

const fields = {
  url: z
    .string()
    .trim()
    .min(1)
    .max(2000)
    .describe('where events are POSTed: http(s), on a public address (or a `host:port` in SSRF_ALLOW_HOSTS)')
    .meta({ examples: ['https://example.com/hooks/switchboard'] }),
  events: z
    .array(z.enum(WEBHOOK_EVENTS))
    .min(1)
    .max(WEBHOOK_EVENTS.length)
    .describe('the events sent to this endpoint')
    .meta({ examples: [['connection.revoked', 'task_run.finished']] }),
  description: z.string().max(500),
  enabled: z.boolean().describe('a disabled endpoint is sent nothing; its pending deliveries fail'),
};

export const CreateWebhook = z
  .object({
    url: fields.url,
    events: fields.events,
    description: fields.description.default(''),
    enabled: fields.enabled.default(true),
  })
  .strict();
export type CreateWebhook = z.infer<typeof CreateWebhook>;

export const UpdateWebhook = z
  .object({
    url: fields.url.optional(),
    events: fields.events.optional(),
    description: fields.description.optional(),
    enabled: fields.enabled.optional(),
  })
  .strict();
export type UpdateWebhook = z.infer<typeof UpdateWebhook>;

export const Webhook = z
  .object({
    id: z.string().meta({ examples: ['wh_Zq3v9dH2TQm0bq1yWzY8cA'] }),
    url: z.string(),
    description: z.string(),
    events: z.array(z.enum(WEBHOOK_EVENTS)),
    enabled: z.boolean(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Webhook' });
export type Webhook = z.infer<typeof Webhook>;

export const CreatedWebhook = Webhook.extend({
  secret: z
    .string()
    .describe('the signing secret (Standard Webhooks), returned once only')
    .meta({ examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] }),
}).meta({ id: 'CreatedWebhook' });
export type CreatedWebhook = z.infer<typeof CreatedWebhook>;

export const WebhookParams = z.object({
  webhookId: z
    .string()
    .min(1)
    .max(100)
    .meta({ examples: ['wh_Zq3v9dH2TQm0bq1yWzY8cA'] }),
});

export const DeliveryStatus = z.enum(WEBHOOK_DELIVERY_STATUSES);

export const WebhookDelivery = z
  .object({
    id: z
      .string()
      .describe('the `webhook-id` header of every attempt')
      .meta({ examples: ['whmsg_5kY0bq9xTnq1y8Wv3mDgZA'] }),
    webhookId: z.string().meta({ examples: ['wh_Zq3v9dH2TQm0bq1yWzY8cA'] }),
    eventType: z.string().meta({ examples: ['connection.revoked'] }),
    payload: z.unknown().describe('the body sent'),
    status: DeliveryStatus,
    attempts: z.number().int(),
    responseStatus: z.number().int().nullable().describe("the receiver's HTTP status at the last attempt"),
    lastError: z.string().nullable(),
    nextAttemptAt: Timestamp.nullable(),
    deliveredAt: Timestamp.nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;
