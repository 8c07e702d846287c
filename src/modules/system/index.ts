/** The system area's front door: what other areas, transports and the composition root use from it. */
export { scopeRoutes, systemRoutes } from './routes.ts';
export type { SetupNotice } from './setup.ts';
export { setupNotices } from './setup.ts';
