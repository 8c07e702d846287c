import { z } from 'zod';
import type { OAuthServer } from '../access/oauth/server.ts';
import type { App } from '../http/types.ts';
import type { AppError } from '../lib/errors.ts';
import * as authClientsService from '../modules/auth-clients/index.ts';
import { send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { html } from './html.ts';
import { type PageBase, pageRouter } from './page-route.ts';
import { appsPage, confirmPage, errorPage, scopeText } from './pages.ts';

const APPS_PATH = '/account/apps';
const GrantParams = z.object({ grantId: z.string() });

/** The apps this account authorized over OAuth (`/account/apps`), each revocable. */
export async function appsRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const pages = pageRouter(app, oauth);
  /** An authorization that is not this account's (or is gone). */
  const appGone = ({ reply }: PageBase) =>
    send(reply, errorPage('Not found', 'That app authorization does not exist.'), 404);
  const refused = (page: PageBase, err: AppError) => (err.statusCode === 404 ? appGone(page) : undefined);

  pages.get(APPS_PATH, {}, async ({ req, reply, current, ctx, csrf }) => {
    const apps = await authClientsService.listAuthorizedApps(ctx);
    return send(reply, appsPage({ user: current.user, csrf: csrf(), apps, ...takeFlash(req, reply) }));
  });

  pages.get(`${APPS_PATH}/:grantId/revoke`, { params: GrantParams, refused }, async (page) => {
    const { grantId } = page.params;
    const apps = await authClientsService.listAuthorizedApps(page.ctx);
    const found = apps.find((a) => a.grantId === grantId);
    if (!found) return appGone(page);
    return send(
      page.reply,
      confirmPage({
        user: page.current.user,
        csrf: page.csrf(),
        title: `Revoke ${found.name}?`,
        body: html`<p><strong>${found.name}</strong> can now:</p>
          <ul class="scopes">${found.scopes.map((s) => html`<li>${scopeText(s)}</li>`)}</ul>
          <p>Revoking ends its tokens at once: it can no longer act on your account until you authorize it again.</p>`,
        action: `${APPS_PATH}/${grantId}/revoke`,
        button: 'Revoke access',
        cancelHref: APPS_PATH,
      }),
    );
  });

  pages.post(`${APPS_PATH}/:grantId/revoke`, { params: GrantParams, refused, returnTo: APPS_PATH }, async (page) => {
    const { grantId } = page.params;
    if (!(await authClientsService.ownsGrant(page.ctx, grantId))) return appGone(page);
    await oauth.revokeGrant(grantId);
    return redirectWithFlash(page.req, page.reply, APPS_PATH, {
      notice: 'Access revoked: the app can no longer use your account.',
    });
  });
}
