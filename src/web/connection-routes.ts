import { z } from 'zod';
import type { OAuthServer } from '../access/oauth/server.ts';
import type { ServiceContext } from '../context.ts';
import type { App } from '../http/types.ts';
import { AppError, BadGatewayError, GatewayTimeoutError, NotFoundError, ValidationError } from '../lib/errors.ts';
import {
  authorizationFields,
  createFromCatalog,
  deleteConnection,
  finalizePending,
  getConnection,
  getPendingFields,
  initiateConnection,
  listConnections,
  refreshConnection,
} from '../modules/connections/index.ts';
import {
  filterCatalog,
  getProvider,
  listProviders,
  logoPath,
  providerCredentialVariables,
} from '../modules/providers/index.ts';
import { send } from './common.ts';
import {
  type CatalogItem,
  type ConnectionItem,
  connectionsPage,
  disconnectPage,
  pendingPage,
  tokenPage,
  tokenPagePath,
} from './connection-pages.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { FormError, formOf, idParam, type PageBase, pageRouter, text } from './page-route.ts';

const PAGE_PATH = '/account/connections';
/** A connection or pending-connection id as the services issue them; anything else is not looked up. */
const CONNECTION_ID = /^conn_[A-Za-z0-9_-]{1,96}$/;
const PENDING_ID = /^pcn_[A-Za-z0-9_-]{1,96}$/;
/** The most connections the page lists. */
const MAX_LISTED = 100;

/** What the provider's `error` and `error_description` on the way back mean, in words (both are cut short). */
export function callbackMessage(error: string, description: string): string {
  const why = description.slice(0, 300);
  const code = error.slice(0, 60);
  if (code === 'access_denied') {
    return `The authorization was declined, so nothing was connected${why ? ` (${why})` : ''}.`;
  }
  return `The connection was not completed: ${why || 'the provider reported a problem'} (${code}).`;
}

const PageQuery = z.object({
  pendingId: text,
  error: text,
  error_description: text,
  q: text,
  category: text,
  connectionId: text,
});
const ConnectionParams = z.object({ connectionId: idParam(CONNECTION_ID, () => 'No such connection') });
const ProviderParams = z.object({ providerId: z.string() });
const PendingParams = z.object({ pendingId: idParam(PENDING_ID, () => 'No such pending connection') });
/** Connect's form; fields the provider needs before authorization come as `param.<name>`. */
const ConnectForm = formOf({ providerId: text });
/** The token form; the provider's fields come as `field.<name>`. */
const TokenForm = formOf({ token: text });

/** The form's fields named `<prefix><name>`, by name, trimmed. */
function prefixed(form: Record<string, string>, prefix: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [key, value] of Object.entries(form)) {
    if (key.startsWith(prefix)) fields[key.slice(prefix.length)] = value.trim();
  }
  return fields;
}

const PARAM = 'param.';
const PROVIDER_PARAMS = 'body.providerParams.';

/** The message of a refused action, for the page; faults of ours stay 500s. */
function failure(err: unknown): { message: string; status: number } {
  // Fields of the Connect form: named as the form names them, not by their place in the API's body.
  if (err instanceof ValidationError && err.details.some((d) => d.field.startsWith(PROVIDER_PARAMS))) {
    const each = err.details.map((d) => `${d.field.replace(PROVIDER_PARAMS, '')} ${d.message}`);
    return { message: `Check the fields: ${each.join('; ')}.`, status: err.statusCode };
  }
  if (err instanceof AppError) return { message: err.message, status: err.statusCode };
  throw err;
}

/**
 * The connections page (`/account/connections`): the user's connections with their status, Refresh,
 * Disconnect (after a confirmation page) and Reconnect, and the catalog with search and categories.
 * Connect runs the same service action as `POST /api/v1/connections/initiate`, coming back here through
 * the callback; a provider that needs fields after OAuth continues on `/account/connections/pending/:id`.
 */
