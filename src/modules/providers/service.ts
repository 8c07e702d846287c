import type { Config } from '../../config.ts';
import type { PublicContext, ServiceContext } from '../../lib/context.ts';
import { NotFoundError } from '../../lib/errors.ts';
import { type CatalogProvider, isProviderConfigured, providerCatalog } from './catalog.ts';
import type { Provider, ProviderTool } from './schema.ts';

/** The path (under the origin) where the service serves a provider's logo. */
export function logoPath(providerId: string): string {
  return `/providers/logos/${providerId}.svg`;
}

export function toProvider(entry: CatalogProvider, config: Pick<Config, 'baseUrl' | 'providers'>): Provider {
  const d = entry.definition;
  return {
    id: d.id,
    label: d.label,
    description: d.description,
    logoUrl: d.logoUrl ?? `${config.baseUrl}${logoPath(d.id)}`,
    category: d.category,
    popular: d.popular,
    authType: d.authType,
    allowMultipleConnections: d.allowMultipleConnections,
    configured: isProviderConfigured(config, d.id),
  };
}

function entryOf(config: Pick<Config, 'providers'>, providerId: string): CatalogProvider {
  const entry = providerCatalog(config).get(providerId);
  if (!entry) throw new NotFoundError(`Provider ${providerId} not found`);
  return entry;
}

/** The whole catalog, configured or not: a client shows what exists and what an operator still must set up. */
export function listProviders(ctx: PublicContext): Provider[] {
  const config = ctx.deps.config;
  return providerCatalog(config).providers.map((p) => toProvider(p, config));
}

export function getProvider(ctx: ServiceContext, providerId: string): Provider {
  return toProvider(entryOf(ctx.deps.config, providerId), ctx.deps.config);
}

/**
 * A provider's tools as an LLM sees them, all of them. Narrowed to one connection and the caller's
 * permission: `listConnectionTools` (connections area), which owns connections.
 */
export function listProviderTools(ctx: Pick<ServiceContext, 'deps'>, providerId: string): ProviderTool[] {
  return entryOf(ctx.deps.config, providerId).definition.tools.map((t) => ({
    name: t.name,
    description: t.description,
    parameters: t.parameters,
    mode: t.mode,
  }));
}

/** A logo: the SVG beside the provider file, or a letter mark made from the label. Unknown ids are 404. */
export function getProviderLogo(ctx: PublicContext, providerId: string): string {
  const entry = entryOf(ctx.deps.config, providerId);
  return entry.logoSvg ?? letterMark(entry.definition.label);
}

function letterMark(label: string): string {
  const letter = (label.trim()[0] ?? '?').toUpperCase().replace(/[<>&"']/g, '?');
  return (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" role="img">' +
    '<rect width="64" height="64" rx="14" fill="#4b5563"/>' +
    `<text x="32" y="43" font-family="Helvetica,Arial,sans-serif" font-size="30" font-weight="700" fill="#fff" text-anchor="middle">${letter}</text>` +
    '</svg>'
  );
}
