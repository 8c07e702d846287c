import { and, desc, eq, gt, isNull, or } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { accounts, authClients, oauthArtifacts } from '../../db/schema/index.ts';
import { sha256Hex } from '../../lib/ids.ts';

/**
 * The OAuth server's reads of grants outside oidc-provider's own storage (adapter.ts): the consent screen's
 * remembered grant and the grant behind an access token.
 */

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
        or(isNull(oauthArtifacts.expiresAt), gt(oauthArtifacts.expiresAt, new Date())),
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
    .where(
      and(
        eq(oauthArtifacts.model, 'Grant'),
        eq(oauthArtifacts.idHash, sha256Hex(grantId)),
        or(isNull(oauthArtifacts.expiresAt), gt(oauthArtifacts.expiresAt, new Date())),
      ),
    )
    .limit(1);
  return row;
}
