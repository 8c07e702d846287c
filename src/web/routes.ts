import type { OAuthServer } from '../access/oauth/server.ts';
import type { App } from '../http/types.ts';
import { activityPageRoutes } from './activity-routes.ts';
import { agentPageRoutes } from './agent-routes.ts';
import { appsRoutes } from './apps-routes.ts';
import { assetRoutes } from './assets.ts';
import { channelPageRoutes } from './channel-routes.ts';
import { connectionPageRoutes } from './connection-routes.ts';
import { consentRoutes } from './consent-routes.ts';
import { homePageRoutes } from './home-routes.ts';
import { knowledgePageRoutes } from './knowledge-routes.ts';
import { signInRoutes } from './signin-routes.ts';
import { taskPageRoutes } from './task-routes.ts';
import { tokenRoutes } from './token-routes.ts';
import { toolPageRoutes } from './tool-routes.ts';
import { webhookPageRoutes } from './webhook-routes.ts';

/**
 * Server-rendered pages: sign-in and sign-up (also inside an OAuth authorization), the consent screen, the
 * authorized-apps page, personal access tokens, then each area's pages. Every route goes through
 * page-route.ts (session, CSRF, parsed params and forms); forms carry a CSRF token and work without JavaScript.
 */
export async function webRoutes(app: App, oauth: OAuthServer): Promise<void> {
  await signInRoutes(app, oauth);
  await consentRoutes(app, oauth);
  await appsRoutes(app, oauth);
  await tokenRoutes(app, oauth);
  await assetRoutes(app);
  await connectionPageRoutes(app, oauth);
  await knowledgePageRoutes(app, oauth);
  await agentPageRoutes(app, oauth);
  await channelPageRoutes(app, oauth);
  await taskPageRoutes(app, oauth);
  await homePageRoutes(app, oauth);
  await activityPageRoutes(app, oauth);
  await toolPageRoutes(app, oauth);
  await webhookPageRoutes(app, oauth);
}
