import { z } from 'zod';
import { isValidPath } from './json-path.ts';

/**
 * The provider file format (`providers/<id>.json`); the API shapes of §2 Provider and provider tool are in
 * schema.ts.
 *
 * Placeholders, two kinds so literal braces (GraphQL) need no escaping:
 * - `{name}` in URLs: in a tool's `path` it is a tool parameter (URL-encoded; `{+name}` keeps `/`), in a base
 *   URL, authorization/token/user-info URL it is a connection variable (a finalize field, a value read from
 *   the token response, or one found by the discovery request).
 * - `{{name}}` in query values, headers and the body template: a tool parameter. A string that is exactly
 *   `{{name}}` takes the argument as it is (number, array, object); inside longer text it is stringified.
 */

const ID = /^[a-z0-9][a-z0-9-]{0,62}$/;
const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;
export const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** `{name}` / `{+name}` in URLs and paths. */
export const URL_PLACEHOLDER = /\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}/g;
/** `{{name}}` in values. */
export const VALUE_PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

const JsonPath = z.string().min(1).refine(isValidPath, 'must be a JSON path such as data.items[0].id');

const PathOrPaths = z.union([JsonPath, z.array(JsonPath).min(1)]);

const Headers = z.record(
  z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be a valid header name'),
  z.string().regex(/^[^\r\n]*$/, 'must be one line'),
);

/** An http(s) URL in which `{var}` placeholders may stand for parts (a leading one for a whole origin). */
const TemplateUrl = z.string().refine((s) => {
  const probe = s.replace(/^\{[A-Za-z_][A-Za-z0-9_]*\}/, 'https://placeholder.invalid').replace(URL_PLACEHOLDER, 'x');
  try {
    const u = new URL(probe);
    return u.protocol === 'https:' || u.protocol === 'http:';
  } catch {
    return false;
  }
}, 'must be an http(s) URL (placeholders like {subdomain} allowed)');

const RegexSource = z.string().refine((s) => {
  try {
    new RegExp(s, 'u');
    return true;
  } catch {
    return false;
  }
}, 'must be a valid regular expression');

/** A connection variable read from a JSON answer; `pattern` (anchored) guards what may enter a URL. */
const VarSource = z.strictObject({ path: JsonPath, pattern: RegexSource.optional() });

const HttpsUrl = z.url().refine((u) => u.startsWith('https://'), 'must be an https URL');

export const FinalizeField = z.strictObject({
  name: z.string().regex(VAR_NAME, 'must be an identifier such as subdomain'),
  label: z.string().min(1),
  description: z.string().optional(),
  placeholder: z.string().optional(),
  /** Anchored regular expression the value must match; it keeps URLs built from the value safe. */
  pattern: RegexSource,
  /** The value when the user gives none (Salesforce's `login`, Zoho's `com`); it must match `pattern`. */
  default: z.string().min(1).max(200).optional(),
  /** The user may leave it out (Atlassian's site: without it, the first site the user granted). */
  optional: z.boolean().default(false),
});
export type FinalizeField = z.infer<typeof FinalizeField>;

/** Where a user-info answer keeps who the user is; the OAuth side and the API-key side share it. */
const IdentityFields = z.strictObject({
  providerUserId: PathOrPaths,
  email: PathOrPaths.optional(),
  displayName: PathOrPaths.optional(),
  avatar: PathOrPaths.optional(),
});

const BearerAuth = z.strictObject({
  type: z.literal('bearer'),
  scheme: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9-]{0,30}$/, 'must be an authorization scheme such as Bearer')
    .default('Bearer'),
});
const HeaderAuth = z.strictObject({
  type: z.literal('header'),
  name: z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'must be a header name'),
});

