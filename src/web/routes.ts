import type { FastifyReply, FastifyRequest } from 'fastify';
import { publicContextOf, serviceContextOf } from '../auth/guard.ts';
import { KNOWLEDGE_BASES_PARAM, parseKnowledgeBaseIds } from '../auth/oauth/policy.ts';
import type { OAuthServer } from '../auth/oauth/server.ts';
import { ALL_SCOPES, type Scope } from '../auth/scopes.ts';
import { ipKey } from '../http/rate-limit.ts';
import type { App } from '../http/types.ts';
import { AppError, NotFoundError } from '../lib/errors.ts';
import type { Pat } from '../modules/auth/schema.ts';
import * as authService from '../modules/auth/service.ts';
import * as authClientsService from '../modules/auth-clients/service.ts';
import { KNOWLEDGE_SCOPES, knowledgeBaseChoices, unknownKnowledgeBases } from '../modules/knowledge/bases.service.ts';
import { activityPageRoutes } from './activity-routes.ts';
import { agentPageRoutes } from './agent-routes.ts';
import { assetRoutes, COPY_SCRIPT } from './assets.ts';
import { channelPageRoutes } from './channel-routes.ts';
import { type Form, many, one, pageHelpers, returnTarget, type SignedIn, send } from './common.ts';
import { connectionPageRoutes } from './connection-routes.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { homePageRoutes } from './home-routes.ts';
import { html } from './html.ts';
import { knowledgePageRoutes } from './knowledge-routes.ts';
import {
  appsPage,
  confirmPage,
  consentPage,
  errorPage,
  type KnowledgeOffer,
  scopeText,
  signInPage,
  signUpPage,
  tokensPage,
} from './pages.ts';
import { clearSessionCookie, setSessionCookie } from './session.ts';
import { taskPageRoutes } from './task-routes.ts';
import { toolPageRoutes } from './tool-routes.ts';
import { webhookPageRoutes } from './webhook-routes.ts';

const UID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Server-rendered pages: sign-in and sign-up (also inside an OAuth authorization), the consent screen, the
 * authorized-apps page, personal access tokens and (connection-routes.ts) connections. Forms carry a CSRF
 * token; they work without JavaScript.
 */
