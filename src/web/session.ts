import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SESSION_COOKIE } from '../access/browser-session.ts';
import type { Deps } from '../context.ts';
import { servedOrigins } from '../http/origins.ts';

/**
 * The browser session of the first-party pages: an HttpOnly, SameSite=Lax cookie (Secure under https)
 * holding a session token (src/access/browser-session.ts reads it).
 */
/** Random per browser; forms carry its HMAC (signed double-submit CSRF token). */
export const CSRF_COOKIE = 'sb_csrf';

export function secureCookies(deps: Pick<Deps, 'config'>): boolean {
  return deps.config.appUrl.startsWith('https:');
}

export function setSessionCookie(reply: FastifyReply, deps: Deps, token: string, maxAgeSeconds: number): void {
  reply.setCookie(SESSION_COOKIE, token, {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: secureCookies(deps),
    maxAge: maxAgeSeconds,
  });
}

export function clearSessionCookie(reply: FastifyReply, deps: Deps): void {
  reply.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'lax', secure: secureCookies(deps) });
}

/** The CSRF token for this browser, setting its cookie on first use. */
export function csrfToken(req: FastifyRequest, reply: FastifyReply, secret: string): string {
  let seed = req.cookies[CSRF_COOKIE];
  if (!seed || !/^[A-Za-z0-9_-]{32,64}$/.test(seed)) {
    seed = randomBytes(24).toString('base64url');
    // Remember it for this request, so two forms on one page share it.
    req.cookies[CSRF_COOKIE] = seed;
    reply.setCookie(CSRF_COOKIE, seed, {
      path: '/',
      httpOnly: true,
      sameSite: 'lax',
      secure: secureCookies(req.server.deps),
    });
  }
  return createHmac('sha256', secret).update(`csrf:${seed}`).digest('base64url');
}

/**
 * The form's Origin when it is not one this service is served at (see servedOrigins), else undefined.
 * `Origin: null` (privacy modes) and no Origin tell nothing: the CSRF token decides.
 */
export function foreignOrigin(req: FastifyRequest): string | undefined {
  const origin = req.headers.origin;
  if (!origin || origin === 'null') return undefined;
  return servedOrigins(req.server.deps.config).has(origin) ? undefined : origin;
}

/** True when the form's token matches this browser's cookie (and, when sent, Origin is ours). */
export function csrfValid(req: FastifyRequest, secret: string, submitted: unknown): boolean {
  if (foreignOrigin(req)) return false;
  const seed = req.cookies[CSRF_COOKIE];
  if (!seed || typeof submitted !== 'string') return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(`csrf:${seed}`).digest('base64url'));
  const given = Buffer.from(submitted);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
