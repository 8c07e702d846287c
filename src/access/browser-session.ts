import type { Actor, Deps } from '../context.ts';
import { resolveBearer } from './tokens.ts';

/**
 * The first-party browser session: a cookie holding a session token from the auth service (the kind the
 * API's sign-in returns). The web pages set it; the pages and the OAuth server read it through these.
 */
export const SESSION_COOKIE = 'sb_session';

/** The account of a session token, or undefined for anything else (expired, signed out, not a session). */
export async function sessionAccountId(deps: Deps, token: string): Promise<string | undefined> {
  const actor = await sessionActor(deps, token);
  return actor?.accountId;
}

export async function sessionActor(deps: Deps, token: string | undefined): Promise<Actor | undefined> {
  if (!token?.startsWith('sess_')) return undefined;
  try {
    const actor = await resolveBearer(deps.database.db, token, [], deps.actorCache);
    return actor.kind === 'session' ? actor : undefined;
  } catch {
    return undefined;
  }
}
