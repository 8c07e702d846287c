import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { publicContextOf, serviceContextOf } from '../access/guard.ts';
import { KNOWLEDGE_BASES_PARAM, parseKnowledgeBaseIds } from '../access/oauth/policy.ts';
import type { OAuthServer } from '../access/oauth/server.ts';
import { ALL_SCOPES } from '../access/scopes.ts';
import type { App } from '../http/types.ts';
import * as authService from '../modules/auth/index.ts';
import * as authClientsService from '../modules/auth-clients/index.ts';
import { KNOWLEDGE_SCOPES, knowledgeBaseChoices, unknownKnowledgeBases } from '../modules/knowledge/index.ts';
import { type SignedIn, send } from './common.ts';
import { formOf, idParam, list, type PublicBase, pageRouter } from './page-route.ts';
import { consentPage, type KnowledgeOffer, signInPage, signUpPage } from './pages.ts';
import { setSessionCookie } from './session.ts';
import {
  formError,
  interactionGone,
  SignInForm,
  SignUpForm,
  signInLimit,
  signInRefusalStatus,
  signupFromForm,
} from './signin-routes.ts';

const UID = /^[A-Za-z0-9_-]{1,64}$/;
const InteractionParams = z.object({ uid: idParam(UID, () => 'Sign-in request expired') });
/** A field that may be absent (undefined), else its first value. */
const maybeText = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((v) => (Array.isArray(v) ? (v[0] ?? '') : v));
const ConsentForm = formOf({ knowledge_bases: maybeText, knowledge_base_id: list });
type ConsentForm = z.infer<typeof ConsentForm>;

/** Any refusal on these pages (an unknown uid, a form that does not parse): the request is gone. */
const gone = ({ reply }: PublicBase) => interactionGone(reply);

