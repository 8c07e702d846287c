import { z } from 'zod';
import type { OAuthServer } from '../access/oauth/server.ts';
import { ALL_SCOPES, type Scope } from '../access/scopes.ts';
import type { App } from '../http/types.ts';
import { type AppError, NotFoundError } from '../lib/errors.ts';
import * as authService from '../modules/auth/index.ts';
import { COPY_SCRIPT } from './assets.ts';
import { send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { html } from './html.ts';
import { FormError, formOf, list, type PageBase, pageRouter, text } from './page-route.ts';
import { confirmPage, tokensPage } from './pages.ts';
import { formError } from './signin-routes.ts';

const TOKENS_PATH = '/account/tokens';
/** What an MCP client needs: discovery (`initialize`, `tools/list`) and calling the tools. */
const MCP_CLIENT_SCOPES = ['universal-mcp-read', 'universal-mcp-read-write'] as const satisfies readonly Scope[];
const TokenParams = z.object({ id: z.string() });
const TokenForm = formOf({ name: text, scopes: list, expires_days: text });

interface TokensState {
  created?: { name: string; token: string; forMcp?: boolean | undefined };
  notice?: string;
  error?: string;
  form?: { name: string; scopes: string[]; expiresDays: string };
}

/** Personal access tokens (`/account/tokens`): list, create (one for MCP clients in a click), revoke. */
export async function tokenRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const pages = pageRouter(app, oauth);
  const { config } = app.deps;

  async function renderTokens({ reply, current, ctx, csrf }: PageBase, extra: TokensState = {}, status = 200) {
    const list = await authService.listPats(ctx, { page: 1, limit: 100, sortOrder: 'desc' });
    return send(
      reply,
      tokensPage({
        user: current.user,
        csrf: csrf(),
        scopes: ALL_SCOPES,
        tokens: list.data.map((t) => ({
          id: t.id,
          name: t.name,
          prefix: t.token_prefix,
          scopes: t.scopes,
          expiresAt: t.expires_at,
          lastUsedAt: t.last_used_at,
        })),
        mcpUrl: `${config.baseUrl}/mcp`,
        copyScript: COPY_SCRIPT.path,
        ...extra,
      }),
      status,
      { scripts: true },
    );
  }

  /** A token that is not this account's (or was revoked), or a form that does not parse: said on the page. */
  const refused = (page: PageBase, err: AppError) => {
    if (err instanceof NotFoundError) {
      return renderTokens(page, { error: 'That token does not exist: it may have been revoked already.' }, 404);
    }
    return err instanceof FormError ? renderTokens(page, { error: err.message }, 400) : undefined;
  };
  // A form's sign-in comes back to the list.
  const onToken = { params: TokenParams, refused, returnTo: TOKENS_PATH };

  pages.get(TOKENS_PATH, {}, (page) => renderTokens(page, takeFlash(page.req, page.reply)));

  pages.post(TOKENS_PATH, { form: TokenForm, refused }, async (page) => {
    const { form } = page;
    const name = form.name.trim();
    const scopes = form.scopes.filter((s): s is Scope => (ALL_SCOPES as string[]).includes(s));
    const days = Number(form.expires_days);
    const kept = { name, scopes, expiresDays: form.expires_days };
    const refuse = (error: string) => renderTokens(page, { error, form: kept }, 400);
    if (!name || name.length > 100) return refuse('Give the token a name.');
    if (!scopes.length) return refuse('Choose at least one scope.');
    const expiresIn = Number.isInteger(days) && days > 0 ? Math.min(days * 86_400, config.patMaxExpiresIn) : undefined;
    try {
      const created = await authService.createPat(page.ctx, {
        name,
        scopes,
        ...(expiresIn ? { expires_in: expiresIn } : {}),
      });
      // Shown once by the page the browser lands on: the flash is sealed and read once.
      return redirectWithFlash(page.req, page.reply, TOKENS_PATH, {
        created: { name, token: created.personal_access_token },
      });
    } catch (err) {
      return refuse(formError(err));
    }
  });

  /** One click: a PAT holding the MCP scopes (90 days), shown once beside the client configurations it fills. */
  pages.post(`${TOKENS_PATH}/mcp`, { returnTo: TOKENS_PATH }, async ({ req, reply, ctx }) => {
    const name = `MCP client ${new Date().toISOString().slice(0, 10)}`;
    const created = await authService.createPat(ctx, {
      name,
      scopes: [...MCP_CLIENT_SCOPES],
      expires_in: Math.min(90 * 86_400, config.patMaxExpiresIn),
    });
    return redirectWithFlash(req, reply, `${TOKENS_PATH}#mcp`, {
      created: { name, token: created.personal_access_token, forMcp: true },
    });
  });

  pages.get(
    `${TOKENS_PATH}/:id/revoke`,
    { params: TokenParams, refused },
    async ({ reply, current, ctx, csrf, params }) => {
      const token = await authService.getPat(ctx, params.id);
      return send(
        reply,
        confirmPage({
          user: current.user,
          csrf: csrf(),
          title: `Revoke ${token.name}?`,
          body: html`<p>Token <strong>${token.name}</strong> (<code>${token.token_prefix}…</code>, scopes
          ${token.scopes.join(', ')}) stops working at once. Scripts and apps that use it get 401 until you give
          them a new token.</p>`,
          action: `${TOKENS_PATH}/${params.id}/revoke`,
          button: 'Revoke token',
          cancelHref: TOKENS_PATH,
        }),
      );
    },
  );

  pages.post(`${TOKENS_PATH}/:id/revoke`, onToken, async ({ req, reply, ctx, params }) => {
    await authService.revokePat(ctx, params.id);
    return redirectWithFlash(req, reply, TOKENS_PATH, { notice: 'Token revoked.' });
  });
}
