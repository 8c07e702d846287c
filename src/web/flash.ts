import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { SESSION_COOKIE } from '../access/browser-session.ts';
import { LinkCode } from '../modules/channels/index.ts';
import { secureCookies } from './session.ts';

/**
 * Post-redirect-get for the pages: a form's POST does its work, puts what the next page should say in a flash
 * cookie and answers 303; the GET it lands on takes the flash (the cookie is cleared) and shows it once. A
 * reload shows the page without it, and the browser's history holds no POST to send again.
 *
 * The cookie is sealed with the key ring (AES-GCM) and bound to this browser's session cookie, so it can carry
 * a secret shown once (a new token) and is neither readable nor transplantable into another browser. It is
 * HttpOnly and lives a minute: long enough for the redirect, short enough not to linger.
 */
export const FLASH_COOKIE = 'sb_flash';
const FLASH_SECONDS = 60;

const Flash = z.object({
  notice: z.string().optional(),
  error: z.string().optional(),
  /** A secret the page shows once (a new personal access token). */
  created: z.object({ name: z.string(), token: z.string(), forMcp: z.boolean().optional() }).optional(),
  /** A new webhook endpoint's signing secret, shown once. */
  webhookSecret: z.object({ url: z.string(), secret: z.string() }).optional(),
  /** A channel's new link code, shown once. */
  linkCode: LinkCode.optional(),
});
export type Flash = z.infer<typeof Flash>;

function boundTo(req: FastifyRequest): string {
  return `flash:${req.cookies[SESSION_COOKIE] ?? ''}`;
}

/** Answers 303 to `location` with `flash` for the page it lands on. */
export function redirectWithFlash(req: FastifyRequest, reply: FastifyReply, location: string, flash: Flash) {
  const sealed = req.server.deps.keyRing.encrypt(JSON.stringify(flash), boundTo(req));
  reply.setCookie(FLASH_COOKIE, sealed, {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: secureCookies(req.server.deps),
    maxAge: FLASH_SECONDS,
  });
  return reply.redirect(location, 303);
}

/** The flash a redirect left for this page (cleared as it is read); `{}` when none, or when it does not open. */
export function takeFlash(req: FastifyRequest, reply: FastifyReply): Flash {
  const sealed = req.cookies[FLASH_COOKIE];
  if (!sealed) return {};
  reply.clearCookie(FLASH_COOKIE, {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: secureCookies(req.server.deps),
  });
  try {
    const parsed = Flash.safeParse(JSON.parse(req.server.deps.keyRing.decrypt(sealed, boundTo(req))));
    return parsed.success ? parsed.data : {};
  } catch {
    return {};
  }
}
