/** The webhooks area's front door: what other areas, transports and the composition root use from it. */
export { webhookJobs } from './jobs.ts';
export { webhookRoutes } from './routes.ts';
export type { Webhook, WebhookDelivery } from './schema.ts';
export { CreateWebhook, MAX_ENDPOINTS_PER_ACCOUNT, WEBHOOK_EVENTS } from './schema.ts';
export {
  createWebhook,
  deleteWebhook,
  emitEvent,
  getWebhook,
  latestDeliveries,
  listDeliveries,
  listWebhooks,
  updateWebhook,
} from './service.ts';