export async function connectionPageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const { config } = app.deps;
  const pages = pageRouter(app, oauth);
  // Logos come from the service itself: the pages' CSP allows images under that path and nowhere else.
  const imgSrc = [`${config.baseUrl}/providers/logos/`];
  const logoOf = (providerId: string) => `${config.baseUrl}${logoPath(providerId)}`;
  const show = (reply: PageBase['reply'], html: string, status = 200) => send(reply, html, status, { imgSrc });
  const returnUrl = `${config.appUrl}${PAGE_PATH}`;

  async function render(
    { reply, current, ctx, csrf }: PageBase,
    opts: { q?: string; category?: string; notice?: string; error?: string; connectedId?: string } = {},
    status = 200,
  ) {
    const providers = listProviders(ctx);
    const byId = new Map(providers.map((p) => [p.id, p]));
    const list = await listConnections(ctx, { page: 1, limit: MAX_LISTED, sortBy: 'createdAt', sortOrder: 'desc' });
    const connections: ConnectionItem[] = list.data.map((connection) => ({
      connection,
      logo: logoOf(connection.providerId),
      connectable:
        byId.get(connection.providerId)?.authTypes.includes(connection.authType === 'api_key' ? 'api_key' : 'oauth') ??
        false,
      fields: byId.has(connection.providerId) ? authorizationFields(ctx, connection.providerId) : [],
    }));
    const q = (opts.q ?? '').trim().slice(0, 100);
    const category = providers.some((p) => p.category === opts.category) ? (opts.category ?? '') : '';
    // What can be connected now comes first; the catalog's order (popular, then by name) within each part.
    const matching = filterCatalog(providers, q, category).sort((a, b) => Number(b.configured) - Number(a.configured));
    const catalog: CatalogItem[] = matching.map((provider) => ({
      provider,
      logo: logoOf(provider.id),
      oauth: provider.authTypes.includes('oauth'),
      missing:
        provider.authType === 'oauth' && !provider.authTypes.includes('oauth')
          ? providerCredentialVariables(provider.id)
          : undefined,
      fields: authorizationFields(ctx, provider.id),
    }));
    let notice = opts.notice;
    const connected = opts.connectedId ? list.data.find((c) => c.id === opts.connectedId) : undefined;
    if (connected) notice = `Connected ${connected.metadata.providerName} as ${connected.metadata.displayName}.`;
    if (list.pagination.hasMore) {
      notice = `${notice ? `${notice} ` : ''}Showing the newest ${MAX_LISTED} of ${list.pagination.total} connections.`;
    }
    return show(
      reply,
      connectionsPage({
        user: current.user,
        csrf: csrf(),
        connections,
        catalog,
        catalogTotal: providers.length,
        categories: [...new Set(providers.map((p) => p.category))].sort(),
        q,
        category,
        notice,
        error: opts.error,
      }),
      status,
    );
  }

  /** The page after an action on one connection that does not exist for this account: 404, never 403. */
  const notFound = (page: PageBase) =>
    render(page, { error: 'That connection does not exist: it may have been disconnected already.' }, 404);

  /** A refused action's message on the page, with its status. */
  const connectRefused = (page: PageBase, err: AppError) => {
    const { message, status } = failure(err);
    return render(page, { error: message }, status);
  };
  /** Another account's connection, or one already gone, is the not-found page; other refusals show on the page. */
  const refused = (page: PageBase, err: AppError) => {
    if (err instanceof NotFoundError) return notFound(page);
    return connectRefused(page, err);
  };
  // An action's sign-in comes back to the list; a page's to itself.
  const onConnection = { params: ConnectionParams, refused };
  const onConnectionAction = { ...onConnection, returnTo: PAGE_PATH };

  pages.get(PAGE_PATH, { query: PageQuery }, (page) => {
    const { query } = page;
    // Back from the provider with fields still to give: the form for them.
    if (PENDING_ID.test(query.pendingId)) return page.reply.redirect(`${PAGE_PATH}/pending/${query.pendingId}`, 303);
    const flash = takeFlash(page.req, page.reply);
    return render(page, {
      q: query.q,
      category: query.category,
      connectedId: query.connectionId,
      notice: flash.notice,
      error: query.error ? callbackMessage(query.error, query.error_description) : flash.error,
    });
  });

  /** Connect and Reconnect: a new authorization for the provider, coming back to this page. */
  pages.post(
    `${PAGE_PATH}/connect`,
    { returnTo: PAGE_PATH, form: ConnectForm, refused: connectRefused },
    async (page) => {
      const providerParams = prefixed(page.form, PARAM);
      const { authorizationUrl } = await initiateConnection(page.ctx, {
        providerId: page.form.providerId,
        redirectUrl: returnUrl,
        ...(Object.keys(providerParams).length ? { providerParams } : {}),
      });
      // The provider's own authorization URL, from the catalog: never a URL the form chose.
      return page.reply.redirect(authorizationUrl, 303);
    },
  );

  pages.post(`${PAGE_PATH}/:connectionId/refresh`, onConnectionAction, async ({ req, reply, ctx, params }) => {
    const c = await refreshConnection(ctx, params.connectionId);
    const name = `${c.metadata.providerName} (${c.metadata.displayName})`;
    if (c.status === 'active') {
      const until = c.expiresAt
        ? `; the new token is valid until ${c.expiresAt.slice(0, 16).replace('T', ' ')} UTC`
        : '';
      return redirectWithFlash(req, reply, PAGE_PATH, { notice: `Refreshed ${name}: active${until}.` });
    }
    return redirectWithFlash(req, reply, PAGE_PATH, {
      error: `Refreshing ${name} failed: the connection is ${c.status}${c.lastError ? ` (${c.lastError})` : ''}.`,
    });
  });

  pages.get(`${PAGE_PATH}/:connectionId/disconnect`, onConnection, async ({ reply, current, ctx, csrf, params }) => {
    const connection = await getConnection(ctx, params.connectionId);
    return show(
      reply,
      disconnectPage({
        user: current.user,
        csrf: csrf(),
        item: { connection, logo: logoOf(connection.providerId), connectable: true, fields: [] },
      }),
    );
  });

  pages.post(`${PAGE_PATH}/:connectionId/disconnect`, onConnectionAction, async ({ req, reply, ctx, params }) => {
    const c = await getConnection(ctx, params.connectionId);
    await deleteConnection(ctx, params.connectionId);
    return redirectWithFlash(req, reply, PAGE_PATH, {
      notice: `Disconnected ${c.metadata.providerName} (${c.metadata.displayName}).`,
    });
  });

  // ---- a token the user holds (api_key) ----

  const PROVIDER_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

  /** The provider of a token page, when it takes a token; the not-found page otherwise. */
  function tokenProvider(ctx: ServiceContext, providerId: string) {
    if (!PROVIDER_ID.test(providerId)) return undefined;
    try {
      const provider = getProvider(ctx, providerId);
      return provider.apiKey ? provider : undefined;
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
  }

  const noTokenProvider = (page: PageBase) =>
    render(page, { error: 'That service does not connect with a token.' }, 404);

  pages.get(`${PAGE_PATH}/token/:providerId`, { params: ProviderParams }, (page) => {
    const provider = tokenProvider(page.ctx, page.params.providerId);
    if (!provider) return noTokenProvider(page);
    return show(
      page.reply,
      tokenPage({ user: page.current.user, csrf: page.csrf(), provider, logo: logoOf(provider.id) }),
    );
  });

  /**
   * The same action as `POST /api/v1/connections/from-catalog`: a connection lands on the connections page
   * ("Connected X as Y"); a refused token or field shows the form again with the provider's answer (422), a
   * provider that cannot be reached says so (502, 504).
   */
  pages.post(
    `${PAGE_PATH}/token/:providerId`,
    {
      params: ProviderParams,
      form: TokenForm,
      returnTo: (param) => (PROVIDER_ID.test(param('providerId')) ? tokenPagePath(param('providerId')) : PAGE_PATH),
      refused: (page, err) => (err instanceof FormError ? render(page, { error: err.message }, 400) : undefined),
    },
    async (page) => {
      const { ctx, current, reply } = page;
      const provider = tokenProvider(ctx, page.params.providerId);
      if (!provider) return noTokenProvider(page);
      const fields = prefixed(page.form, 'field.');
      const again = (problems: Record<string, string>, status: number) =>
        show(
          reply,
          tokenPage({
            user: current.user,
            csrf: page.csrf(),
            provider,
            logo: logoOf(provider.id),
            values: fields,
            problems,
          }),
          status,
        );
      const token = page.form.token.trim();
      if (!token) return again({ token: `Paste your ${provider.apiKey?.label ?? 'token'}.` }, 422);
      try {
        const c = await createFromCatalog(ctx, { catalogEntryId: provider.id, bearerToken: token, fields });
        return reply.redirect(`${PAGE_PATH}?connectionId=${encodeURIComponent(c.id)}`, 303);
      } catch (err) {
        if (err instanceof ValidationError) {
          const problems: Record<string, string> = {};
          for (const d of err.details) {
            const name = d.field === 'body.bearerToken' ? 'token' : d.field.replace(/^body\.fields\./, '');
            const label = provider.apiKey?.fields.find((f) => f.name === name)?.label;
            if (name === 'token') problems.token = `The token ${d.message}.`;
            else if (label) problems[name] = `${label} ${d.message}.`;
            else problems[''] = `${problems[''] ? `${problems['']} ` : ''}${name}: ${d.message}.`;
          }
          return again(problems, err.statusCode);
        }
        if (err instanceof BadGatewayError || err instanceof GatewayTimeoutError) {
          return again({ '': `${err.message}. Nothing was connected; try again in a moment.` }, err.statusCode);
        }
        if (err instanceof AppError) return again({ '': err.message }, err.statusCode);
        throw err;
      }
    },
  );

  // ---- fields a provider needs after OAuth (the pending connection) ----

  /** A pending connection that is not there (expired, finished, another account's): the list says so. */
  const pendingRefused = (page: PageBase, err: AppError) => {
    if (err instanceof NotFoundError) {
      const error = 'This connection step expired or was already finished. Connect the service again.';
      return render(page, { error }, 404);
    }
    return err instanceof FormError ? render(page, { error: err.message }, 400) : undefined;
  };

  pages.get(
    `${PAGE_PATH}/pending/:pendingId`,
    { params: PendingParams, refused: pendingRefused },
    async ({ reply, current, ctx, csrf, params }) => {
      const pending = await getPendingFields(ctx, params.pendingId);
      return show(reply, pendingPage({ user: current.user, csrf: csrf(), pending, logo: logoOf(pending.providerId) }));
    },
  );

  pages.post(
    `${PAGE_PATH}/pending/:pendingId`,
    {
      params: PendingParams,
      form: formOf({}),
      returnTo: (param) => `${PAGE_PATH}/pending/${PENDING_ID.test(param('pendingId')) ? param('pendingId') : ''}`,
      refused: pendingRefused,
    },
    async ({ reply, current, ctx, csrf, params, form }) => {
      const fields = prefixed(form, 'field.');
      try {
        const done = await finalizePending(ctx, params.pendingId, { fields });
        // Where the authorization was started for: this page (or the app that started it), with connectionId.
        return reply.redirect(done.redirectUrl, 303);
      } catch (err) {
        if (!(err instanceof ValidationError)) throw err;
        const pending = await getPendingFields(ctx, params.pendingId);
        const problems: Record<string, string> = {};
        for (const d of err.details) {
          const name = d.field.replace(/^body\.fields\./, '');
          if (pending.fields.some((f) => f.name === name)) problems[name] = d.message;
          else problems[''] = `${problems[''] ? `${problems['']} ` : ''}${name}: ${d.message}.`;
        }
        return show(
          reply,
          pendingPage({
            user: current.user,
            csrf: csrf(),
            pending,
            logo: logoOf(pending.providerId),
            values: fields,
            problems,
          }),
          400,
        );
      }
    },
  );
}
