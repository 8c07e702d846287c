import { randomBytes } from 'node:crypto';
import { effectiveClientScopes, scopesForRoles } from '../../access/oauth/policy.ts';
import { ALL_SCOPES, type Scope } from '../../access/scopes.ts';
import { type PublicContext, requireFirstParty, requireScope, type ServiceContext } from '../../context.ts';
import type { AuthClientRow } from '../../db/schema/index.ts';
import { BadRequestError, ForbiddenError, NotFoundError, ValidationError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type ListParams, type Page, toPage } from '../../lib/pagination.ts';
import { accountIdByEmail, allowsWhitelabel, setAllowWhitelabel } from '../accounts/index.ts';
import { knowledgeBaseNames } from '../knowledge/index.ts';
import * as repo from './repo.ts';
import type { AuthClient, ClientSecret, CreateAuthClient, CreatedAuthClient, UpdateAuthClient } from './schema.ts';

/**
 * OAuth clients an account owns (SPEC §4 "Auth clients"). Secrets are random, shown once, and sealed at rest
 * with the key ring (the row id as associated data); another account's client is 404.
 */

export function toAuthClient(row: AuthClientRow): AuthClient {
  const method =
    row.type === 'public'
      ? 'none'
      : row.metadata.token_endpoint_auth_method === 'client_secret_post'
        ? 'client_secret_post'
        : 'client_secret_basic';
  return {
    id: row.id,
    clientId: row.id,
    name: row.name,
    type: row.type,
    roles: row.roles,
    redirectUris: row.redirectUris,
    allowedScopes: effectiveClientScopes(row.allowedScopes, row.roles),
    branding: row.branding,
    tokenEndpointAuthMethod: method,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** `whitelabel-customer` is by invitation: only accounts an operator allowed may give it. */
async function checkRoles(ctx: ServiceContext, roles: readonly string[]): Promise<void> {
  if (!roles.includes('whitelabel-customer')) return;
  if (!(await allowsWhitelabel(ctx, ctx.accountId))) {
    throw new ForbiddenError('The whitelabel-customer role is by invitation only; this account is not allowed it');
  }
}

function checkScopes(scopes: readonly string[] | undefined, roles: readonly string[]): string[] {
  const permitted = scopesForRoles(roles) as string[];
  if (!scopes) return permitted;
  const beyond = scopes.filter((s) => !permitted.includes(s));
  if (beyond.length) {
    throw new ValidationError('Validation failed', [
      {
        field: 'body.allowedScopes',
        message: `not allowed for these roles: ${beyond.join(', ')} (agents-all needs whitelabel-customer)`,
      },
    ]);
  }
  return [...new Set(scopes)];
}

export async function createAuthClient(ctx: ServiceContext, input: CreateAuthClient): Promise<CreatedAuthClient> {
  requireFirstParty(ctx);
  const roles = [...new Set(input.roles)];
  await checkRoles(ctx, roles);
  const allowedScopes = checkScopes(input.allowedScopes, roles);
  const id = newId('authClient');
  const secret = input.type === 'confidential' ? newSecret() : undefined;
  const row = await repo.insertClient(ctx.db, {
    id,
    accountId: ctx.accountId,
    name: input.name,
    type: input.type,
    roles,
    redirectUris: [...new Set(input.redirectUris)],
    allowedScopes,
    branding: input.branding ?? {},
    secretCiphertext: secret ? ctx.deps.keyRing.encrypt(secret, id) : null,
    metadata: {},
    registeredVia: 'api',
  });
  ctx.log.info({ clientId: id, accountId: ctx.accountId }, 'auth client created');
  return { ...toAuthClient(row), ...(secret ? { clientSecret: secret } : {}) };
}

export async function listAuthClients(
  ctx: ServiceContext,
  p: ListParams<'createdAt' | 'updatedAt'>,
): Promise<Page<AuthClient>> {
  requireScope(ctx, 'account');
  const { rows, total } = await repo.listClients(ctx.db, ctx.accountId, p);
  return toPage(rows.map(toAuthClient), total, p);
}

export async function getAuthClient(ctx: ServiceContext, clientId: string): Promise<AuthClient> {
  requireScope(ctx, 'account');
  const row = await repo.findOwnClient(ctx.db, ctx.accountId, clientId);
  if (!row) throw new NotFoundError(`Auth client ${clientId} not found`);
  return toAuthClient(row);
}

export async function updateAuthClient(
  ctx: ServiceContext,
  clientId: string,
  input: UpdateAuthClient,
): Promise<AuthClient> {
  requireFirstParty(ctx);
  const existing = await repo.findOwnClient(ctx.db, ctx.accountId, clientId);
  if (!existing) throw new NotFoundError(`Auth client ${clientId} not found`);
  const roles = input.roles ? [...new Set(input.roles)] : existing.roles;
  if (input.roles) await checkRoles(ctx, roles);
  const allowedScopes = input.allowedScopes
    ? checkScopes(input.allowedScopes, roles)
    : effectiveClientScopes(existing.allowedScopes, roles);
  const row = await repo.updateClient(ctx.db, ctx.accountId, clientId, {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.redirectUris ? { redirectUris: [...new Set(input.redirectUris)] } : {}),
    ...(input.branding !== undefined ? { branding: input.branding } : {}),
    roles,
    allowedScopes,
  });
  if (!row) throw new NotFoundError(`Auth client ${clientId} not found`);
  // Tokens already issued lose at once whatever the new roles or scopes no longer allow.
  ctx.deps.actorCache.evict({ accountId: ctx.accountId });
  return toAuthClient(row);
}

/** Deletes the client and everything issued to it: its tokens stop working at once. */
export async function deleteAuthClient(ctx: ServiceContext, clientId: string): Promise<void> {
  requireFirstParty(ctx);
  const grants = await ctx.db.transaction(async (tx) => {
    const deleted = await repo.deleteClient(tx, ctx.accountId, clientId);
    if (!deleted) throw new NotFoundError(`Auth client ${clientId} not found`);
    return repo.deleteClientArtifacts(tx, clientId);
  });
  for (const grantId of grants) ctx.deps.actorCache.evict({ tokenId: grantId });
  ctx.log.info({ clientId, accountId: ctx.accountId }, 'auth client deleted');
}

/** A new secret, shown once; the previous one stops working at once. */
export async function rotateAuthClientSecret(ctx: ServiceContext, clientId: string): Promise<ClientSecret> {
  requireFirstParty(ctx);
  const existing = await repo.findOwnClient(ctx.db, ctx.accountId, clientId);
  if (!existing) throw new NotFoundError(`Auth client ${clientId} not found`);
  if (existing.type !== 'confidential') throw new BadRequestError('Public clients have no secret (they use PKCE only)');
  const secret = newSecret();
  await repo.updateClient(ctx.db, ctx.accountId, clientId, {
    secretCiphertext: ctx.deps.keyRing.encrypt(secret, clientId),
  });
  ctx.log.info({ clientId, accountId: ctx.accountId }, 'auth client secret rotated');
  return { clientId, clientSecret: secret };
}

/** `switchboard client allow-whitelabel`: lets an account give its clients the whitelabel role, or withdraws it. */
export async function setWhitelabelAllowed(
  ctx: PublicContext,
  email: string,
  allowed: boolean,
): Promise<{ accountId: string; demoted: number }> {
  const accountId = await accountIdByEmail(ctx, email);
  if (!accountId) throw new NotFoundError(`No account with e-mail ${email}`);
  const demoted = await ctx.db.transaction(async (tx) => {
    await setAllowWhitelabel({ db: tx }, accountId, allowed);
    // Withdrawn: the account's clients lose the role (and agents-all) at once.
    return allowed ? 0 : repo.demoteWhitelabelClients(tx, accountId);
  });
  if (demoted) ctx.deps.actorCache.evict({ accountId });
  return { accountId, demoted };
}

/** What the consent and sign-in pages show of the client asking for access; undefined when unknown. */
export async function findClientForConsent(
  ctx: PublicContext,
  clientId: string,
): Promise<(Pick<AuthClientRow, 'name' | 'branding' | 'registeredVia'> & { host?: string }) | undefined> {
  const row = await repo.findClient(ctx.db, clientId);
  if (!row) return undefined;
  // A client named by its metadata document's URL: that URL's host is the one fact about it we checked.
  const host = row.registeredVia === 'metadata-document' ? new URL(row.id).host : undefined;
  return { name: row.name, branding: row.branding, registeredVia: row.registeredVia, ...(host ? { host } : {}) };
}

export interface AuthorizedApp {
  grantId: string;
  name: string;
  logo: string | undefined;
  scopes: Scope[];
  /** The knowledge bases the user limited the app to (names); null: all of them. */
  knowledgeBases: string[] | null;
  grantedAt: string;
}

/** The apps the account has authorized (live OAuth grants), newest first, with the scopes each holds. */
export async function listAuthorizedApps(ctx: ServiceContext): Promise<AuthorizedApp[]> {
  const rows = await repo.listGrants(ctx.db, ctx.accountId);
  const names = await knowledgeBaseNames(ctx, [...new Set(rows.flatMap((r) => r.knowledgeBaseIds ?? []))]);
  return rows.flatMap((r) => {
    if (!r.grantId) return [];
    const p = r.payload as { openid?: { scope?: string }; resources?: Record<string, string> };
    const held = new Set<string>([
      ...String(p.openid?.scope ?? '').split(' '),
      ...Object.values(p.resources ?? {}).flatMap((s) => String(s).split(' ')),
    ]);
    return [
      {
        grantId: r.grantId,
        // A metadata-document client's name is its own claim: its host goes with it.
        name: r.registeredVia === 'metadata-document' ? `${r.clientName} (${new URL(r.clientId).host})` : r.clientName,
        logo: r.branding.logo,
        scopes: ALL_SCOPES.filter((s) => held.has(s)),
        // A base deleted since is no longer named.
        knowledgeBases: r.knowledgeBaseIds ? r.knowledgeBaseIds.flatMap((id) => names.get(id) ?? []) : null,
        grantedAt: r.createdAt.toISOString(),
      },
    ];
  });
}

/** Whether the grant belongs to the caller's account (another account's grant reads as absent). */
export async function ownsGrant(ctx: ServiceContext, grantId: string): Promise<boolean> {
  return (await repo.findGrantOwner(ctx.db, grantId)) === ctx.accountId;
}
