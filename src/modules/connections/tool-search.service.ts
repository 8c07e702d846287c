import type { ServiceContext } from '../../context.ts';
import { requireScope } from '../../context.ts';
import type { ToolSearchHit, ToolSearchQuery } from '../providers/index.ts';
import { providerCatalog, searchCatalogTools } from '../providers/index.ts';
import { activeConnectionRows } from './active-cache.ts';
import { mayRunTool } from './provider-tools.ts';

/**
 * `GET /providers/tools/search`: the catalog's tools ranked for a request in plain words, by the ranking the
 * agent's `find_tools` uses (src/lib/tool-search.ts). With `connected`, only the providers of the caller's
 * active connections, and only the tools the caller may run there (no write tools with a `read` permission).
 * The work is bounded: a request over 500 characters is refused (422) and at most 50 hits are answered. It lives with
 * the connections (whose permissions it applies), so the providers area, which owns the catalog, imports no
 * connections service.
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