export async function webRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const { config } = app.deps;
  const deps = app.deps;
  const page = { schema: { hide: true }, config: { auth: 'public' as const } };
  const limited = {
    schema: { hide: true },
    config: {
      auth: 'public' as const,
      rateLimit: { max: config.rateLimits.auth, timeWindow: config.rateLimits.windowMs, keyGenerator: ipKey },
    },
  };

  const { csrf: csrfOf, csrfOk, currentUser, signedIn, csrfFailed } = pageHelpers(app, oauth);

  function interactionGone(reply: FastifyReply) {
    return send(
      reply,
      errorPage(
        'Sign-in request expired',
        'This sign-in request has expired or was already used. Go back to the app and start again.',
      ),
      400,
    );
  }

  async function details(req: FastifyRequest, reply: FastifyReply) {
    try {
      const d = await (await oauth.provider()).interactionDetails(req.raw, reply.raw);
      const { uid } = req.params as { uid: string };
      return d.uid === uid ? d : undefined;
    } catch {
      return undefined;
    }
  }

  /** Sign-in (and sign-up) errors shown on the form: wrong password, taken e-mail, bad fields. */
  function formError(err: unknown): string {
    if (err instanceof AppError && err.statusCode < 500) {
      if (err.statusCode === 401) return 'Wrong e-mail or password.';
      if (err.statusCode === 409) return 'An account with this e-mail already exists. Sign in instead.';
      if (err.statusCode === 429) return 'Too many attempts. Wait a minute and try again.';
      return err.message;
    }
    throw err;
  }

  /** A refused sign-in form: 429 when the shared sign-in budget is spent (with its Retry-After), else 401. */
  function signInRefusalStatus(err: unknown): number {
    return err instanceof AppError && err.statusCode === 429 ? 429 : 401;
  }

  // ---- Stand-alone sign-in, sign-up, sign-out -------------------------------------------------------------

  app.get('/signin', page, async (req, reply) => {
    const returnTo = returnTarget((req.query as Form).return_to, config.appUrl);
    if (await currentUser(req)) return reply.redirect(returnTo, 303);
    return send(
      reply,
      signInPage({
        action: '/signin',
        csrf: csrfOf(req, reply),
        returnTo,
        signupHref: config.signupEnabled ? `/signup?return_to=${encodeURIComponent(returnTo)}` : undefined,
      }),
    );
  });

  app.post('/signin', limited, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    const returnTo = returnTarget(one(form, 'return_to'), config.appUrl);
    if (!csrfOk(req, form)) return csrfFailed(reply);
    try {
      const session = await authService.authenticate(req.publicCtx, {
        email: one(form, 'email'),
        password: one(form, 'password'),
      });
      setSessionCookie(reply, deps, session.session_token, session.expires_in);
      return reply.redirect(returnTo, 303);
    } catch (err) {
      return send(
        reply,
        signInPage({
          action: '/signin',
          csrf: csrfOf(req, reply),
          returnTo,
          email: one(form, 'email'),
          error: formError(err),
          signupHref: config.signupEnabled ? '/signup' : undefined,
        }),
        signInRefusalStatus(err),
      );
    }
  });

  app.get('/signup', page, async (req, reply) => {
    const returnTo = returnTarget((req.query as Form).return_to, config.appUrl);
    return send(reply, signUpPage({ action: '/signup', signinHref: '/signin', csrf: csrfOf(req, reply), returnTo }));
  });

  app.post('/signup', limited, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    const returnTo = returnTarget(one(form, 'return_to'), config.appUrl);
    if (!csrfOk(req, form)) return csrfFailed(reply);
    try {
      const session = await signupFromForm(req, form);
      setSessionCookie(reply, deps, session.session_token, session.expires_in);
      return reply.redirect(returnTo, 303);
    } catch (err) {
      return send(
        reply,
        signUpPage({
          action: '/signup',
          signinHref: '/signin',
          csrf: csrfOf(req, reply),
          returnTo,
          email: one(form, 'email'),
          name: one(form, 'name'),
          error: formError(err),
        }),
        400,
      );
    }
  });

  async function signupFromForm(req: FastifyRequest, form: Form) {
    const email = one(form, 'email').trim();
    const name = one(form, 'name').trim();
    const password = one(form, 'password');
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254)
      throw new FormError('Enter a valid e-mail address.');
    if (!name || name.length > 100) throw new FormError('Enter your name (up to 100 characters).');
    if (password.length < 8 || password.length > 256)
      throw new FormError('The password must be at least 8 characters.');
    return authService.signup(req.publicCtx, { email, name, password });
  }

  app.post('/signout', page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await currentUser(req);
    if (current) await authService.logout(serviceContextOf(req, current.actor));
    clearSessionCookie(reply, deps);
    const returnTo = returnTarget(one(form, 'return_to'), config.appUrl, '/signin');
    return reply.redirect(returnTo, 303);
  });

  type Details = NonNullable<Awaited<ReturnType<typeof details>>>;

  /** The scopes a consent is about: those asked for now, and those this app already holds of the request. */
  async function consentScopes(d: Details) {
    const prompt = d.prompt.details as {
      missingOIDCScope?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    const asked = new Set<string>([
      ...(prompt.missingOIDCScope ?? []),
      ...Object.values(prompt.missingResourceScopes ?? {}).flat(),
    ]);
    const requested = String(d.params.scope ?? '').split(' ');
    let granted = new Set<string>();
    if (d.grantId) {
      const grant = await (await oauth.provider()).Grant.find(d.grantId);
      if (grant) {
        granted = new Set([
          ...String(grant.getOIDCScope() ?? '').split(' '),
          ...Object.keys(grant.resources ?? {}).flatMap((r) => String(grant.getResourceScope(r) ?? '').split(' ')),
        ]);
      }
    }
    const order = (scopes: Iterable<string>) => ALL_SCOPES.filter((s) => [...scopes].includes(s));
    return { asked: order(asked), alreadyGranted: order(requested.filter((s) => granted.has(s) && !asked.has(s))) };
  }

  /**
   * What the consent screen offers about knowledge bases, when the scopes reach them or the app asked for some
   * (`knowledge_base_ids`): the bases to choose from and what is selected. An app asking for bases that are
   * not the account's gets `error`: the authorization fails with invalid_request.
   */
  async function knowledgeOffer(
    req: FastifyRequest,
    d: Details,
    actor: SignedIn['actor'],
    scopes: readonly string[],
  ): Promise<KnowledgeOffer | { error: string } | undefined> {
    const param = parseKnowledgeBaseIds(d.params[KNOWLEDGE_BASES_PARAM]);
    if (param && 'error' in param) return { error: param.error };
    if (!param && !scopes.some((s) => (KNOWLEDGE_SCOPES as readonly string[]).includes(s))) return undefined;
    const ctx = serviceContextOf(req, actor);
    if (param) {
      const unknown = await unknownKnowledgeBases(ctx, param.ids);
      if (unknown.length)
        return { error: `knowledge_base_ids: not knowledge bases of this account: ${unknown.join(', ')}` };
    }
    const all = await knowledgeBaseChoices(ctx);
    const held = d.grantId ? await oauth.grantKnowledgeBases(d.grantId) : null;
    if (param) {
      return { bases: all.filter((b) => param.ids.includes(b.id)), fixed: true, all: false, selected: param.ids };
    }
    return { bases: all, fixed: false, all: !held, selected: held ?? [] };
  }

  /** The bases the person chose on the consent form (null: all), or what is wrong with the choice. */
  function chosenKnowledgeBases(form: Form, offer: KnowledgeOffer): { ids: string[] | null } | { error: string } {
    // A form without the field (no browser) takes what the screen had selected.
    if (form.knowledge_bases === undefined) return { ids: offer.all ? null : offer.selected };
    const mode = one(form, 'knowledge_bases');
    if (mode === 'all' && !offer.fixed) return { ids: null };
    if (mode !== 'some') return { error: 'Choose all knowledge bases or some of them.' };
    const ids = [...new Set(many(form, 'knowledge_base_id'))];
    if (ids.length === 0) return { error: 'Tick at least one knowledge base, or choose all of them.' };
    const offered = new Set(offer.bases.map((b) => b.id));
    if (!ids.every((id) => offered.has(id))) return { error: 'Choose among the knowledge bases listed.' };
    return { ids };
  }

  /** Ends the authorization with an OAuth error sent back to the app. */
  async function failAuthorization(req: FastifyRequest, reply: FastifyReply, error: string, description: string) {
    const returnTo = await (await oauth.provider()).interactionResult(
      req.raw,
      reply.raw,
      { error, error_description: description },
      { mergeWithLastSubmission: false },
    );
    return reply.redirect(returnTo, 303);
  }

  type ConsentClient = NonNullable<Awaited<ReturnType<typeof authClientsService.findClientForConsent>>>;

  async function renderConsent(
    req: FastifyRequest,
    reply: FastifyReply,
    d: Details,
    current: SignedIn,
    client: ConsentClient,
    refused?: { error: string; knowledge: KnowledgeOffer },
  ) {
    const { asked, alreadyGranted } = await consentScopes(d);
    const knowledge =
      refused?.knowledge ?? (await knowledgeOffer(req, d, current.actor, [...asked, ...alreadyGranted]));
    if (knowledge && 'error' in knowledge) return failAuthorization(req, reply, 'invalid_request', knowledge.error);
    return send(
      reply,
      consentPage({
        uid: d.uid,
        csrf: csrfOf(req, reply),
        user: current.user,
        client: {
          name: client.name,
          logo: client.branding.logo,
          description: client.branding.description,
          brandColor: client.branding.brandColor,
          verified: client.registeredVia === 'api',
          ...(client.host ? { host: client.host } : {}),
        },
        scopes: asked,
        alreadyGranted,
        redirectUri: String(d.params.redirect_uri ?? ''),
        ...(knowledge ? { knowledge } : {}),
        ...(refused ? { error: refused.error } : {}),
      }),
      refused ? 400 : 200,
    );
  }

  // ---- The OAuth interaction: sign-in, then consent --------------------------------------------------------

  app.get('/interaction/:uid', page, async (req, reply) => {
    const { uid } = req.params as { uid: string };
    if (!UID.test(uid)) return interactionGone(reply);
    const d = await details(req, reply);
    if (!d) return interactionGone(reply);
    const current = await currentUser(req);
    const client = await authClientsService.findClientForConsent(
      publicContextOf(req),
      String(d.params.client_id ?? ''),
    );
    if (!client) return interactionGone(reply);
    const csrf = csrfOf(req, reply);
    if (d.prompt.name === 'login' || !current || current.actor.accountId !== d.session?.accountId) {
      if (d.prompt.name === 'login' && current) {
        // Already signed in to Switchboard in this browser: that is the sign-in.
        const returnTo = await (await oauth.provider()).interactionResult(
          req.raw,
          reply.raw,
          { login: { accountId: current.actor.accountId } },
          { mergeWithLastSubmission: false },
        );
        return reply.redirect(returnTo, 303);
      }
      return send(
        reply,
        signInPage({
          action: `/interaction/${uid}/login`,
          csrf,
          clientName: client.name,
          signupHref: config.signupEnabled ? `/interaction/${uid}/signup` : undefined,
        }),
      );
    }
    return renderConsent(req, reply, d, current, client);
  });

  app.post('/interaction/:uid/login', limited, async (req, reply) => {
    const { uid } = req.params as { uid: string };
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const d = await details(req, reply);
    if (!d) return interactionGone(reply);
    try {
      const session = await authService.authenticate(req.publicCtx, {
        email: one(form, 'email'),
        password: one(form, 'password'),
      });
      setSessionCookie(reply, deps, session.session_token, session.expires_in);
      const returnTo = await (await oauth.provider()).interactionResult(
        req.raw,
        reply.raw,
        { login: { accountId: session.account.id } },
        { mergeWithLastSubmission: false },
      );
      return reply.redirect(returnTo, 303);
    } catch (err) {
      const client = await authClientsService.findClientForConsent(
        publicContextOf(req),
        String(d.params.client_id ?? ''),
      );
      return send(
        reply,
        signInPage({
          action: `/interaction/${uid}/login`,
          csrf: csrfOf(req, reply),
          email: one(form, 'email'),
          error: formError(err),
          clientName: client?.name,
          signupHref: config.signupEnabled ? `/interaction/${uid}/signup` : undefined,
        }),
        signInRefusalStatus(err),
      );
    }
  });

  app.get('/interaction/:uid/signup', page, async (req, reply) => {
    const { uid } = req.params as { uid: string };
    if (!UID.test(uid) || !(await details(req, reply))) return interactionGone(reply);
    return send(
      reply,
      signUpPage({
        action: `/interaction/${uid}/signup`,
        signinHref: `/interaction/${uid}`,
        csrf: csrfOf(req, reply),
      }),
    );
  });

  app.post('/interaction/:uid/signup', limited, async (req, reply) => {
    const { uid } = req.params as { uid: string };
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    if (!(await details(req, reply))) return interactionGone(reply);
    try {
      const session = await signupFromForm(req, form);
      setSessionCookie(reply, deps, session.session_token, session.expires_in);
      const returnTo = await (await oauth.provider()).interactionResult(
        req.raw,
        reply.raw,
        { login: { accountId: session.account.id } },
        { mergeWithLastSubmission: false },
      );
      return reply.redirect(returnTo, 303);
    } catch (err) {
      return send(
        reply,
        signUpPage({
          action: `/interaction/${uid}/signup`,
          signinHref: `/interaction/${uid}`,
          csrf: csrfOf(req, reply),
          email: one(form, 'email'),
          name: one(form, 'name'),
          error: formError(err),
        }),
        400,
      );
    }
  });

  app.post('/interaction/:uid/confirm', page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const d = await details(req, reply);
    if (!d) return interactionGone(reply);
    if (d.prompt.name !== 'consent') return reply.redirect(`/interaction/${d.uid}`, 303);
    const current = await currentUser(req);
    // The person allowing must be the one signed in, in this browser, to the account being authorized.
    if (!current || current.actor.accountId !== d.session?.accountId) {
      return reply.redirect(`/interaction/${d.uid}`, 303);
    }
    const { asked, alreadyGranted } = await consentScopes(d);
    const knowledge = await knowledgeOffer(req, d, current.actor, [...asked, ...alreadyGranted]);
    if (knowledge && 'error' in knowledge) return failAuthorization(req, reply, 'invalid_request', knowledge.error);
    const chosen = knowledge ? chosenKnowledgeBases(form, knowledge) : undefined;
    if (knowledge && chosen && 'error' in chosen) {
      const selected = many(form, 'knowledge_base_id');
      const keep = { ...knowledge, all: one(form, 'knowledge_bases') === 'all' && !knowledge.fixed, selected };
      const client = await authClientsService.findClientForConsent(publicContextOf(req), String(d.params.client_id));
      if (!client) return interactionGone(reply);
      return renderConsent(req, reply, d, current, client, { error: chosen.error, knowledge: keep });
    }
    const { Grant } = await oauth.provider();
    const clientId = String(d.params.client_id);
    const grant =
      (d.grantId ? await Grant.find(d.grantId) : undefined) ??
      new Grant({ accountId: current.actor.accountId, clientId });
    const prompt = d.prompt.details as {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    if (prompt.missingOIDCScope) grant.addOIDCScope(prompt.missingOIDCScope.join(' '));
    if (prompt.missingOIDCClaims) grant.addOIDCClaims(prompt.missingOIDCClaims);
    // RFC 8707 scopes are granted per resource (PITFALLS: not through addOIDCScope).
    for (const [indicator, scopes] of Object.entries(prompt.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    if (chosen && 'ids' in chosen) await oauth.setGrantKnowledgeBases(grantId, chosen.ids);
    const returnTo = await (await oauth.provider()).interactionResult(
      req.raw,
      reply.raw,
      { consent: { grantId } },
      { mergeWithLastSubmission: true },
    );
    return reply.redirect(returnTo, 303);
  });

  app.post('/interaction/:uid/abort', page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    if (!(await details(req, reply))) return interactionGone(reply);
    const returnTo = await (await oauth.provider()).interactionResult(
      req.raw,
      reply.raw,
      { error: 'access_denied', error_description: 'The user denied the request' },
      { mergeWithLastSubmission: false },
    );
    return reply.redirect(returnTo, 303);
  });

  // ---- Account pages ---------------------------------------------------------------------------------------

  async function renderApps(req: FastifyRequest, reply: FastifyReply, { user, actor }: SignedIn) {
    const apps = await authClientsService.listAuthorizedApps(serviceContextOf(req, actor));
    return send(reply, appsPage({ user, csrf: csrfOf(req, reply), apps, ...takeFlash(req, reply) }));
  }

  app.get('/account/apps', page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    return renderApps(req, reply, current);
  });

  const appGone = (reply: FastifyReply) =>
    send(reply, errorPage('Not found', 'That app authorization does not exist.'), 404);

  app.get('/account/apps/:grantId/revoke', page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const { grantId } = req.params as { grantId: string };
    const apps = await authClientsService.listAuthorizedApps(serviceContextOf(req, current.actor));
    const found = apps.find((a) => a.grantId === grantId);
    if (!found) return appGone(reply);
    return send(
      reply,
      confirmPage({
        user: current.user,
        csrf: csrfOf(req, reply),
        title: `Revoke ${found.name}?`,
        body: html`<p><strong>${found.name}</strong> can now:</p>
          <ul class="scopes">${found.scopes.map((s) => html`<li>${scopeText(s)}</li>`)}</ul>
          <p>Revoking ends its tokens at once: it can no longer act on your account until you authorize it again.</p>`,
        action: `/account/apps/${grantId}/revoke`,
        button: 'Revoke access',
        cancelHref: '/account/apps',
      }),
    );
  });

  app.post('/account/apps/:grantId/revoke', page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await signedIn(req, reply, '/account/apps');
    if (!current) return reply;
    const { grantId } = req.params as { grantId: string };
    if (!(await authClientsService.ownsGrant(serviceContextOf(req, current.actor), grantId))) return appGone(reply);
    await oauth.revokeGrant(grantId);
    return redirectWithFlash(req, reply, '/account/apps', {
      notice: 'Access revoked: the app can no longer use your account.',
    });
  });

  const patScopes = ALL_SCOPES;
  /** What an MCP client needs: discovery (`initialize`, `tools/list`) and calling the tools. */
  const MCP_CLIENT_SCOPES = ['universal-mcp-read', 'universal-mcp-read-write'] as const satisfies readonly Scope[];

  async function renderTokens(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    extra: {
      created?: { name: string; token: string; forMcp?: boolean | undefined };
      notice?: string;
      error?: string;
      form?: { name: string; scopes: string[]; expiresDays: string };
    } = {},
    status = 200,
  ) {
    const ctx = serviceContextOf(req, current.actor);
    const firstPage = { page: 1, limit: 100, sortOrder: 'desc' as const };
    const list = await authService.listPats(ctx, firstPage);
    return send(
      reply,
      tokensPage({
        user: current.user,
        csrf: csrfOf(req, reply),
        scopes: patScopes,
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

  app.get('/account/tokens', page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    return renderTokens(req, reply, current, takeFlash(req, reply));
  });

  app.post('/account/tokens', page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const name = one(form, 'name').trim();
    const scopes = many(form, 'scopes').filter((s): s is Scope => (ALL_SCOPES as string[]).includes(s));
    const days = Number(one(form, 'expires_days'));
    const kept = { name, scopes, expiresDays: one(form, 'expires_days') };
    const refuse = (error: string) => renderTokens(req, reply, current, { error, form: kept }, 400);
    if (!name || name.length > 100) return refuse('Give the token a name.');
    if (!scopes.length) return refuse('Choose at least one scope.');
    const expiresIn = Number.isInteger(days) && days > 0 ? Math.min(days * 86_400, config.patMaxExpiresIn) : undefined;
    try {
      const created = await authService.createPat(serviceContextOf(req, current.actor), {
        name,
        scopes,
        ...(expiresIn ? { expires_in: expiresIn } : {}),
      });
      // Shown once by the page the browser lands on: the flash is sealed and read once.
      return redirectWithFlash(req, reply, '/account/tokens', {
        created: { name, token: created.personal_access_token },
      });
    } catch (err) {
      return refuse(formError(err));
    }
  });

  /** One click: a PAT holding the MCP scopes (90 days), shown once beside the client configurations it fills. */
  app.post('/account/tokens/mcp', page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await signedIn(req, reply, '/account/tokens');
    if (!current) return reply;
    const name = `MCP client ${new Date().toISOString().slice(0, 10)}`;
    const created = await authService.createPat(serviceContextOf(req, current.actor), {
      name,
      scopes: [...MCP_CLIENT_SCOPES],
      expires_in: Math.min(90 * 86_400, config.patMaxExpiresIn),
    });
    return redirectWithFlash(req, reply, '/account/tokens#mcp', {
      created: { name, token: created.personal_access_token, forMcp: true },
    });
  });

  const tokenGone = (req: FastifyRequest, reply: FastifyReply, current: SignedIn) =>
    renderTokens(req, reply, current, { error: 'That token does not exist: it may have been revoked already.' }, 404);

  app.get('/account/tokens/:id/revoke', page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const { id } = req.params as { id: string };
    let token: Pat;
    try {
      token = await authService.getPat(serviceContextOf(req, current.actor), id);
    } catch (err) {
      if (err instanceof NotFoundError) return tokenGone(req, reply, current);
      throw err;
    }
    return send(
      reply,
      confirmPage({
        user: current.user,
        csrf: csrfOf(req, reply),
        title: `Revoke ${token.name}?`,
        body: html`<p>Token <strong>${token.name}</strong> (<code>${token.token_prefix}…</code>, scopes
          ${token.scopes.join(', ')}) stops working at once. Scripts and apps that use it get 401 until you give
          them a new token.</p>`,
        action: `/account/tokens/${id}/revoke`,
        button: 'Revoke token',
        cancelHref: '/account/tokens',
      }),
    );
  });

  app.post('/account/tokens/:id/revoke', page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    const current = await signedIn(req, reply, '/account/tokens');
    if (!current) return reply;
    const { id } = req.params as { id: string };
    try {
      await authService.revokePat(serviceContextOf(req, current.actor), id);
    } catch (err) {
      if (err instanceof NotFoundError) return tokenGone(req, reply, current);
      throw err;
    }
    return redirectWithFlash(req, reply, '/account/tokens', { notice: 'Token revoked.' });
  });

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

class FormError extends AppError {
  constructor(message: string) {
    super(400, message);
  }
}
