/** The connections area's front door: what other areas, transports and the composition root use from it. */
export { ActiveConnectionsCache } from './active-cache.ts';
export { createFromCatalog, finalizePending, getPendingFields, initiateConnection } from './connect.service.ts';
export { connectionJobs } from './jobs.ts';
export { listConnectionTools, providerAgentTools, providerToolGroup } from './provider-tools.ts';
export { connectionRoutes } from './routes.ts';
export type { Connection, PendingFields } from './schema.ts';
export {
  authorizationFields,
  deleteConnection,
  getConnection,
  listActiveConnections,
  listConnections,
  refreshConnection,
} from './service.ts';
export { searchProviderTools } from './tool-search.service.ts';
