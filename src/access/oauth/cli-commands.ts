import type { PublicContext } from '../../context.ts';
import { setWhitelabelAllowed } from '../../modules/auth-clients/index.ts';
import { retireAfterSeconds, rotateSigningKey } from './keys.ts';

/** The operator commands of the authorization server; `src/cli.ts` lists them. */

/** `switchboard keys rotate`: a new signing key; old ones verify until their tokens have expired. */
export async function keysRotate(ctx: PublicContext): Promise<string[]> {
  const retire = retireAfterSeconds(ctx.deps);
  const { kid, retired, deleted } = await rotateSigningKey(ctx.db, ctx.deps.keyRing, retire);
  return [
    `New signing key ${kid}: running instances sign with it within a minute.`,
    ...(retired.length ? [`Retired ${retired.join(', ')}: still published and verifying for ${retire} seconds.`] : []),
    ...(deleted.length ? [`Deleted keys retired long ago: ${deleted.join(', ')}.`] : []),
  ];
}

/** `switchboard client allow-whitelabel --email E [--revoke]`. */
export async function clientAllowWhitelabel(ctx: PublicContext, email: string, allowed: boolean): Promise<string> {
  const { accountId, demoted } = await setWhitelabelAllowed(ctx, email, allowed);
  return allowed
    ? `Account ${accountId} <${email}> may now give its OAuth clients the whitelabel-customer role.`
    : `Account ${accountId} <${email}> may no longer give the whitelabel-customer role; ${demoted} client(s) lost it.`;
}
