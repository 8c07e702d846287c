/** The channels area's front door: what other areas, transports and the composition root use from it. */
export { deliverToAgentChannels } from './deliver.service.ts';
export { channelJobs } from './jobs.ts';
export { channelRoutes, webchatWidgetRoutes } from './routes.ts';
export type { Channel, Delivery } from './schema.ts';
export { CreateChannel, LinkCode } from './schema.ts';
export {
  channelAgentDeletion,
  createChannel,
  createLinkCode,
  deleteChannel,
  getChannel,
  listChannels,
  listDeliveries,
  unlinkAccount,
} from './service.ts';
