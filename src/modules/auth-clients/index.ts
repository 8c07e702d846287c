/** The auth-clients area's front door: what other areas, transports and the composition root use from it. */
export { authClientRoutes } from './routes.ts';
export type { AuthorizedApp } from './service.ts';
export { findClientForConsent, listAuthorizedApps, ownsGrant, setWhitelabelAllowed } from './service.ts';
