import type { ServiceContext } from '../../lib/context.ts';
import { requireScope } from '../../lib/context.ts';
import { activeConnectionRows } from '../connections/active-cache.ts';
import { mayRunTool } from '../connections/tools.ts';
import { providerCatalog } from './catalog.ts';
import type { ToolSearchHit, ToolSearchQuery } from './schema.ts';
import { searchCatalogTools } from './tool-search.ts';

/**
 * `GET /providers/tools/search`: the catalog's tools ranked for a request in plain words, by the ranking the
 * agent's `find_tools` uses (src/lib/tool-search.ts). With `connected`, only the providers of the caller's
 * active connections, and only the tools the caller may run there (no write tools with a `read` permission).
 * The work is bounded: the request is cut at 500 characters and at most 50 hits are answered.
 */
export async function searchProviderTools(ctx: ServiceContext, query: ToolSearchQuery): Promise<ToolSearchHit[]> {
  requireScope(ctx, 'connections');
  const catalog = providerCatalog(ctx.deps.config);
  let keep: ((t: { source: string; mode?: 'read' | 'write' | undefined }) => boolean) | undefined;
  if (query.connected) {
    const rows = await activeConnectionRows(ctx.deps, ctx.db, ctx.accountId);
    const providers = new Set(rows.map((r) => r.providerId));
    keep = (t) => providers.has(t.source) && mayRunTool(ctx, t.source, { mode: t.mode ?? 'read' });
  }
  return searchCatalogTools(catalog, query.q, query.limit, keep).map(({ tool, score }) => ({
    providerId: tool.provider.id,
    providerLabel: tool.provider.label,
    name: tool.definition.name,
    description: tool.definition.description,
    parameters: tool.definition.parameters as unknown as Record<string, unknown>,
    mode: tool.definition.mode,
    score: Math.round(score * 1000) / 1000,
  }));
}
