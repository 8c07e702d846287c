import { and, asc, count, desc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.ts';
import { type AuthClientRow, authClients, oauthArtifacts } from '../../db/schema/index.ts';
import { offsetOf } from '../../lib/pagination.ts';

/** All SQL for auth clients. Every lookup that serves an account filters by its id. */

export async function insertClient(db: Executor, row: typeof authClients.$inferInsert): Promise<AuthClientRow> {
  const [created] = await db.insert(authClients).values(row).returning();
  if (!created) throw new Error('insert returned no row');
  return created;
}

export async function findOwnClient(db: Executor, accountId: string, id: string): Promise<AuthClientRow | undefined> {
  const [row] = await db
    .select()
    .from(authClients)
    .where(and(eq(authClients.id, id), eq(authClients.accountId, accountId)))
    .limit(1);
  return row;
}

/** Any client by id: for the consent screen, which shows whichever app asks. */
export async function findClient(db: Executor, id: string): Promise<AuthClientRow | undefined> {
  const [row] = await db.select().from(authClients).where(eq(authClients.id, id)).limit(1);
  return row;
}

export async function listClients(
  db: Executor,
  accountId: string,
  p: { page: number; limit: number; sortBy: 'createdAt' | 'updatedAt'; sortOrder: 'asc' | 'desc' },
) {
  const where = eq(authClients.accountId, accountId);
  const column = p.sortBy === 'updatedAt' ? authClients.updatedAt : authClients.createdAt;
  const order = p.sortOrder === 'asc' ? [asc(column), asc(authClients.id)] : [desc(column), desc(authClients.id)];
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(authClients)
      .where(where)
      .orderBy(...order)
      .limit(p.limit)
      .offset(offsetOf(p)),
    db.select({ n: count() }).from(authClients).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

export async function updateClient(
  db: Executor,
  accountId: string,
  id: string,
  patch: Partial<
    Pick<AuthClientRow, 'name' | 'roles' | 'redirectUris' | 'allowedScopes' | 'branding' | 'secretCiphertext'>
  >,
): Promise<AuthClientRow | undefined> {
  const [row] = await db
    .update(authClients)
    .set({ ...patch, updatedAt: new Date() })
    .where(and(eq(authClients.id, id), eq(authClients.accountId, accountId)))
    .returning();
  return row;
}

export async function deleteClient(db: Executor, accountId: string, id: string): Promise<boolean> {
  const rows = await db
    .delete(authClients)
    .where(and(eq(authClients.id, id), eq(authClients.accountId, accountId)))
    .returning({ id: authClients.id });
  return rows.length > 0;
}

/** Deletes every grant, code and refresh token of a client; answers the grant ids. */
export async function deleteClientArtifacts(db: Executor, clientId: string): Promise<string[]> {
  const rows = await db
    .delete(oauthArtifacts)
    .where(eq(oauthArtifacts.clientId, clientId))
    .returning({ grantId: oauthArtifacts.grantId });
  return [...new Set(rows.map((r) => r.grantId).filter((g): g is string => !!g))];
}

/** The account's live grants (consents), newest first, with their clients. */
export async function listGrants(db: Executor, accountId: string) {
  return db
    .select({
      grantId: oauthArtifacts.grantId,
      payload: oauthArtifacts.payload,
      knowledgeBaseIds: oauthArtifacts.knowledgeBaseIds,
      createdAt: oauthArtifacts.createdAt,
      clientId: authClients.id,
      clientName: authClients.name,
      registeredVia: authClients.registeredVia,
      branding: authClients.branding,
    })
    .from(oauthArtifacts)
    .innerJoin(authClients, eq(authClients.id, oauthArtifacts.clientId))
    .where(
      and(
        eq(oauthArtifacts.model, 'Grant'),
        eq(oauthArtifacts.accountId, accountId),
        or(isNull(oauthArtifacts.expiresAt), gt(oauthArtifacts.expiresAt, new Date())),
      ),
    )
    .orderBy(desc(oauthArtifacts.createdAt));
}

export async function findGrantOwner(db: Executor, grantId: string): Promise<string | undefined> {
  const [row] = await db
    .select({ accountId: oauthArtifacts.accountId })
    .from(oauthArtifacts)
    .where(and(eq(oauthArtifacts.model, 'Grant'), eq(oauthArtifacts.grantId, grantId)))
    .limit(1);
  return row?.accountId ?? undefined;
}

/** Takes the whitelabel-customer role from every client of the account; answers how many changed. */
export async function demoteWhitelabelClients(db: Executor, accountId: string): Promise<number> {
  const rows = await db
    .update(authClients)
    .set({ roles: ['third-party'], updatedAt: new Date() })
    .where(and(eq(authClients.accountId, accountId), sql`'whitelabel-customer' = ANY(${authClients.roles})`))
    .returning({ id: authClients.id });
  return rows.length;
}
