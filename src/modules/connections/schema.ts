import { z } from 'zod';
import { CONNECTION_STATUSES } from '../../db/values.ts';
import { listQuery } from '../../lib/pagination.ts';
import { AUTH_TYPES } from '../providers/index.ts';

/** API shapes of the connections area (SPEC §2 Connection, §4 Connections). */

export const Connection = z
  .object({
    id: z.string(),
    accountId: z.string(),
    providerId: z.string(),
    providerUserId: z.string(),
    scopes: z.array(z.string()),
    status: z.enum(CONNECTION_STATUSES),
    expiresAt: z.iso.datetime().nullable().describe('token expiry; null when the token does not expire'),
    canRefresh: z.boolean().describe('whether a refresh may fix the connection'),
    authType: z
      .enum(AUTH_TYPES)
      .describe(
        "Extension: `oauth` (the provider's OAuth flow) or `api_key` (a token the user gave to POST /connections/from-catalog)",
      ),
    metadata: z.object({
      displayName: z.string(),
      email: z.string().optional(),
      avatar: z.string().optional(),
      providerName: z.string(),
      providerIcon: z.string().describe('path of the provider logo'),
    }),
    lastError: z.string().nullable().describe('Extension: why the last refresh or call failed, while not active'),
    fields: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        "Extension: the values given when connecting, by the provider's field names (a subdomain, a shop, a region, a Salesforce login domain); absent when none",
      ),
    apiBaseUrl: z
      .string()
      .optional()
      .describe(
        "Extension: where this connection's API calls go, when it is built from connection values (Salesforce: the instance URL from the token answer; Zendesk: the subdomain)",
      ),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Connection' });
export type Connection = z.infer<typeof Connection>;

const ConnectionId = z.string().min(1).max(100);
export const ConnectionParams = z.object({ connectionId: ConnectionId });

const StatusShorthand = z.union([z.string().max(200), z.array(z.string().max(50)).max(10)]);

export const ListConnectionsQuery = listQuery(['createdAt', 'updatedAt']).extend({
  filter: z
    .string()
    .max(4000)
    .optional()
    .describe(
      'URL-encoded JSON, MongoDB-style: fields status, providerId, createdAt, updatedAt; operators $eq $ne $in $nin ' +
        '(all fields) and $gt $gte $lt $lte (dates). Example: {"status":{"$in":["active","error"]},"createdAt":{"$gte":"2025-01-01"}}',
    ),
  status: StatusShorthand.optional().describe('shorthand for filter {"status": ...}; comma-separated for several'),
  'filter[status]': StatusShorthand.optional().describe('the same shorthand'),
});
export type ListConnectionsQuery = z.infer<typeof ListConnectionsQuery>;

const RedirectUrl = z.url().max(2000);
const ProviderId = z.string().min(1).max(100);

export const InitiateConnection = z
  .object({
    providerId: ProviderId,
    redirectUrl: RedirectUrl.describe(
      "where the user returns: APP_URL's origin or a redirect URI of your auth clients",
    ),
    providerParams: z
      .record(z.string().max(64), z.union([z.string().max(500), z.array(z.string().max(200)).max(50)]))
      .optional()
      .describe(
        "values of the provider's connection fields (`connectFields` in GET /providers: a subdomain, shop, region or site, each checked against its pattern: 422 naming it otherwise), `scopes` (extra provider scopes), `login_hint`, `prompt`",
      ),
  })
  .meta({ id: 'InitiateConnection' });
export type InitiateConnection = z.infer<typeof InitiateConnection>;

export const InitiateResponse = z
  .object({
    authorizationUrl: z
      .string()
      .describe(
        "Ours (GET /api/v1/connections/authorize?state=...): open it in the user's browser, once; it binds the flow to that browser and redirects to the provider",
      ),
    providerMetadata: z.object({ name: z.string(), logoUrl: z.string(), description: z.string() }),
  })
  .meta({ id: 'InitiateConnectionResponse' });
export type InitiateResponse = z.infer<typeof InitiateResponse>;

export const AuthorizeQuery = z.object({ state: z.string().min(1).max(200) });

export const CallbackQuery = z.object({
  code: z.string().max(4000).optional(),
  state: z.string().max(200).optional(),
  error: z.string().max(200).optional(),
  error_description: z.string().max(2000).optional(),
});
export type CallbackQuery = z.infer<typeof CallbackQuery>;

export const PendingParams = z.object({ pendingId: z.string().min(1).max(100) });

export const PendingField = z.object({
  name: z.string(),
  label: z.string(),
  description: z.string().optional(),
  placeholder: z.string().optional(),
  pattern: z.string().describe('the value must match this (anchored) regular expression'),
});

export const PendingFields = z
  .object({
    pendingId: z.string(),
    providerId: z.string(),
    providerMetadata: z.object({ name: z.string(), logoUrl: z.string(), description: z.string() }),
    fields: z.array(PendingField),
    expiresAt: z.iso.datetime(),
  })
  .meta({ id: 'PendingConnectionFields' });
export type PendingFields = z.infer<typeof PendingFields>;

export const FinalizeBody = z
  .object({ fields: z.record(z.string().max(64), z.string().max(500)) })
  .meta({ id: 'FinalizeConnection' });
export type FinalizeBody = z.infer<typeof FinalizeBody>;

export const FinalizeResponse = z
  .object({
    connectionId: z.string(),
    redirectUrl: z.string().describe('where to send the user now (carries connectionId)'),
  })
  .meta({ id: 'FinalizedConnection' });
export type FinalizeResponse = z.infer<typeof FinalizeResponse>;

export const FromCatalogInitiate = z
  .object({ catalogEntryId: ProviderId.describe('a provider id'), redirectUrl: RedirectUrl })
  .meta({ id: 'FromCatalogInitiateOAuth' });
export type FromCatalogInitiate = z.infer<typeof FromCatalogInitiate>;

export const FromCatalogCreate = z
  .object({
    catalogEntryId: ProviderId.describe('a provider id'),
    bearerToken: z
      .string()
      .min(1)
      .max(8000)
      .describe('a token the provider issued (API key, personal access token), sent as the provider file says'),
    fields: z
      .record(z.string().max(64), z.string().max(500))
      .optional()
      .describe("Extension: the values the provider's `apiKey.fields` name (e.g. site, email)"),
  })
  .meta({ id: 'FromCatalogCreate' });
export type FromCatalogCreate = z.infer<typeof FromCatalogCreate>;

export const ExecuteParams = z.object({
  providerId: ProviderId,
  toolName: z.string().min(1).max(100),
});

export const ExecuteBody = z
  .object({
    connectionId: ConnectionId,
    arguments: z.record(z.string(), z.unknown()).default({}),
  })
  .meta({ id: 'ExecuteProviderTool' });
export type ExecuteBody = z.infer<typeof ExecuteBody>;

export const ExecuteResponse = z
  .object({
    providerId: z.string(),
    toolName: z.string(),
    connectionId: z.string(),
    result: z.unknown().describe('the provider answer, shaped: kept fields, long strings cut, size capped'),
  })
  .meta({ id: 'ProviderToolResult' });
export type ExecuteResponse = z.infer<typeof ExecuteResponse>;
