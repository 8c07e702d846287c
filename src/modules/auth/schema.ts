import { z } from 'zod';
import { ALL_SCOPES } from '../../access/scopes.ts';
import { Account } from '../accounts/index.ts';

export const Signup = z
  .object({
    email: z.email().max(254),
    password: z.string().min(8, 'password must be at least 8 characters').max(256),
    name: z.string().trim().min(1).max(100),
  })
  .meta({ id: 'Signup' });
export type Signup = z.infer<typeof Signup>;

export const Authenticate = z
  .object({ email: z.string().min(1).max(254), password: z.string().min(1).max(256) })
  .meta({ id: 'Authenticate' });
export type Authenticate = z.infer<typeof Authenticate>;

export const SessionResponse = z
  .object({
    session_token: z.string().describe('sess_... ; send as Authorization: Bearer'),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int().describe('seconds'),
    account: Account,
  })
  .meta({ id: 'Session' });
export type SessionResponse = z.infer<typeof SessionResponse>;

const ScopeName = z.enum(ALL_SCOPES as [string, ...string[]]);
const Permission = z.enum(['read', 'read-write']);

export const CreatePat = z
  .object({
    name: z.string().trim().min(1).max(100),
    scopes: z.array(ScopeName).min(1).max(ALL_SCOPES.length),
    expires_in: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('seconds; default and maximum: PAT_DEFAULT_EXPIRES_IN and PAT_MAX_EXPIRES_IN'),
    provider_permissions: z.record(z.string().min(1).max(100), Permission).optional(),
    default_provider_permission: Permission.optional(),
    knowledge_base_ids: z
      .array(z.string().min(1).max(100))
      .min(1)
      .max(50)
      .optional()
      .describe('limit the token to these knowledge bases (extension); default: every base of the account'),
  })
  // Strict: a misspelt field (`expiresIn`) must not silently mint a token that lives the default 90 days.
  .strict()
  .meta({ id: 'CreatePersonalAccessToken' });
export type CreatePat = z.infer<typeof CreatePat>;

export const Pat = z
  .object({
    id: z.string(),
    name: z.string(),
    token_prefix: z.string().describe('the first characters of the token, to tell tokens apart'),
    scopes: z.array(z.string()),
    provider_permissions: z.record(z.string(), Permission),
    default_provider_permission: Permission,
    knowledge_base_ids: z.array(z.string()).nullable().describe('null: every knowledge base of the account'),
    expires_at: z.iso.datetime(),
    last_used_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'PersonalAccessToken' });
export type Pat = z.infer<typeof Pat>;

export const CreatedPat = Pat.extend({
  personal_access_token: z.string().describe('pat_... ; shown once, store it now'),
}).meta({ id: 'CreatedPersonalAccessToken' });
export type CreatedPat = z.infer<typeof CreatedPat>;

export const PatParams = z.object({ id: z.string().min(1).max(100) });