export const OAuthSettings = z.strictObject({
  authorizationUrl: TemplateUrl,
  tokenUrl: TemplateUrl,
  /** Where refresh_token grants go when not to `tokenUrl` (Figma's `/v1/oauth/refresh`). */
  refreshUrl: TemplateUrl.optional(),
  revocationUrl: TemplateUrl.optional(),
  /** How the revocation call is made (defaults: RFC 7009, form field `token`, client authentication). */
  revocation: z
    .strictObject({
      method: z.enum(['POST', 'DELETE']).default('POST'),
      /** `client`: as at the token endpoint; `basic`: HTTP Basic with the client (GitHub); `bearer`: the token. */
      auth: z.enum(['client', 'basic', 'bearer', 'none']).default('client'),
      format: z.enum(['form', 'json', 'none']).default('form'),
      tokenParam: z.string().min(1).default('token'),
      token: z.enum(['access', 'refresh']).default('access'),
    })
    .prefault({}),
  /** Who the user is at the provider. Without `url`, the fields are read from the token response. */
  userInfo: z.strictObject({
    url: TemplateUrl.optional(),
    method: z.enum(['GET', 'POST']).default('GET'),
    headers: Headers.default({}),
    body: z.json().optional(),
    /** Each a path, or a list of paths of which the first holding a value wins (GitHub `name`, then `login`). */
    fields: IdentityFields,
  }),
  defaultScopes: z.array(z.string().min(1)).default([]),
  scopeSeparator: z.string().min(1).default(' '),
  /** The authorization parameter carrying the scopes (Slack user tokens: `user_scope`). */
  scopeParam: z.string().min(1).default('scope'),
  authorizationParams: z.record(z.string(), z.string()).default({}),
  tokenParams: z.record(z.string(), z.string()).default({}),
  tokenHeaders: Headers.default({}),
  tokenRequestFormat: z.enum(['form', 'json']).default('form'),
  tokenAuthMethod: z.enum(['client_secret_post', 'client_secret_basic']).default('client_secret_post'),
  pkce: z.boolean().default(false),
  /**
   * How the access token reaches the API when not as `Authorization: Bearer` (also for user info and
   * discovery): another scheme (Zoho's `Zoho-oauthtoken`) or a header of its own (Shopify's
   * `X-Shopify-Access-Token`).
   */
  apiAuth: z.discriminatedUnion('type', [BearerAuth, HeaderAuth]).optional(),
  /** Where the token endpoint's answer keeps things (RFC 6749 names by default). */
  tokenResponse: z
    .strictObject({
      // A list: the first path holding a value (Slack puts user tokens under authed_user, refreshes at the top).
      accessToken: PathOrPaths.default('access_token'),
      refreshToken: PathOrPaths.default('refresh_token'),
      expiresIn: PathOrPaths.default('expires_in'),
      scope: PathOrPaths.default('scope'),
      /** Connection variables from the token answer (Salesforce `instance_url`). */
      vars: z.record(z.string().regex(VAR_NAME), VarSource).default({}),
    })
    .prefault({}),
  /** Refresh this many seconds before expiry. */
  refreshBufferSeconds: z.number().int().min(0).max(86_400).default(300),
  /**
   * A request made with the new access token right after the exchange to find connection variables,
   * e.g. Atlassian's accessible-resources answering the cloud id of the user's site.
   */
  discovery: z
    .strictObject({
      url: TemplateUrl,
      headers: Headers.default({}),
      /**
       * For an answer listing several (Atlassian's sites): the item whose `path` equals `equals` (`{name}`
       * filled from the connection), or the first item when a name in it has no value; `vars` paths are then
       * read in that item.
       */
      select: z.strictObject({ path: JsonPath, equals: z.string().min(1).max(300) }).optional(),
      vars: z.record(z.string().regex(VAR_NAME), VarSource),
    })
    .optional(),
});
export type OAuthSettings = z.infer<typeof OAuthSettings>;

/** How a token the user pastes reaches the provider (see ApiKeySettings.auth). */
export const ApiKeyAuth = z
  .discriminatedUnion('type', [
    BearerAuth,
    HeaderAuth,
    /**
     * HTTP Basic: with `username` (a field, Jira's e-mail, Twilio's Account SID) the token is the password;
     * without it the token is the user name and `password` the password (Freshdesk: the key and `X`).
     */
    z.strictObject({
      type: z.literal('basic'),
      username: z.string().regex(VAR_NAME).optional(),
      password: z
        .string()
        .max(100)
        .regex(/^[^:\r\n]*$/, 'must be one line without ":"')
        .optional(),
    }),
    /**
     * Query parameters (Trello's `key` and `token`): the token as the parameter `name`, and `fields` maps more
     * parameter names to the fields given with the token.
     */
    z.strictObject({
      type: z.literal('query'),
      name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be a query parameter name'),
      fields: z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/), z.string().regex(VAR_NAME)).default({}),
    }),
  ])
  .prefault({ type: 'bearer' });
