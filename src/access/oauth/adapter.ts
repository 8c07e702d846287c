import type { Db } from '../../db/client.ts';
import type { AuthClientRow } from '../../db/schema/index.ts';
import type { KeyRing } from '../../lib/crypto.ts';
import { sha256Hex } from '../../lib/ids.ts';
import { ALL_SCOPES } from '../scopes.ts';
import { isMetadataDocumentId, MetadataDocumentError, type MetadataDocuments } from './client-metadata.ts';
import { ALLOWED_SCOPES_PROPERTY, effectiveClientScopes, OIDC_SCOPES } from './policy.ts';
import * as repo from './repo.ts';

/**
 * oidc-provider's storage on our database. Artifacts live in `oauth_artifacts` under the SHA-256 of their id
 * (a refresh token's id is the token), with the clear id dropped from the stored payload and put back on
 * read. Clients come from `auth_clients`, whose secrets are sealed with the key ring.
 */
type Payload = Record<string, unknown>;

/** Models whose id is a bearer secret: their payload never keeps it in clear. */
const SECRET_IDS = new Set([
  'AuthorizationCode',
  'RefreshToken',
  'AccessToken',
  'ClientCredentials',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'PushedAuthorizationRequest',
  'RegistrationAccessToken',
  'InitialAccessToken',
  'Session',
  'Interaction',
  'PreAuthorizedCode',
]);

/** Models tied to a grant: revoking the grant deletes them. */
const GRANTABLE = [
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'PreAuthorizedCode',
];

export interface AdapterDeps {
  db: Db;
  keyRing: KeyRing;
  /** Called when a grant goes (revocation, refresh token reuse): evicts cached access-token actors. */
  onGrantRevoked(grantId: string): void;
  /** Clients whose id is the https URL of their metadata document. */
  metadataDocuments: MetadataDocuments;
}

/** The oidc-provider metadata of a client row. */
export function clientMetadata(row: AuthClientRow, keyRing: KeyRing): Payload {
  const scopes = effectiveClientScopes(row.allowedScopes, row.roles);
  const meta: Payload = {
    ...row.metadata,
    client_id: row.id,
    client_name: row.name,
    redirect_uris: row.redirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    scope: scopes.filter((s) => (OIDC_SCOPES as readonly string[]).includes(s)).join(' ') || undefined,
    [ALLOWED_SCOPES_PROPERTY]: scopes,
    client_id_issued_at: Math.floor(row.createdAt.getTime() / 1000),
  };
  if (row.type === 'public') {
    meta.token_endpoint_auth_method = 'none';
    delete meta.client_secret;
  } else {
    const method = row.metadata.token_endpoint_auth_method;
    meta.token_endpoint_auth_method = method === 'client_secret_post' ? method : 'client_secret_basic';
    if (row.secretCiphertext) meta.client_secret = keyRing.decrypt(row.secretCiphertext, row.id);
    meta.client_secret_expires_at = 0;
  }
  return meta;
}

/** Keys of RFC 7591 metadata kept for a dynamically registered client (the rest is in columns). */
const KEPT_METADATA = [
  'application_type',
  'token_endpoint_auth_method',
  'logo_uri',
  'client_uri',
  'policy_uri',
  'tos_uri',
  'contacts',
  'software_id',
  'software_version',
  'id_token_signed_response_alg',
];

