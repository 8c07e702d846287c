import { z } from 'zod';
import type { FinalizeField } from './definition.ts';

/** The API shapes of §2 Provider and provider tool; the provider file format is definition.ts. */

// ---- API shapes (SPEC §2) ----

/** How a connection was made: the provider's OAuth flow, or a token the user pasted. */
export const AUTH_TYPES = ['oauth', 'api_key'] as const;
export type AuthType = (typeof AUTH_TYPES)[number];

/** A value the user gives when connecting, as the API shows it. */
const ProviderField = z.object({
  name: z.string(),
  label: z.string(),
  description: z.string().optional(),
  placeholder: z.string().optional(),
  pattern: z.string().describe('the value must match this (anchored) regular expression'),
  default: z.string().optional().describe('the value taken when none is given'),
  optional: z.boolean().optional().describe('true when the value may be left out'),
});

/** A field as the API shows it. */
export function providerField(f: FinalizeField): z.infer<typeof ProviderField> {
  return {
    name: f.name,
    label: f.label,
    ...(f.description ? { description: f.description } : {}),
    ...(f.placeholder ? { placeholder: f.placeholder } : {}),
    pattern: f.pattern,
    ...(f.default !== undefined ? { default: f.default } : {}),
    ...(f.optional ? { optional: true } : {}),
  };
}

export const Provider = z
  .object({
    id: z.string(),
    label: z.string(),
    description: z.string(),
    logoUrl: z.string().describe('Logo served by this service (or the URL the provider file names)'),
    category: z.string(),
    popular: z.boolean(),
    authType: z
      .enum(AUTH_TYPES)
      .describe('`oauth`, or `api_key` for a provider connecting only with a token the user holds'),
    allowMultipleConnections: z.boolean(),
    authTypes: z
      .array(z.enum(AUTH_TYPES))
      .describe(
        'Extension: the ways a user can connect on this server now: `oauth` (POST /connections/initiate) once ' +
          'PROVIDER_<ID>_CLIENT_ID and _CLIENT_SECRET are set; `api_key` (POST /connections/from-catalog with ' +
          'a token the user holds) when the provider takes one',
      ),
    configured: z.boolean().describe('Extension: whether users can connect now (authTypes is not empty)'),
    connectFields: z
      .array(ProviderField)
      .optional()
      .describe(
        'Extension: values POST /connections/initiate takes in `providerParams` for an OAuth connection (a ' +
          'subdomain, a shop, a region, a site); required unless `default` or `optional` says otherwise',
      ),
    apiKey: z
      .object({
        label: z.string(),
        help: z.string(),
        docsUrl: z.string().describe("the provider's page where the user creates the token"),
        fields: z
          .array(ProviderField)
          .describe('values POST /connections/from-catalog takes in `fields` with the token'),
      })
      .optional()
      .describe('Extension, for providers taking a token: what to paste, where to get it, what else to give'),
  })
  .meta({ id: 'Provider' });
export type Provider = z.infer<typeof Provider>;

export const ProviderTool = z
  .object({
    name: z.string(),
    description: z.string(),
    parameters: z.record(z.string(), z.unknown()).describe('JSON Schema object: type, properties, required'),
    mode: z.enum(['read', 'write']),
  })
  .meta({ id: 'ProviderTool' });
export type ProviderTool = z.infer<typeof ProviderTool>;

export const ProvidersQuery = z.object({
  category: z.string().max(50).optional().describe('Only providers of this category (e.g. storage, crm)'),
  q: z
    .string()
    .max(200)
    .optional()
    .describe('Only providers whose label, description, id or category hold every word, case-insensitively'),
});

export const ProviderParams = z.object({ providerId: z.string().min(1).max(100) });

export const ProviderToolsQuery = z.object({
  connectionId: z
    .string()
    .regex(/^conn_[A-Za-z0-9_-]{8,64}$/, 'must be a connection id (conn_...)')
    .optional()
    .describe('Only the tools usable on this connection'),
});

export const ToolSearchQuery = z.object({
  q: z
    .string()
    .trim()
    .min(1)
    .max(500)
    .describe('The request in plain words, e.g. "what is on my calendar tomorrow" or "archive this email"'),
  connected: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .describe(
      '`true`: only the tools of your active connections that you may run; `false` (default): the whole catalog',
    ),
  limit: z.coerce.number().int().min(1).max(50).default(10).describe('At most this many hits (1-50, default 10)'),
});
export type ToolSearchQuery = z.infer<typeof ToolSearchQuery>;

export const ToolSearchHit = z
  .object({
    providerId: z.string(),
    providerLabel: z.string(),
    name: z.string().describe("The tool's name within its provider (as in GET /providers/:providerId/tools)"),
    description: z.string(),
    parameters: z
      .record(z.string(), z.unknown())
      .describe('JSON Schema object of the input: type, properties, required'),
    mode: z.enum(['read', 'write']),
    score: z.number().describe('Relevance, higher first; comparable only within one answer'),
  })
  .meta({ id: 'ToolSearchHit' });
export type ToolSearchHit = z.infer<typeof ToolSearchHit>;