export type ApiKeyAuth = z.infer<typeof ApiKeyAuth>;

/**
 * A provider that takes a token the user holds (an API key, a personal access token, a bot token) through
 * `POST /connections/from-catalog`, beside OAuth. The token is checked by `whoami` before it is stored,
 * sealed like OAuth tokens; the connection cannot be refreshed.
 */
export const ApiKeySettings = z.strictObject({
  /** What the user pastes, as the form names it ("Personal access token"). */
  label: z.string().min(1).max(60),
  /** Where to find it and which permissions it needs. */
  help: z.string().min(1).max(300),
  /** The provider's page (or guide) where the user creates the token: the form links to it. */
  docsUrl: z.url().refine((u) => u.startsWith('https://'), 'must be an https URL'),
  /**
   * Values given with the token (a site, an e-mail address for basic auth), `{name}` in `baseUrl` and
   * `whoami.url`. The anchored pattern keeps a host built from the value on the provider's domain.
   */
  fields: z.array(FinalizeField).default([]),
  /**
   * How the token is sent: `bearer` as `Authorization: <scheme> <token>` (scheme `Bearer`, Discord's `Bot`),
   * `header` as the value of a header of its own (`X-Api-Key`), `basic` as HTTP Basic with the field named
   * by `username` (Jira's e-mail) and the token as the password.
   */
  auth: ApiKeyAuth,
  /** The API's base URL for token connections when it differs from the OAuth one (Jira Cloud's site). */
  baseUrl: TemplateUrl.optional(),
  /**
   * A cheap "who am I" request made with the token; a refusal is a 422 naming the provider's answer. Without
   * `fields` (a vendor whose keys name no user, such as a project's API key) it only checks the token, and the
   * connection is known by a hash of the token.
   */
  whoami: z.strictObject({
    url: TemplateUrl,
    method: z.enum(['GET', 'POST']).default('GET'),
    headers: Headers.default({}),
    body: z.json().optional(),
    fields: IdentityFields.optional(),
    /** Connection variables from the answer (Slack's team id). */
    vars: z.record(z.string().regex(VAR_NAME), VarSource).default({}),
  }),
});
export type ApiKeySettings = z.infer<typeof ApiKeySettings>;

export const ApiSettings = z.strictObject({
  baseUrl: TemplateUrl,
  headers: Headers.default({}),
  /** How the API says "slow down"; the HTTP client waits accordingly before one retry. */
  rateLimit: z
    .strictObject({
      statuses: z.array(z.number().int().min(400).max(599)).default([429]),
      retryAfterHeader: z.string().default('retry-after'),
      /** A header holding when the window resets (GitHub `x-ratelimit-reset`). */
      resetHeader: z.string().optional(),
      resetFormat: z.enum(['epoch-seconds', 'seconds', 'epoch-ms']).default('epoch-seconds'),
      /** A header counting requests left; `0` with one of `statuses` means rate limited (GitHub's 403). */
      remainingHeader: z.string().optional(),
      /** Seconds to wait, in the error body (Discord `retry_after`). */
      retryAfterBodyPath: JsonPath.optional(),
    })
    .prefault({}),
  /** APIs that fail with 200 (Slack `{ok: false, error}`, GraphQL `errors`). */
  errors: z
    .strictObject({
      okPath: JsonPath.optional(),
      messagePath: JsonPath.optional(),
    })
    .prefault({}),
});
export type ApiSettings = z.infer<typeof ApiSettings>;

// ---- tools ----

const JSON_TYPES = ['string', 'number', 'integer', 'boolean', 'array', 'object', 'null'] as const;

