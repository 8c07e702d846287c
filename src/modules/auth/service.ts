import { hash, verify } from '@node-rs/argon2';
import * as authRepo from '../../access/repo.ts';
import { ALL_SCOPES, type Scope } from '../../access/scopes.ts';
import type { Config, PasswordHashing } from '../../config.ts';
import { type PublicContext, requireFirstParty, type ServiceContext } from '../../context.ts';
import type { PersonalAccessTokenRow } from '../../db/schema/index.ts';
import { ForbiddenError, NotFoundError, UnauthorizedError, ValidationError } from '../../lib/errors.ts';
import { newId, newSecretToken, sha256Hex } from '../../lib/ids.ts';
import { type ListParams, type Page, toPage } from '../../lib/pagination.ts';
import { createAccount, findAccount, findSignIn } from '../accounts/index.ts';
import { unknownKnowledgeBases } from '../knowledge/index.ts';
import { providerCatalog } from '../providers/index.ts';
import type { Authenticate, CreatedPat, CreatePat, Pat, SessionResponse, Signup } from './schema.ts';
import { countSignInAttempt } from './sign-in-limit.ts';

// Verified when the e-mail is unknown, so a wrong e-mail takes as long as a wrong password: one per cost.
const dummyHashes = new WeakMap<PasswordHashing, Promise<string>>();

/** An argon2id hash at the configured cost (`config.passwordHashing`: OWASP's floor outside the test suite). */
export function hashPassword(config: Pick<Config, 'passwordHashing'>, password: string): Promise<string> {
  return hash(password, config.passwordHashing);
}

/** Creates an account with its starting credits (a `grant` row) and a first session, in one transaction. */
export async function signup(ctx: PublicContext, input: Signup): Promise<SessionResponse> {
  const { config } = ctx.deps;
  if (!config.signupEnabled) throw new ForbiddenError('Sign-up is disabled on this server');
  const passwordHash = await hashPassword(config, input.password);
  const result = await createAccount(ctx, { ...input, passwordHash });
  return startSession(ctx, result.id);
}

/** 401 without saying whether the e-mail or the password was wrong. */
export async function authenticate(ctx: PublicContext, input: Authenticate): Promise<SessionResponse> {
  await countSignInAttempt(ctx, input.email);
  const row = await findSignIn(ctx, input.email);
  const { passwordHashing } = ctx.deps.config;
  let dummyHash = dummyHashes.get(passwordHashing);
  if (!dummyHash) {
    dummyHash = hashPassword(ctx.deps.config, 'not-a-real-password');
    dummyHashes.set(passwordHashing, dummyHash);
  }
  const ok = await verify(row?.passwordHash ?? (await dummyHash), input.password).catch(() => false);
  if (!row?.passwordHash || !ok) throw new UnauthorizedError('Invalid e-mail or password');
  return startSession(ctx, row.id);
}

async function startSession(ctx: PublicContext, accountId: string): Promise<SessionResponse> {
  const ttl = ctx.deps.config.sessionTtlSeconds;
  const token = newSecretToken('sess');
  await authRepo.insertSession(ctx.db, {
    id: newId('session'),
    accountId,
    tokenHash: sha256Hex(token),
    expiresAt: new Date(Date.now() + ttl * 1000),
    userAgent: ctx.userAgent?.slice(0, 256),
  });
  const account = await findAccount(ctx, accountId);
  if (!account) throw new NotFoundError('Account not found');
  return { session_token: token, token_type: 'Bearer', expires_in: ttl, account };
}

/** Ends the calling session; its token stops working at once. */
export async function logout(ctx: ServiceContext): Promise<void> {
  if (ctx.actor.kind !== 'session')
    throw new ForbiddenError('Logout ends a session; revoke tokens with DELETE /api/v1/auth/pats/:id');
  await authRepo.deleteSession(ctx.db, ctx.accountId, ctx.actor.tokenId);
  ctx.deps.actorCache.evict({ tokenId: ctx.actor.tokenId });
}

