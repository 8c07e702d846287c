import { z } from 'zod';
import { CLIENT_ROLES } from '../../access/oauth/policy.ts';
import { redirectUriProblem } from '../../access/oauth/redirect-uris.ts';
import { ALL_SCOPES } from '../../access/scopes.ts';

const MAX_LOGO_BYTES = 100 * 1024;
const LOGO_DATA_URI = /^data:image\/(png|jpeg|gif|webp|svg\+xml);base64,([A-Za-z0-9+/]+={0,2})$/;

export const ClientRole = z.enum(CLIENT_ROLES);
const ScopeName = z.enum(ALL_SCOPES as [string, ...string[]]);

const RedirectUri = z
  .string()
  .max(2000)
  .superRefine((uri, ctx) => {
    const problem = redirectUriProblem(uri, { allowCustomScheme: false });
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export const Branding = z
  .object({
    logo: z
      .string()
      .max(Math.ceil((MAX_LOGO_BYTES * 4) / 3) + 64, 'logo must be at most 100 KB')
      .refine((v) => {
        const m = LOGO_DATA_URI.exec(v);
        return !!m && Buffer.byteLength(m[2] ?? '', 'base64') <= MAX_LOGO_BYTES;
      }, 'logo must be a base64 data URI of a PNG, JPEG, GIF, WEBP or SVG image of at most 100 KB')
      .optional(),
    description: z.string().trim().max(500).optional(),
    brandColor: z
      .string()
      .regex(/^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'brandColor must be a hex colour such as #0b5cad')
      .optional(),
  })
  .strict()
  .meta({ id: 'AuthClientBranding' });
export type Branding = z.infer<typeof Branding>;

export const CreateAuthClient = z
  .object({
    name: z.string().trim().min(1).max(100),
    type: z
      .enum(['public', 'confidential'])
      .describe('public: SPAs and mobile apps (PKCE, no secret); confidential: servers'),
    roles: z
      .array(ClientRole)
      .min(1)
      .max(2)
      .default(['third-party'])
      .describe('`whitelabel-customer` only for accounts invited to it'),
    redirectUris: z.array(RedirectUri).min(1).max(20).describe('https, or http on a loopback host; exact match'),
    allowedScopes: z
      .array(ScopeName)
      .min(1)
      .max(ALL_SCOPES.length)
      .optional()
      .describe('default: every scope the roles allow'),
    branding: Branding.optional().describe('shown on the consent screen'),
  })
  .strict()
  .meta({ id: 'CreateAuthClient' });
export type CreateAuthClient = z.infer<typeof CreateAuthClient>;

export const UpdateAuthClient = z
  .object({
    name: z.string().trim().min(1).max(100).optional(),
    roles: z.array(ClientRole).min(1).max(2).optional(),
    redirectUris: z.array(RedirectUri).min(1).max(20).optional(),
    allowedScopes: z.array(ScopeName).min(1).max(ALL_SCOPES.length).optional(),
    branding: Branding.optional().describe('replaces the branding'),
  })
  .strict()
  .meta({ id: 'UpdateAuthClient' });
export type UpdateAuthClient = z.infer<typeof UpdateAuthClient>;

export const AuthClient = z
  .object({
    id: z.string(),
    clientId: z.string().describe('the OAuth client_id (same as id)'),
    name: z.string(),
    type: z.enum(['public', 'confidential']),
    roles: z.array(z.string()),
    redirectUris: z.array(z.string()),
    allowedScopes: z.array(z.string()),
    branding: Branding,
    tokenEndpointAuthMethod: z.enum(['none', 'client_secret_basic', 'client_secret_post']),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'AuthClient' });
export type AuthClient = z.infer<typeof AuthClient>;

export const CreatedAuthClient = AuthClient.extend({
  clientSecret: z.string().optional().describe('confidential clients only: shown once, store it now'),
}).meta({ id: 'CreatedAuthClient' });
export type CreatedAuthClient = z.infer<typeof CreatedAuthClient>;

export const ClientSecret = z
  .object({
    clientId: z.string(),
    clientSecret: z.string().describe('shown once; the previous secret has stopped working'),
  })
  .meta({ id: 'AuthClientSecret' });
export type ClientSecret = z.infer<typeof ClientSecret>;

export const ClientParams = z.object({ clientId: z.string().min(1).max(100) });
