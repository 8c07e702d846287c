import type { FastifyReply, FastifyRequest } from 'fastify';
import { SESSION_COOKIE, sessionActor } from '../access/browser-session.ts';
import { publicContextOf } from '../access/guard.ts';
import type { OAuthServer } from '../access/oauth/server.ts';
import type { Actor } from '../context.ts';
import type { App } from '../http/types.ts';
import { findAccountProfile } from '../modules/accounts/index.ts';
import { errorPage, type PageUser } from './pages.ts';
import { csrfToken, csrfValid, foreignOrigin } from './session.ts';

/** What every page route shares: form reading, the HTML answer with its headers, the signed-in user. */

export type Form = Record<string, string | string[] | undefined>;

/**
 * Where a `return_to` may send the browser: resolved against `APP_URL`, accepted only when the origin stays
 * ours, and answered as a path (`/a?b#c`). Anything else gives `fallback`: a value with control characters
 * (a tab or newline that browsers strip, so `/%09/evil.example` becomes `//evil.example`), spaces or
 * non-ASCII characters (a `Location` header cannot carry them), a scheme-relative or absolute URL elsewhere.
 * Every page that reads `return_to` goes through here.
 */
export function returnTarget(value: unknown, appUrl: string, fallback = '/account'): string {
  if (typeof value !== 'string' || value === '' || value.length > 2048 || /[^\x21-\x7e]/.test(value)) return fallback;
  const base = new URL(`${appUrl}/`);
  let target: URL;
  try {
    target = new URL(value, base);
  } catch {
    return fallback;
  }
  if (target.origin !== base.origin || target.username || target.password) return fallback;
  return `${target.pathname}${target.search}${target.hash}`;
}

/** A refused form's message: the schema's issues on one line (`name: Too small; ...`). */
export function formIssues(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string {
  return error.issues.map((i) => `${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`).join('; ');
}

export function one(form: Form, name: string): string {
  const v = form[name];
  return (Array.isArray(v) ? v[0] : v) ?? '';
}

export function many(form: Form, name: string): string[] {
  const v = form[name];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

export interface SendOptions {
  /**
   * Image sources besides `data:`, as CSP source expressions. Keep them narrow: a path prefix such as
   * `https://api.example/providers/logos/` allows only what lies under it.
   */
  imgSrc?: readonly string[];
  /**
   * The page runs its own same-origin scripts (`script-src 'self'`) and they call this origin
   * (`connect-src 'self'`): never inline script. Off for every page that works without them.
   */
  scripts?: boolean;
}

export function send(reply: FastifyReply, page: string, status = 200, opts: SendOptions = {}) {
  const imgSrc = ['data:', ...(opts.imgSrc ?? [])].join(' ');
  const scripts = opts.scripts ? " script-src 'self'; connect-src 'self';" : '';
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('x-frame-options', 'DENY')
    .header(
      'content-security-policy',
      `default-src 'none';${scripts} style-src 'unsafe-inline'; img-src ${imgSrc}; form-action 'self' http: https:; frame-ancestors 'none'; base-uri 'none'`,
    )
    .send(page);
}

export interface SignedIn {
  actor: Actor;
  user: PageUser;
}

export interface PageHelpers {
  /** The key CSRF tokens are signed with (the OAuth server's current cookie key). */
  secret(): string;
  /** The CSRF token for this browser's forms (sets its cookie on first use). */
  csrf(req: FastifyRequest, reply: FastifyReply): string;
  /** True when the form's CSRF token fits this browser. */
  csrfOk(req: FastifyRequest, form: Form): boolean;
  currentUser(req: FastifyRequest): Promise<SignedIn | undefined>;
  /**
   * The signed-in user, or undefined after redirecting the browser to sign-in, which comes back to `returnTo`
   * (default: this path; a form's POST passes the page it came from).
   */
  signedIn(req: FastifyRequest, reply: FastifyReply, returnTo?: string): Promise<SignedIn | undefined>;
  /** The answer to a form whose CSRF token did not fit: 403 with a page saying what to do. */
  csrfFailed(reply: FastifyReply): FastifyReply;
}

export function pageHelpers(app: App, oauth: OAuthServer): PageHelpers {
  const deps = app.deps;
  const secret = () => oauth.keys.cookieKeys[0] ?? '';

  async function currentUser(req: FastifyRequest): Promise<SignedIn | undefined> {
    const actor = await sessionActor(deps, req.cookies[SESSION_COOKIE]);
    if (!actor) return undefined;
    const user = await findAccountProfile(publicContextOf(req), actor.accountId);
    return user ? { actor, user } : undefined;
  }

  return {
    secret,
    csrf: (req, reply) => csrfToken(req, reply, secret()),
    csrfOk: (req, form) => csrfValid(req, secret(), one(form, 'csrf')),
    currentUser,
    // A page's query (`?c=<conversation>`, `?q=`) comes back after sign-in; a form's POST goes back to its page.
    async signedIn(req, reply, returnTo = req.method === 'GET' ? req.url : (req.url.split('?')[0] ?? '/')) {
      const current = await currentUser(req);
      if (!current) {
        await reply.redirect(`/signin?return_to=${encodeURIComponent(returnTo)}`, 303);
        return undefined;
      }
      return current;
    },
    csrfFailed(reply) {
      const origin = foreignOrigin(reply.request);
      if (origin) {
        const base = deps.config.baseUrl;
        return send(
          reply,
          errorPage(
            'Form sent from another address',
            `This form was sent from ${origin}, but this service answers forms only at ${base}. ` +
              `Open ${base} in your browser and try again, or, if ${origin} is the address you use, ` +
              'set BASE_URL (and APP_URL, when the pages have their own address) to it and restart the service.',
          ),
          403,
        );
      }
      return send(
        reply,
        errorPage('Form expired', 'The form was out of date. Go back, reload the page and try again.'),
        403,
      );
    },
  };
}