function toPat(row: PersonalAccessTokenRow): Pat {
  return {
    id: row.id,
    name: row.name,
    token_prefix: row.tokenPrefix,
    scopes: row.scopes,
    provider_permissions: row.providerPermissions,
    default_provider_permission: row.defaultProviderPermission,
    knowledge_base_ids: row.knowledgeBaseIds,
    expires_at: row.expiresAt.toISOString(),
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
  };
}

/**
 * Mints a PAT. Only a session may do it (a token cannot mint tokens), the scopes cannot exceed the caller's,
 * and only the hash is stored: the token is in this answer and nowhere else.
 */
export async function createPat(ctx: ServiceContext, input: CreatePat): Promise<CreatedPat> {
  requireFirstParty(ctx);
  const { patDefaultExpiresIn, patMaxExpiresIn } = ctx.deps.config;
  const expiresIn = input.expires_in ?? patDefaultExpiresIn;
  if (expiresIn > patMaxExpiresIn) {
    throw new ValidationError('Validation failed', [
      { field: 'body.expires_in', message: `must be at most ${patMaxExpiresIn} seconds` },
    ]);
  }
  // A permission for a provider that does not exist is a typo the token would carry silently (`githb`).
  const catalog = providerCatalog(ctx.deps.config);
  const unknownProviders = Object.keys(input.provider_permissions ?? {}).filter((id) => !catalog.get(id));
  if (unknownProviders.length) {
    throw new ValidationError(
      `Unknown provider ids in provider_permissions: ${unknownProviders.join(', ')}`,
      unknownProviders.map((id) => ({
        field: `body.provider_permissions.${id}`,
        message: `unknown provider id ${JSON.stringify(id)} (see GET /api/v1/providers)`,
      })),
    );
  }
  const scopes = [...new Set(input.scopes)] as Scope[];
  const beyond = scopes.filter((s) => !ctx.scopes.has(s));
  if (beyond.length) throw new ForbiddenError(`Cannot grant scopes you do not hold: ${beyond.join(', ')}`);
  const knowledgeBaseIds = input.knowledge_base_ids ? [...new Set(input.knowledge_base_ids)] : null;
  if (knowledgeBaseIds) {
    const unknown = await unknownKnowledgeBases(ctx, knowledgeBaseIds);
    if (unknown.length) {
      throw new ValidationError(`Unknown knowledge bases: ${unknown.join(', ')}`, [
        { field: 'body.knowledge_base_ids', message: `not knowledge bases of this account: ${unknown.join(', ')}` },
      ]);
    }
  }
  const token = newSecretToken('pat');
  const row = await authRepo.insertPat(ctx.db, {
    id: newId('pat'),
    accountId: ctx.accountId,
    name: input.name,
    tokenHash: sha256Hex(token),
    tokenPrefix: token.slice(0, 10),
    scopes: ALL_SCOPES.filter((s) => scopes.includes(s)),
    providerPermissions: input.provider_permissions ?? {},
    defaultProviderPermission: input.default_provider_permission ?? 'read-write',
    knowledgeBaseIds,
    expiresAt: new Date(Date.now() + expiresIn * 1000),
  });
  return { ...toPat(row), personal_access_token: token };
}

export async function listPats(
  ctx: ServiceContext,
  p: Pick<ListParams, 'page' | 'limit' | 'sortOrder'>,
): Promise<Page<Pat>> {
  requireFirstParty(ctx);
  const { rows, total } = await authRepo.listPats(ctx.db, ctx.accountId, p);
  return toPage(rows.map(toPat), total, p);
}

export async function getPat(ctx: ServiceContext, id: string): Promise<Pat> {
  requireFirstParty(ctx);
  const row = await authRepo.findPat(ctx.db, ctx.accountId, id);
  if (!row) throw new NotFoundError(`Personal access token ${id} not found`);
  return toPat(row);
}

export async function revokePat(ctx: ServiceContext, id: string): Promise<void> {
  requireFirstParty(ctx);
  const revoked = await authRepo.revokePat(ctx.db, ctx.accountId, id, new Date());
  if (!revoked) throw new NotFoundError(`Personal access token ${id} not found`);
  ctx.deps.actorCache.evict({ tokenId: id });
}