export interface JsonSchema {
  type?: (typeof JSON_TYPES)[number] | Array<(typeof JSON_TYPES)[number]>;
  description?: string;
  enum?: unknown[];
  default?: unknown;
  examples?: unknown[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
}

/**
 * The JSON Schema subset tools may use: the keywords every LLM function-calling API understands. Unknown
 * keywords are refused so a typo (`reqired`) fails at start-up instead of silently doing nothing.
 */
export const JsonSchema: z.ZodType<JsonSchema> = z.lazy(() =>
  z
    .strictObject({
      type: z.union([z.enum(JSON_TYPES), z.array(z.enum(JSON_TYPES)).min(1)]).optional(),
      description: z.string().optional(),
      enum: z.array(z.json()).min(1).optional(),
      default: z.json().optional(),
      examples: z.array(z.json()).optional(),
      format: z.enum(['date-time', 'date', 'time', 'email', 'uri', 'uuid']).optional(),
      pattern: RegexSource.optional(),
      minLength: z.number().int().min(0).optional(),
      maxLength: z.number().int().min(0).optional(),
      minimum: z.number().optional(),
      maximum: z.number().optional(),
      items: JsonSchema.optional(),
      minItems: z.number().int().min(0).optional(),
      maxItems: z.number().int().min(0).optional(),
      properties: z.record(z.string(), JsonSchema).optional(),
      required: z.array(z.string()).optional(),
      additionalProperties: z.union([z.boolean(), JsonSchema]).optional(),
    })
    .superRefine((s, ctx) => {
      if (s.type === undefined && s.enum === undefined) {
        ctx.addIssue({ code: 'custom', message: 'a schema needs a type (or an enum)' });
      }
      if (s.type === 'array' && !s.items) ctx.addIssue({ code: 'custom', message: 'an array schema needs items' });
      for (const r of s.required ?? []) {
        if (!s.properties || !Object.hasOwn(s.properties, r)) {
          ctx.addIssue({ code: 'custom', path: ['required'], message: `"${r}" is required but not a property` });
        }
      }
    }),
);

/** A tool's `parameters`: always an object schema whose properties each carry a description for the LLM. */
export const ToolParameters = z.strictObject({
  type: z.literal('object'),
  properties: z.record(
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'must be an identifier'),
    JsonSchema.refine((s) => !!s.description, 'each parameter needs a description'),
  ),
  required: z.array(z.string()).default([]),
  additionalProperties: z.boolean().default(false),
});
export type ToolParameters = z.infer<typeof ToolParameters>;

const MaxPages = z.number().int().min(1).max(20).default(3);

export const Pagination = z.discriminatedUnion('style', [
  z.strictObject({ style: z.literal('none') }),
  /** A cursor read from the answer, sent back as a query parameter or at a body path. */
  z.strictObject({
    style: z.literal('cursor'),
    cursorPath: JsonPath,
    param: z.string().min(1),
    in: z.enum(['query', 'body']).default('query'),
    /** When given, a false value here ends the walk even if a cursor is present (Notion `has_more`). */
    hasMorePath: JsonPath.optional(),
    maxPages: MaxPages,
  }),
  /** RFC 8288 `Link: <...>; rel="next"` (GitHub). */
  z.strictObject({ style: z.literal('link'), maxPages: MaxPages }),
  /** The next page's URL in the answer (Microsoft Graph `@odata.nextLink`, Salesforce `nextRecordsUrl`). */
  z.strictObject({ style: z.literal('next_url'), nextUrlPath: JsonPath, maxPages: MaxPages }),
  /** Numbered pages: `param` counts up from `start` until a page lists nothing. */
  z.strictObject({
    style: z.literal('page'),
    param: z.string().min(1),
    start: z.number().int().min(0).default(1),
    maxPages: MaxPages,
  }),
]);
export type Pagination = z.infer<typeof Pagination>;

const QueryValue = z.union([z.string(), z.number(), z.boolean()]);