export function createAdapterClass(deps: AdapterDeps) {
  const { db, keyRing } = deps;

  class ClientAdapter {
    /** Dynamic registration (RFC 7591): always a `third-party` client without an owner. */
    async upsert(id: string, payload: Payload): Promise<void> {
      const secret = typeof payload.client_secret === 'string' ? payload.client_secret : undefined;
      const metadata = Object.fromEntries(KEPT_METADATA.filter((k) => k in payload).map((k) => [k, payload[k]]));
      // The registration hook (provider.ts) has put every scope asked for in ALLOWED_SCOPES_PROPERTY.
      const asked = payload[ALLOWED_SCOPES_PROPERTY];
      const roles = ['third-party'];
      const allowed = effectiveClientScopes(Array.isArray(asked) ? (asked as string[]) : ALL_SCOPES, roles);
      await repo.insertClientOnce(db, {
        id,
        accountId: null,
        name: typeof payload.client_name === 'string' ? payload.client_name.slice(0, 200) : 'Unnamed app',
        type: secret ? 'confidential' : 'public',
        roles,
        redirectUris: (payload.redirect_uris as string[] | undefined) ?? [],
        allowedScopes: allowed,
        branding: {},
        secretCiphertext: secret ? keyRing.encrypt(secret, id) : null,
        metadata,
        registeredVia: 'dynamic',
      });
    }
    async find(id: string): Promise<Payload | undefined> {
      // No client id holds a NUL, and PostgreSQL would refuse the look-up: unknown client, not a 500.
      if (id.includes('\0')) return undefined;
      if (isMetadataDocumentId(id)) {
        try {
          return clientMetadata(await deps.metadataDocuments.find(id), keyRing);
        } catch (err) {
          if (!(err instanceof MetadataDocumentError)) throw err;
          // Loaded already: only oidc-provider calls its adapter. invalid_client, never a 500.
          const { errors } = await import('oidc-provider');
          throw new errors.InvalidClient(err.message);
        }
      }
      const row = await repo.findClient(db, id);
      return row ? clientMetadata(row, keyRing) : undefined;
    }
    async destroy(id: string): Promise<void> {
      await repo.deleteClient(db, id);
    }
    async consume(): Promise<void> {}
    async findByUid(): Promise<undefined> {
      return undefined;
    }
    async findByUserCode(): Promise<undefined> {
      return undefined;
    }
    async revokeByGrantId(): Promise<void> {}
  }

  class ArtifactAdapter {
    constructor(readonly model: string) {}

    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      const stored = { ...payload };
      if (SECRET_IDS.has(this.model)) delete stored.jti;
      // The session cookie holds the session's id (hashed above); its uid is an index, kept as given.
      const uid = this.model === 'Session' && typeof payload.uid === 'string' ? payload.uid : undefined;
      await repo.upsertArtifact(
        db,
        {
          model: this.model,
          payload: stored,
          grantId: typeof payload.grantId === 'string' ? payload.grantId : this.model === 'Grant' ? id : null,
          uidHash: uid ? sha256Hex(uid) : null,
          accountId: typeof payload.accountId === 'string' ? payload.accountId : null,
          clientId: typeof payload.clientId === 'string' ? payload.clientId : null,
          expiresAt: expiresIn ? new Date(Date.now() + expiresIn * 1000) : null,
        },
        id,
      );
    }

    private async load(idOrUid: string, byUid: boolean): Promise<Payload | undefined> {
      const row = await repo.findLiveArtifact(db, this.model, idOrUid, byUid);
      if (!row) return undefined;
      const payload: Payload = { ...row.payload };
      if (!byUid && SECRET_IDS.has(this.model)) payload.jti = idOrUid;
      if (row.consumedAt) payload.consumed = Math.floor(row.consumedAt.getTime() / 1000);
      return payload;
    }

    async find(id: string): Promise<Payload | undefined> {
      return this.load(id, false);
    }

    async findByUid(uid: string): Promise<Payload | undefined> {
      return this.load(uid, true);
    }

    async findByUserCode(): Promise<undefined> {
      return undefined;
    }

    /**
     * Marks the artifact used, atomically: of two requests racing with one refresh token (or code), one wins;
     * the other is reuse, which revokes the grant (RFC 9700 §4.14.2) and answers invalid_grant.
     */
    async consume(id: string): Promise<void> {
      const result = await repo.consumeArtifact(db, this.model, id);
      if (result.won) return;
      if (result.grantId) {
        await repo.revokeGrantArtifacts(db, result.grantId);
        deps.onGrantRevoked(result.grantId);
      }
      // Loaded already: only oidc-provider calls its adapter.
      const { errors } = await import('oidc-provider');
      throw new errors.InvalidGrant(`${this.model === 'RefreshToken' ? 'refresh token' : 'grant'} already used`);
    }

    async destroy(id: string): Promise<void> {
      await repo.deleteArtifact(db, this.model, id);
      if (this.model === 'Grant') deps.onGrantRevoked(id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      if (!GRANTABLE.includes(this.model)) return;
      await repo.deleteArtifactsOfGrant(db, this.model, grantId);
      deps.onGrantRevoked(grantId);
    }
  }

  return (model: string) => (model === 'Client' ? new ClientAdapter() : new ArtifactAdapter(model));
}
