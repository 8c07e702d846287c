import { and, asc, desc, eq, gt, isNotNull, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db, Executor } from '../../db/client.ts';
import {
  type AuthClientRow,
  accounts,
  authClients,
  type OAuthArtifactRow,
  type OAuthKeyRow,
  oauthArtifacts,
  oauthKeys,
} from '../../db/schema/index.ts';
import { sha256Hex } from '../../lib/ids.ts';

/**
 * All SQL of the OAuth server: oidc-provider's storage (adapter.ts: clients and artifacts, under the SHA-256 of
 * their id), grants read outside it (the consent screen's remembered grant, the grant behind an access token),
 * signing keys (keys.ts) and clients of metadata documents (client-metadata.ts).
 */

const key = (id: string) => sha256Hex(id);
const live = () => or(isNull(oauthArtifacts.expiresAt), gt(oauthArtifacts.expiresAt, new Date()));
const grantWithId = (grantId: string) =>
  and(eq(oauthArtifacts.model, 'Grant'), eq(oauthArtifacts.idHash, key(grantId)));

/** The newest live grant of this account to this client: consent is remembered per client and scope set. */
export async function findGrantId(db: Db, accountId: string, clientId: string): Promise<string | undefined> {
  const [row] = await db
    .select({ grantId: oauthArtifacts.grantId })
    .from(oauthArtifacts)
    .where(
      and(
        eq(oauthArtifacts.model, 'Grant'),
        eq(oauthArtifacts.accountId, accountId),
        eq(oauthArtifacts.clientId, clientId),
        live(),
      ),
    )
    .orderBy(desc(oauthArtifacts.createdAt))
    .limit(1);
  return row?.grantId ?? undefined;
}

/** The live grant with this id, with its account's balance and its client's roles and scopes. */
export async function grantOfToken(db: Db, grantId: string) {
  const [row] = await db
    .select({
      accountId: oauthArtifacts.accountId,
      clientId: oauthArtifacts.clientId,
      roles: authClients.roles,
      allowedScopes: authClients.allowedScopes,
      knowledgeBaseIds: oauthArtifacts.knowledgeBaseIds,
      creditBalance: accounts.creditBalance,
    })
    .from(oauthArtifacts)
    .innerJoin(accounts, eq(accounts.id, oauthArtifacts.accountId))
    .innerJoin(authClients, eq(authClients.id, oauthArtifacts.clientId))
    .where(and(grantWithId(grantId), live()))
    .limit(1);
  return row;
}

// ---- Grants and artifacts (oidc-provider's storage) --------------------------------------------------

/** Deletes a grant and everything issued under it. */
export async function revokeGrantArtifacts(db: Db, grantId: string): Promise<number> {
  const rows = await db
    .delete(oauthArtifacts)
    .where(or(eq(oauthArtifacts.grantId, grantId), grantWithId(grantId)))
    .returning({ model: oauthArtifacts.model });
  return rows.length;
}

/** The knowledge bases a grant is limited to; null when it may use all (or is not found). */
export async function grantKnowledgeBases(db: Db, grantId: string): Promise<string[] | null> {
  const [row] = await db
    .select({ ids: oauthArtifacts.knowledgeBaseIds })
    .from(oauthArtifacts)
    .where(grantWithId(grantId))
    .limit(1);
  return row?.ids ?? null;
}

/** Sets (or with null lifts) a grant's limit to some knowledge bases. */
export async function setGrantKnowledgeBases(db: Db, grantId: string, ids: readonly string[] | null): Promise<void> {
  await db
    .update(oauthArtifacts)
    .set({ knowledgeBaseIds: ids ? [...ids] : null })
    .where(grantWithId(grantId));
}

/** Removes expired artifacts; run now and then. */
export async function sweepExpiredArtifacts(db: Db, now = new Date()): Promise<number> {
  const rows = await db
    .delete(oauthArtifacts)
    .where(lt(oauthArtifacts.expiresAt, new Date(now.getTime() - 60_000)))
    .returning({ model: oauthArtifacts.model });
  return rows.length;
}

/** Writes an artifact under the hash of its id, replacing the one stored under it. */
export async function upsertArtifact(
  db: Db,
  values: Omit<typeof oauthArtifacts.$inferInsert, 'idHash'>,
  id: string,
): Promise<void> {
  const row = { ...values, idHash: key(id) };
  await db
    .insert(oauthArtifacts)
    .values(row)
    .onConflictDoUpdate({
      target: [oauthArtifacts.model, oauthArtifacts.idHash],
      set: {
        payload: row.payload,
        grantId: row.grantId,
        uidHash: row.uidHash,
        accountId: row.accountId,
        clientId: row.clientId,
        expiresAt: row.expiresAt,
      },
    });
}

/** The unexpired artifact of `model` with this id (or, `byUid`, with this uid). */
export async function findLiveArtifact(
  db: Db,
  model: string,
  idOrUid: string,
  byUid = false,
): Promise<OAuthArtifactRow | undefined> {
  const column = byUid ? oauthArtifacts.uidHash : oauthArtifacts.idHash;
  const [row] = await db
    .select()
    .from(oauthArtifacts)
    .where(and(eq(oauthArtifacts.model, model), eq(column, key(idOrUid)), live()))
    .limit(1);
  return row;
}

