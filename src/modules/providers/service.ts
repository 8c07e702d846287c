import type { Config } from '../../config.ts';
import type { PublicContext, ServiceContext } from '../../context.ts';
import { NotFoundError } from '../../lib/errors.ts';
import { type CatalogProvider, connectFields, isProviderConfigured, providerCatalog } from './catalog.ts';
import type { ProviderDefinition } from './definition.ts';
import { type AuthType, type Provider, type ProviderTool, providerField } from './schema.ts';

/** The path (under the origin) where the service serves a provider's logo. */
export function logoPath(providerId: string): string {
  return `/providers/logos/${providerId}.svg`;
}

export function toProvider(entry: CatalogProvider, config: Pick<Config, 'baseUrl' | 'providers'>): Provider {
  const d = entry.definition;
  const authTypes = connectableAuthTypes(config, d);
  const fields = d.oauth ? connectFields(d) : [];
  return {
    id: d.id,
    label: d.label,
    description: d.description,
    logoUrl: d.logoUrl ?? `${config.baseUrl}${logoPath(d.id)}`,
    category: d.category,
    popular: d.popular,
    authType: d.authType,
    allowMultipleConnections: d.allowMultipleConnections,
    authTypes,
    configured: authTypes.length > 0,
    ...(fields.length ? { connectFields: fields.map(providerField) } : {}),
    ...(d.apiKey
      ? {
          apiKey: {
            label: d.apiKey.label,
            help: d.apiKey.help,
            docsUrl: d.apiKey.docsUrl,
            fields: d.apiKey.fields.map(providerField),
          },
        }
      : {}),
  };
}

/** The ways a user can connect the provider on this server now (`Provider.authTypes`). */
export function connectableAuthTypes(config: Pick<Config, 'providers'>, def: ProviderDefinition): AuthType[] {
  const out: AuthType[] = [];
  if (isProviderConfigured(config, def.id)) out.push('oauth');
  if (def.apiKey) out.push('api_key');
  return out;
}

function entryOf(config: Pick<Config, 'providers'>, providerId: string): CatalogProvider {
  const entry = providerCatalog(config).get(providerId);
  if (!entry) throw new NotFoundError(`Provider ${providerId} not found`);
  return entry;
}

/** The catalog narrowed by a search (every word in the label, description, id or category) and a category. */
export function filterCatalog(providers: readonly Provider[], q: string, category: string): Provider[] {
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  return providers.filter((p) => {
    if (category && p.category !== category) return false;
    const text = `${p.label} ${p.description} ${p.id} ${p.category}`.toLowerCase();
    return words.every((w) => text.includes(w));
  });
}

/**
 * The whole catalog, configured or not: a client shows what exists and what an operator still must set up.
 * `category` keeps one category, `q` the providers whose label, description, id or category hold every word.
 */
export function listProviders(ctx: PublicContext, filter: { q?: string; category?: string } = {}): Provider[] {
  const config = ctx.deps.config;
  const all = providerCatalog(config).providers.map((p) => toProvider(p, config));
  return filter.q || filter.category ? filterCatalog(all, filter.q ?? '', filter.category ?? '') : all;
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
  return entry.logoSvg ?? letterMark(entry.definition.label, entry.definition.id);
}

/** Background colours of monograms, dark enough for white letters (contrast above 4.5:1). */
const MONOGRAM_COLOURS = ['#4b5563', '#1d4ed8', '#047857', '#b91c1c', '#6d28d9', '#9a3412', '#0f766e', '#be185d'];

/**
 * A monogram for providers that ship no logo: up to two initials of the label ("Google Sheets" is GS, "Box"
 * is B) on a colour picked from the id, so neighbours in the catalog differ.
 */
export function letterMark(label: string, id = label): string {
  const words = label.match(/[A-Za-z0-9]+/g) ?? ['?'];
  const initials = (words.length > 1 ? `${words[0]?.[0] ?? ''}${words[1]?.[0] ?? ''}` : (words[0]?.[0] ?? '?'))
    .toUpperCase()
    .replace(/[^A-Z0-9]/g, '?');
  let hash = 0;
  for (const ch of id) hash = (hash * 31 + (ch.codePointAt(0) ?? 0)) >>> 0;
  const colour = MONOGRAM_COLOURS[hash % MONOGRAM_COLOURS.length];
  const size = initials.length > 1 ? 26 : 30;
  return (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" role="img">' +
    `<rect width="64" height="64" rx="14" fill="${colour}"/>` +
    `<text x="32" y="42" font-family="Helvetica,Arial,sans-serif" font-size="${size}" font-weight="700" fill="#fff" text-anchor="middle">${initials}</text>` +
    '</svg>'
  );
}
