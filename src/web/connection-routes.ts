import type { FastifyReply, FastifyRequest } from 'fastify';
import { serviceContextOf } from '../auth/guard.ts';
import type { OAuthServer } from '../auth/oauth/server.ts';
import type { App } from '../http/types.ts';
import type { ServiceContext } from '../lib/context.ts';
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
} from '../modules/connections/service.ts';
import { providerCredentialVariables } from '../modules/providers/catalog.ts';
import { filterCatalog, getProvider, listProviders, logoPath } from '../modules/providers/service.ts';
import { type Form, one, pageHelpers, type SignedIn, send } from './common.ts';
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
  const { csrf, csrfOk, signedIn, csrfFailed } = pageHelpers(app, oauth);
  const page = { schema: { hide: true }, config: { auth: 'public' as const } };
  // Logos come from the service itself: the pages' CSP allows images under that path and nowhere else.
  const imgSrc = [`${config.baseUrl}/providers/logos/`];
  const logoOf = (providerId: string) => `${config.baseUrl}${logoPath(providerId)}`;
  const show = (reply: FastifyReply, html: string, status = 200) => send(reply, html, status, { imgSrc });
  const returnUrl = `${config.appUrl}${PAGE_PATH}`;

  async function render(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    opts: { q?: string; category?: string; notice?: string; error?: string; connectedId?: string } = {},
    status = 200,
  ) {
    const ctx = serviceContextOf(req, current.actor);
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
        csrf: csrf(req, reply),
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
  function notFound(req: FastifyRequest, reply: FastifyReply, current: SignedIn) {
    return render(
      req,
      reply,
      current,
      { error: 'That connection does not exist: it may have been disconnected already.' },
      404,
    );
  }

  app.get(PAGE_PATH, page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const query = req.query as Form;
    // Back from the provider with fields still to give: the form for them.
    const pendingId = one(query, 'pendingId');
    if (PENDING_ID.test(pendingId)) return reply.redirect(`${PAGE_PATH}/pending/${pendingId}`, 303);
    const error = one(query, 'error');
    const flash = takeFlash(req, reply);
    return render(req, reply, current, {
      q: one(query, 'q'),
      category: one(query, 'category'),
      connectedId: one(query, 'connectionId'),
      notice: flash.notice,
      error: error ? callbackMessage(error, one(query, 'error_description')) : flash.error,
    });
  });

  /** Connect and Reconnect: a new authorization for the provider, coming back to this page. */
  app.post(`${PAGE_PATH}/connect`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await signedIn(req, reply, PAGE_PATH);
    if (!current) return reply;
    // Fields the provider needs before authorization come as `param.<name>`.
    const providerParams: Record<string, string> = {};
    for (const key of Object.keys(form)) {
      if (key.startsWith(PARAM)) providerParams[key.slice(PARAM.length)] = one(form, key).trim();
    }
    try {
      const { authorizationUrl } = await initiateConnection(serviceContextOf(req, current.actor), {
        providerId: one(form, 'providerId'),
        redirectUrl: returnUrl,
        ...(Object.keys(providerParams).length ? { providerParams } : {}),
      });
      // The provider's own authorization URL, from the catalog: never a URL the form chose.
      return reply.redirect(authorizationUrl, 303);
    } catch (err) {
      const { message, status } = failure(err);
      return render(req, reply, current, { error: message }, status);
    }
  });

  /**
   * A route on one connection: a signed-in user (an action proves its CSRF token first), a well-formed id, and
   * then `act`. Another account's connection, or one already gone, is the not-found page; any other refusal is
   * shown on the page with its status.
   */
  function onConnection(
    kind: 'view' | 'action',
    act: (
      ctx: ServiceContext,
      connectionId: string,
      current: SignedIn,
      req: FastifyRequest,
      reply: FastifyReply,
    ) => unknown,
  ) {
    return async (req: FastifyRequest, reply: FastifyReply) => {
      if (kind === 'action' && !csrfOk(req, (req.body ?? {}) as Form)) return csrfFailed(reply);
      const current = await signedIn(req, reply, kind === 'action' ? PAGE_PATH : undefined);
      if (!current) return reply;
      const { connectionId } = req.params as { connectionId: string };
      if (!CONNECTION_ID.test(connectionId)) return notFound(req, reply, current);
      try {
        return await act(serviceContextOf(req, current.actor), connectionId, current, req, reply);
      } catch (err) {
        if (err instanceof NotFoundError) return notFound(req, reply, current);
        const { message, status } = failure(err);
        return render(req, reply, current, { error: message }, status);
      }
    };
  }

  app.post(
    `${PAGE_PATH}/:connectionId/refresh`,
    page,
    onConnection('action', async (ctx, connectionId, _current, req, reply) => {
      const c = await refreshConnection(ctx, connectionId);
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
    }),
  );

  app.get(
    `${PAGE_PATH}/:connectionId/disconnect`,
    page,
    onConnection('view', async (ctx, connectionId, current, req, reply) => {
      const connection = await getConnection(ctx, connectionId);
      return show(
        reply,
        disconnectPage({
          user: current.user,
          csrf: csrf(req, reply),
          item: { connection, logo: logoOf(connection.providerId), connectable: true, fields: [] },
        }),
      );
    }),
  );

  app.post(
    `${PAGE_PATH}/:connectionId/disconnect`,
    page,
    onConnection('action', async (ctx, connectionId, _current, req, reply) => {
      const c = await getConnection(ctx, connectionId);
      await deleteConnection(ctx, connectionId);
      return redirectWithFlash(req, reply, PAGE_PATH, {
        notice: `Disconnected ${c.metadata.providerName} (${c.metadata.displayName}).`,
      });
    }),
  );

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

  const noTokenProvider = (req: FastifyRequest, reply: FastifyReply, current: SignedIn) =>
    render(req, reply, current, { error: 'That service does not connect with a token.' }, 404);

  app.get(`${PAGE_PATH}/token/:providerId`, page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const provider = tokenProvider(
      serviceContextOf(req, current.actor),
      (req.params as { providerId: string }).providerId,
    );
    if (!provider) return noTokenProvider(req, reply, current);
    return show(reply, tokenPage({ user: current.user, csrf: csrf(req, reply), provider, logo: logoOf(provider.id) }));
  });

  /**
   * The same action as `POST /api/v1/connections/from-catalog`: a connection lands on the connections page
   * ("Connected X as Y"); a refused token or field shows the form again with the provider's answer (422), a
   * provider that cannot be reached says so (502, 504).
   */
  app.post(`${PAGE_PATH}/token/:providerId`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const { providerId } = req.params as { providerId: string };
    const current = await signedIn(req, reply, PROVIDER_ID.test(providerId) ? tokenPagePath(providerId) : PAGE_PATH);
    if (!current) return reply;
    const ctx = serviceContextOf(req, current.actor);
    const provider = tokenProvider(ctx, providerId);
    if (!provider) return noTokenProvider(req, reply, current);
    const fields: Record<string, string> = {};
    for (const key of Object.keys(form)) {
      if (key.startsWith('field.')) fields[key.slice('field.'.length)] = one(form, key).trim();
    }
    const again = (problems: Record<string, string>, status: number) =>
      show(
        reply,
        tokenPage({
          user: current.user,
          csrf: csrf(req, reply),
          provider,
          logo: logoOf(provider.id),
          values: fields,
          problems,
        }),
        status,
      );
    const token = one(form, 'token').trim();
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
  });

  // ---- fields a provider needs after OAuth (the pending connection) ----

  function pendingGone(req: FastifyRequest, reply: FastifyReply, current: SignedIn) {
    return render(
      req,
      reply,
      current,
      { error: 'This connection step expired or was already finished. Connect the service again.' },
      404,
    );
  }

  app.get(`${PAGE_PATH}/pending/:pendingId`, page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const { pendingId } = req.params as { pendingId: string };
    if (!PENDING_ID.test(pendingId)) return pendingGone(req, reply, current);
    try {
      const pending = await getPendingFields(serviceContextOf(req, current.actor), pendingId);
      return show(
        reply,
        pendingPage({ user: current.user, csrf: csrf(req, reply), pending, logo: logoOf(pending.providerId) }),
      );
    } catch (err) {
      if (err instanceof NotFoundError) return pendingGone(req, reply, current);
      throw err;
    }
  });

  app.post(`${PAGE_PATH}/pending/:pendingId`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const { pendingId } = req.params as { pendingId: string };
    const current = await signedIn(req, reply, `${PAGE_PATH}/pending/${PENDING_ID.test(pendingId) ? pendingId : ''}`);
    if (!current) return reply;
    if (!PENDING_ID.test(pendingId)) return pendingGone(req, reply, current);
    const ctx = serviceContextOf(req, current.actor);
    const fields: Record<string, string> = {};
    for (const key of Object.keys(form)) {
      if (key.startsWith('field.')) fields[key.slice('field.'.length)] = one(form, key).trim();
    }
    try {
      const done = await finalizePending(ctx, pendingId, { fields });
      // Where the authorization was started for: this page (or the app that started it), with connectionId.
      return reply.redirect(done.redirectUrl, 303);
    } catch (err) {
      if (err instanceof NotFoundError) return pendingGone(req, reply, current);
      if (!(err instanceof ValidationError)) throw err;
      const pending = await getPendingFields(ctx, pendingId);
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
          csrf: csrf(req, reply),
          pending,
          logo: logoOf(pending.providerId),
          values: fields,
          problems,
        }),
        400,
      );
    }
  });
}