/**
 * Marks the artifact used, atomically: of two requests racing with one refresh token (or code), one wins.
 * `won` false is reuse (or an unknown id); `grantId` is then the grant the artifact was issued under.
 */
export async function consumeArtifact(
  db: Db,
  model: string,
  id: string,
): Promise<{ won: true } | { won: false; grantId: string | null }> {
  const hash = key(id);
  const won = await db
    .update(oauthArtifacts)
    .set({ consumedAt: new Date() })
    .where(and(eq(oauthArtifacts.model, model), eq(oauthArtifacts.idHash, hash), isNull(oauthArtifacts.consumedAt)))
    .returning({ grantId: oauthArtifacts.grantId });
  if (won.length > 0) return { won: true };
  const [row] = await db
    .select({ grantId: oauthArtifacts.grantId })
    .from(oauthArtifacts)
    .where(and(eq(oauthArtifacts.model, model), eq(oauthArtifacts.idHash, hash)))
    .limit(1);
  return { won: false, grantId: row?.grantId ?? null };
}

export async function deleteArtifact(db: Db, model: string, id: string): Promise<void> {
  await db.delete(oauthArtifacts).where(and(eq(oauthArtifacts.model, model), eq(oauthArtifacts.idHash, key(id))));
}

/** Deletes the artifacts of `model` issued under a grant. */
export async function deleteArtifactsOfGrant(db: Db, model: string, grantId: string): Promise<void> {
  await db.delete(oauthArtifacts).where(and(eq(oauthArtifacts.model, model), eq(oauthArtifacts.grantId, grantId)));
}

// ---- Clients -------------------------------------------------------------------------------------------

export async function findClient(db: Db, id: string): Promise<AuthClientRow | undefined> {
  const [row] = await db.select().from(authClients).where(eq(authClients.id, id)).limit(1);
  return row;
}

/** A dynamically registered client (RFC 7591); an id taken already keeps its row. */
export async function insertClientOnce(db: Db, row: typeof authClients.$inferInsert): Promise<void> {
  await db.insert(authClients).values(row).onConflictDoNothing();
}

export async function deleteClient(db: Db, id: string): Promise<void> {
  await db.delete(authClients).where(eq(authClients.id, id));
}

/**
 * Writes a metadata document's client as the document describes it now; undefined when its id is taken by a
 * client registered another way (their ids are never URLs, but still).
 */
export async function upsertMetadataDocumentClient(
  db: Db,
  client: Omit<AuthClientRow, 'createdAt' | 'updatedAt'>,
): Promise<AuthClientRow | undefined> {
  const [row] = await db
    .insert(authClients)
    .values(client)
    .onConflictDoUpdate({
      target: authClients.id,
      set: {
        name: client.name,
        redirectUris: client.redirectUris,
        allowedScopes: client.allowedScopes,
        metadata: client.metadata,
        updatedAt: new Date(),
      },
      setWhere: and(eq(authClients.registeredVia, 'metadata-document')),
    })
    .returning();
  return row;
}

// ---- Signing keys and cookie secrets ----------------------------------------------------------------------

const KEY_CREATION_LOCK = 727_274_002; // arbitrary, constant (migrations use ...001)

/** Every stored key, newest first. */
export function listKeys(db: Executor): Promise<OAuthKeyRow[]> {
  return db.select().from(oauthKeys).orderBy(desc(oauthKeys.createdAt), desc(oauthKeys.id));
}

/** Runs `work` in a transaction holding the key lock: one instance creates or rotates keys at a time. */
export function withKeyLock<T>(db: Db, work: (tx: Executor) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${KEY_CREATION_LOCK})`);
    return work(tx);
  });
}

export async function insertKey(db: Executor, row: typeof oauthKeys.$inferInsert): Promise<void> {
  await db.insert(oauthKeys).values(row);
}

/** Retires every active signing key; answers their ids. */
export async function retireSigningKeys(db: Executor, now: Date): Promise<string[]> {
  const rows = await db
    .update(oauthKeys)
    .set({ retiredAt: now })
    .where(and(eq(oauthKeys.use, 'sig'), isNull(oauthKeys.retiredAt)))
    .returning({ id: oauthKeys.id });
  return rows.map((r) => r.id);
}

/** Deletes signing keys retired before `cutoff`; answers their ids. */
export async function deleteSigningKeysRetiredBefore(db: Executor, cutoff: Date): Promise<string[]> {
  const rows = await db
    .delete(oauthKeys)
    .where(and(eq(oauthKeys.use, 'sig'), isNotNull(oauthKeys.retiredAt), lt(oauthKeys.retiredAt, cutoff)))
    .returning({ id: oauthKeys.id });
  return rows.map((r) => r.id);
}

/** The signing keys' ids and whether each is retired, oldest first. */
export function signingKeyStates(db: Db): Promise<{ id: string; retiredAt: Date | null }[]> {
  return db
    .select({ id: oauthKeys.id, retiredAt: oauthKeys.retiredAt })
    .from(oauthKeys)
    .where(eq(oauthKeys.use, 'sig'))
    .orderBy(asc(oauthKeys.createdAt), asc(oauthKeys.id));
}