export const ToolRequest = z.strictObject({
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
  /** Another base URL than the provider's (Google Drive uploads, Dropbox content). */
  baseUrl: TemplateUrl.optional(),
  path: z.string().regex(/^\/[^\s?#]*$/, 'must start with "/" and hold no spaces, "?" or "#"'),
  query: z.record(z.string().min(1), QueryValue).default({}),
  /** Array arguments in the query: `repeat` (`a=1&a=2`) or `comma` (`a=1,2`). */
  queryArrayFormat: z.enum(['repeat', 'comma']).default('repeat'),
  headers: Headers.default({}),
  /** The body template: any JSON, with `{{param}}` values, `$if` and `$each` objects, and `$rfc822`. */
  body: z.json().optional(),
  /** `text`: the filled template sent as it is (a file's content), typed by the tool's `Content-Type` header. */
  bodyFormat: z.enum(['json', 'form', 'text']).default('json'),
  pagination: Pagination.prefault({ style: 'none' }),
});
export type ToolRequest = z.infer<typeof ToolRequest>;

export const ToolResponse = z.strictObject({
  /** `text` for endpoints answering plain text (Drive export). */
  format: z.enum(['json', 'text']).default('json'),
  /** Where the list of items is; the shaped answer is `{items: [...]}` plus `keep`. */
  listPath: JsonPath.optional(),
  /** Paths kept in each item (or in the object when there is no list). */
  fields: z.array(JsonPath).min(1).optional(),
  /** Paths of the answer kept beside the list (totals, cursors). */
  keep: z.array(JsonPath).default([]),
  /** Fields holding base64url text (Gmail message parts), decoded to UTF-8. */
  decodeBase64: z.array(JsonPath).default([]),
  maxItems: z.number().int().min(1).max(1000).optional(),
  /** Strings longer than this are cut with a marker. */
  maxStringLength: z.number().int().min(100).max(100_000).default(5000),
  /** The whole shaped answer's size cap in bytes of JSON; beyond it items are dropped with a marker. */
  maxBytes: z.number().int().min(1000).max(200_000).default(20_000),
});
export type ToolResponse = z.infer<typeof ToolResponse>;

export const ToolDefinition = z.strictObject({
  name: z.string().regex(TOOL_NAME, 'must be snake_case, at most 64 characters'),
  /** Written for an LLM: what the tool does, when to use it, what it answers. */
  description: z.string().min(20).max(1024),
  /**
   * Requests in users' own words that this tool answers ("what's on my calendar tomorrow"): read by the tool
   * search only, never sent to a model.
   */
  examples: z.array(z.string().trim().min(3).max(200)).max(8).optional(),
  parameters: ToolParameters,
  mode: z.enum(['read', 'write']),
  request: ToolRequest,
  response: ToolResponse.prefault({}),
});
export type ToolDefinition = z.infer<typeof ToolDefinition>;

export const ProviderDefinition = z.strictObject({
  $schema: z.string().optional(),
  id: z.string().regex(ID, 'must be lower-case letters, digits and "-"'),
  label: z.string().min(1).max(100),
  description: z.string().min(1).max(500),
  /** Defaults to the logo the service serves (`providers/logos/<id>.svg` beside the file). */
  logoUrl: z.string().optional(),
  category: z.string().min(1).max(50),
  popular: z.boolean().default(false),
  /** `oauth`: connects through the vendor's OAuth flow (and, with `apiKey`, a token too); `api_key`: a token only. */
  authType: z.enum(['oauth', 'api_key']),
  allowMultipleConnections: z.boolean().default(false),
  /** The provider's API reference, for whoever maintains the file. */
  docsUrl: z.url().optional(),
  /**
   * `generated`: written by `npm run providers:generate` from a published API description (`generatedFrom`
   * names it; edit `catalog/curated/<id>.json`, not this file). `hand-written`: no usable description ships.
   */
  origin: z.enum(['generated', 'hand-written']).default('hand-written'),
  generatedFrom: z.string().min(1).max(300).optional(),
  /**
   * The vendor documentation the file's facts were checked against, for whoever maintains it: `oauth` the
   * page giving the authorize and token URLs, scopes and PKCE; `apiKey` the page on tokens; `api` the
   * published API description the tools come from.
   */
  sources: z
    .strictObject({
      oauth: HttpsUrl.optional(),
      apiKey: HttpsUrl.optional(),
      api: HttpsUrl.optional(),
    })
    .optional(),
  /** The provider also takes a token the user holds (API key, personal access token): ApiKeySettings. */
  apiKey: ApiKeySettings.optional(),
  /** Required when `authType` is `oauth`; absent when it is `api_key` (the vendor offers no OAuth). */
  oauth: OAuthSettings.optional(),
  finalizeFields: z.array(FinalizeField).default([]),
  api: ApiSettings,
  tools: z.array(ToolDefinition).min(1),
});
export type ProviderDefinition = z.infer<typeof ProviderDefinition>;
/** A provider connecting through OAuth (its `oauth` block is present). */
export type OAuthProviderDefinition = ProviderDefinition & { oauth: OAuthSettings };
export const hasOAuth = (def: ProviderDefinition): def is OAuthProviderDefinition => def.oauth !== undefined;
