import { rankTools, type SearchableTool } from '../../lib/tool-search.ts';
import type { ProviderCatalog } from './catalog.ts';
import type { ProviderDefinition, ToolDefinition } from './definition.ts';

/**
 * The catalog's tools as the tool search reads them (src/lib/tool-search.ts, the agent's ranking too): each
 * with its provider's id, label (as keywords) and category. Built once per loaded catalog, whatever its size.
 */
export interface CatalogTool extends SearchableTool {
  provider: ProviderDefinition;
  definition: ToolDefinition;
}

/**
 * What the tool search reads of a catalog tool besides its name and description: its provider's label (as
 * keywords), category (`video-meetings` as two words) and description, and the tool's examples.
 */
export function toolSearchWords(
  def: Pick<ProviderDefinition, 'label' | 'category' | 'description' | 'popular'>,
  tool: Pick<ToolDefinition, 'examples'>,
): Pick<SearchableTool, 'keywords' | 'category' | 'about' | 'examples' | 'popular'> {
  return {
    popular: def.popular,
    keywords: def.label,
    category: def.category.replace(/[-_]/g, ' '),
    about: def.description,
    examples: tool.examples?.join(' . '),
  };
}

const byCatalog = new WeakMap<ProviderCatalog, CatalogTool[]>();

export function catalogTools(catalog: ProviderCatalog): readonly CatalogTool[] {
  let tools = byCatalog.get(catalog);
  if (!tools) {
    tools = catalog.providers.flatMap(({ definition: def }) =>
      def.tools.map((t) => ({
        name: t.name,
        description: t.description,
        source: def.id,
        ...toolSearchWords(def, t),
        mode: t.mode,
        provider: def,
        definition: t,
      })),
    );
    byCatalog.set(catalog, tools);
  }
  return tools;
}

/** The catalog's tools best matching a request, best first; `keep` narrows them (connected providers, mode). */
export function searchCatalogTools(
  catalog: ProviderCatalog,
  query: string,
  limit: number,
  keep?: (tool: CatalogTool) => boolean,
): Array<{ tool: CatalogTool; score: number }> {
  const all = catalogTools(catalog);
  return rankTools(keep ? all.filter(keep) : all, query, limit);
}