/** The OAuth authorization's pages (`/interaction/:uid`): sign-in or sign-up, then the consent screen. */
export async function consentRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const pages = pageRouter(app, oauth);
  const { config } = app.deps;
  const deps = app.deps;
  const { currentUser } = pages.helpers;
  const rateLimit = signInLimit(app);

  /** The interaction of this browser, when it is the one of the URL. */
  async function details(req: FastifyRequest, reply: FastifyReply, uid: string) {
    try {
      const d = await (await oauth.provider()).interactionDetails(req.raw, reply.raw);
      return d.uid === uid ? d : undefined;
    } catch {
      return undefined;
    }
  }

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
  function chosenKnowledgeBases(
    form: ConsentForm,
    offer: KnowledgeOffer,
  ): { ids: string[] | null } | { error: string } {
    // A form without the field (no browser) takes what the screen had selected.
    if (form.knowledge_bases === undefined) return { ids: offer.all ? null : offer.selected };
    const mode = form.knowledge_bases;
    if (mode === 'all' && !offer.fixed) return { ids: null };
    if (mode !== 'some') return { error: 'Choose all knowledge bases or some of them.' };
    const ids = [...new Set(form.knowledge_base_id)];
    if (ids.length === 0) return { error: 'Tick at least one knowledge base, or choose all of them.' };
    const offered = new Set(offer.bases.map((b) => b.id));
    if (!ids.every((id) => offered.has(id))) return { error: 'Choose among the knowledge bases listed.' };
    return { ids };
  }

  /** Ends the interaction with `result` (a sign-in, a consent or an error) and sends the browser on. */
  async function finish(
    req: FastifyRequest,
    reply: FastifyReply,
    result: Record<string, unknown>,
    mergeWithLastSubmission = false,
  ) {
    const returnTo = await (await oauth.provider()).interactionResult(req.raw, reply.raw, result, {
      mergeWithLastSubmission,
    });
    return reply.redirect(returnTo, 303);
  }

  /** Ends the authorization with an OAuth error sent back to the app. */
  const failAuthorization = (req: FastifyRequest, reply: FastifyReply, error: string, description: string) =>
    finish(req, reply, { error, error_description: description });

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
        csrf: pages.helpers.csrf(req, reply),
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

  const onInteraction = { params: InteractionParams, refused: gone };

  pages.publicGet('/interaction/:uid', onInteraction, async ({ req, reply, csrf, params }) => {
    const { uid } = params;
    const d = await details(req, reply, uid);
    if (!d) return interactionGone(reply);
    const current = await currentUser(req);
    const client = await authClientsService.findClientForConsent(
      publicContextOf(req),
      String(d.params.client_id ?? ''),
    );
    if (!client) return interactionGone(reply);
    const token = csrf();
    if (d.prompt.name === 'login' || !current || current.actor.accountId !== d.session?.accountId) {
      // Already signed in to Switchboard in this browser: that is the sign-in.
      if (d.prompt.name === 'login' && current)
        return finish(req, reply, { login: { accountId: current.actor.accountId } });
      return send(
        reply,
        signInPage({
          action: `/interaction/${uid}/login`,
          csrf: token,
          clientName: client.name,
          signupHref: config.signupEnabled ? `/interaction/${uid}/signup` : undefined,
        }),
      );
    }
    return renderConsent(req, reply, d, current, client);
  });

  pages.publicPost(
    '/interaction/:uid/login',
    { ...onInteraction, form: SignInForm, rateLimit },
    async ({ req, reply, csrf, params, form }) => {
      const { uid } = params;
      const d = await details(req, reply, uid);
      if (!d) return interactionGone(reply);
      try {
        const session = await authService.authenticate(req.publicCtx, { email: form.email, password: form.password });
        setSessionCookie(reply, deps, session.session_token, session.expires_in);
        return await finish(req, reply, { login: { accountId: session.account.id } });
      } catch (err) {
        const client = await authClientsService.findClientForConsent(
          publicContextOf(req),
          String(d.params.client_id ?? ''),
        );
        return send(
          reply,
          signInPage({
            action: `/interaction/${uid}/login`,
            csrf: csrf(),
            email: form.email,
            error: formError(err),
            clientName: client?.name,
            signupHref: config.signupEnabled ? `/interaction/${uid}/signup` : undefined,
          }),
          signInRefusalStatus(err),
        );
      }
    },
  );

  pages.publicGet('/interaction/:uid/signup', onInteraction, async ({ req, reply, csrf, params }) => {
    const { uid } = params;
    if (!(await details(req, reply, uid))) return interactionGone(reply);
    return send(
      reply,
      signUpPage({ action: `/interaction/${uid}/signup`, signinHref: `/interaction/${uid}`, csrf: csrf() }),
    );
  });

  pages.publicPost(
    '/interaction/:uid/signup',
    { ...onInteraction, form: SignUpForm, rateLimit },
    async ({ req, reply, csrf, params, form }) => {
      const { uid } = params;
      if (!(await details(req, reply, uid))) return interactionGone(reply);
      try {
        const session = await signupFromForm(req.publicCtx, form);
        setSessionCookie(reply, deps, session.session_token, session.expires_in);
        return await finish(req, reply, { login: { accountId: session.account.id } });
      } catch (err) {
        return send(
          reply,
          signUpPage({
            action: `/interaction/${uid}/signup`,
            signinHref: `/interaction/${uid}`,
            csrf: csrf(),
            email: form.email,
            name: form.name,
            error: formError(err),
          }),
          400,
        );
      }
    },
  );

  pages.publicPost(
    '/interaction/:uid/confirm',
    { ...onInteraction, form: ConsentForm },
    async ({ req, reply, params, form }) => {
      const d = await details(req, reply, params.uid);
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
        const selected = form.knowledge_base_id;
        const keep = { ...knowledge, all: form.knowledge_bases === 'all' && !knowledge.fixed, selected };
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
      return finish(req, reply, { consent: { grantId } }, true);
    },
  );

  pages.publicPost('/interaction/:uid/abort', onInteraction, async ({ req, reply, params }) => {
    if (!(await details(req, reply, params.uid))) return interactionGone(reply);
    return finish(req, reply, { error: 'access_denied', error_description: 'The user denied the request' });
  });
}
