/** The activity area's front door: what other areas, transports and the composition root use from it. */
export { activityJobs } from './jobs.ts';
export { activityRoutes } from './routes.ts';
export type { Activity } from './schema.ts';
export type { ActivitySource, ConnectionEvent } from './service.ts';
export { createActivityWriter, listActivity, recordActivity, recordConnectionEvent } from './service.ts';
