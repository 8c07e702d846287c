/** The providers area's front door: what other areas, transports and the composition root use from it. */

export type { CatalogProvider, ClientCredentials } from './catalog.ts';
export {
  beforeAuthorization,
  connectFields,
  findTool,
  isProviderConfigured,
  providerCatalog,
  providerCredentials,
  providerCredentialVariables,
  withFieldDefaults,
} from './catalog.ts';
export type {
  ApiKeySettings,
  FinalizeField,
  OAuthProviderDefinition,
  OAuthSettings,
  ProviderDefinition,
  ToolDefinition,
} from './definition.ts';
export { hasOAuth, URL_PLACEHOLDER } from './definition.ts';
export { getPath } from './json-path.ts';
export type { BuiltRequest } from './request.ts';
export {
  buildToolRequest,
  fillBaseUrl,
  fillUrl,
  nextPageRequest,
  providerErrorMessage,
  rateLimitDelaySeconds,
  ToolArgumentError,
} from './request.ts';
export { mergePages, shapeToolResponse } from './response.ts';
export { providerLogoRoutes, providerRoutes } from './routes.ts';
export type { AuthType, Provider, ProviderTool, ToolSearchHit, ToolSearchQuery } from './schema.ts';
export { AUTH_TYPES } from './schema.ts';
export { filterCatalog, getProvider, listProviders, listProviderTools, logoPath } from './service.ts';
export { searchCatalogTools, toolSearchWords } from './tool-search.ts';
