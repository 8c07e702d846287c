import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { serviceContextOf } from '../access/guard.ts';
import type { OAuthServer } from '../access/oauth/server.ts';
import type { PublicContext } from '../context.ts';
import { ipKey } from '../http/rate-limit.ts';
import type { App } from '../http/types.ts';
import { AppError } from '../lib/errors.ts';
import * as authService from '../modules/auth/index.ts';
import { returnTarget, send } from './common.ts';
import { FormError, formOf, pageRouter, text } from './page-route.ts';
import { errorPage, signInPage, signUpPage } from './pages.ts';
import { clearSessionCookie, setSessionCookie } from './session.ts';

export const SignInForm = formOf({ email: text, password: text, return_to: text });
export const SignUpForm = formOf({ email: text, name: text, password: text, return_to: text });
const SignOutForm = formOf({ return_to: text });
const ReturnQuery = z.object({ return_to: text });

/** Sign-in (and sign-up) errors shown on the form: wrong password, taken e-mail, bad fields. */
export function formError(err: unknown): string {
  if (err instanceof AppError && err.statusCode < 500) {
    if (err.statusCode === 401) return 'Wrong e-mail or password.';
    if (err.statusCode === 409) return 'An account with this e-mail already exists. Sign in instead.';
    if (err.statusCode === 429) return 'Too many attempts. Wait a minute and try again.';
    return err.message;
  }
  throw err;
}

/** A refused sign-in form: 429 when the shared sign-in budget is spent (with its Retry-After), else 401. */
export function signInRefusalStatus(err: unknown): number {
  return err instanceof AppError && err.statusCode === 429 ? 429 : 401;
}

/** A new account from the sign-up form's fields, checked as the form states them. */
export async function signupFromForm(ctx: PublicContext, form: z.infer<typeof SignUpForm>) {
  const email = form.email.trim();
  const name = form.name.trim();
  const password = form.password;
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254)
    throw new FormError('Enter a valid e-mail address.');
  if (!name || name.length > 100) throw new FormError('Enter your name (up to 100 characters).');
  if (password.length < 8 || password.length > 256) throw new FormError('The password must be at least 8 characters.');
  return authService.signup(ctx, { email, name, password });
}

/** The sign-in forms' rate limit: RATE_LIMIT_AUTH a window per address. */
export function signInLimit(app: App) {
  const { rateLimits } = app.deps.config;
  return { max: rateLimits.auth, timeWindow: rateLimits.windowMs, keyGenerator: ipKey };
}

/** The page of an OAuth sign-in that is gone (expired, used, never was). */
export function interactionGone(reply: FastifyReply) {
  return send(
    reply,
    errorPage(
      'Sign-in request expired',
      'This sign-in request has expired or was already used. Go back to the app and start again.',
    ),
    400,
  );
}

/** Stand-alone sign-in, sign-up and sign-out (`/signin`, `/signup`, `/signout`). */
export async function signInRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const pages = pageRouter(app, oauth);
  const { config } = app.deps;
  const deps = app.deps;
  const { currentUser } = pages.helpers;
  const rateLimit = signInLimit(app);

  pages.publicGet('/signin', { query: ReturnQuery }, async ({ req, reply, csrf, query }) => {
    const returnTo = returnTarget(query.return_to, config.appUrl);
    if (await currentUser(req)) return reply.redirect(returnTo, 303);
    return send(
      reply,
      signInPage({
        action: '/signin',
        csrf: csrf(),
        returnTo,
        signupHref: config.signupEnabled ? `/signup?return_to=${encodeURIComponent(returnTo)}` : undefined,
      }),
    );
  });

  /** The sign-in form again, with why it was refused. */
  const signInAgain = (
    reply: FastifyReply,
    csrf: string,
    form: { email: string; return_to: string },
    error: string,
    status: number,
  ) =>
    send(
      reply,
      signInPage({
        action: '/signin',
        csrf,
        returnTo: returnTarget(form.return_to, config.appUrl),
        email: form.email,
        error,
        signupHref: config.signupEnabled ? '/signup' : undefined,
      }),
      status,
    );

  pages.publicPost(
    '/signin',
    {
      form: SignInForm,
      rateLimit,
      refused: ({ reply, csrf }, err) =>
        err instanceof FormError
          ? signInAgain(reply, csrf(), { email: '', return_to: '' }, err.message, 400)
          : undefined,
    },
    async ({ req, reply, csrf, form }) => {
      const returnTo = returnTarget(form.return_to, config.appUrl);
      try {
        const session = await authService.authenticate(req.publicCtx, { email: form.email, password: form.password });
        setSessionCookie(reply, deps, session.session_token, session.expires_in);
        return reply.redirect(returnTo, 303);
      } catch (err) {
        return signInAgain(reply, csrf(), form, formError(err), signInRefusalStatus(err));
      }
    },
  );

  pages.publicGet('/signup', { query: ReturnQuery }, async ({ reply, csrf, query }) => {
    const returnTo = returnTarget(query.return_to, config.appUrl);
    return send(reply, signUpPage({ action: '/signup', signinHref: '/signin', csrf: csrf(), returnTo }));
  });

  pages.publicPost(
    '/signup',
    {
      form: SignUpForm,
      rateLimit,
      refused: ({ reply, csrf }, err) =>
        err instanceof FormError
          ? send(reply, signUpPage({ action: '/signup', signinHref: '/signin', csrf: csrf(), error: err.message }), 400)
          : undefined,
    },
    async ({ req, reply, csrf, form }) => {
      const returnTo = returnTarget(form.return_to, config.appUrl);
      try {
        const session = await signupFromForm(req.publicCtx, form);
        setSessionCookie(reply, deps, session.session_token, session.expires_in);
        return reply.redirect(returnTo, 303);
      } catch (err) {
        return send(
          reply,
          signUpPage({
            action: '/signup',
            signinHref: '/signin',
            csrf: csrf(),
            returnTo,
            email: form.email,
            name: form.name,
            error: formError(err),
          }),
          400,
        );
      }
    },
  );

  pages.publicPost('/signout', { form: SignOutForm }, async ({ req, reply, form }) => {
    const current = await currentUser(req);
    if (current) await authService.logout(serviceContextOf(req, current.actor));
    clearSessionCookie(reply, deps);
    return reply.redirect(returnTarget(form.return_to, config.appUrl, '/signin'), 303);
  });
}
