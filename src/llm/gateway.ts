import type { Config } from '../config.ts';
import { type Catalog, type CatalogModel, loadCatalog, type UpstreamName } from './catalog.ts';
import type { Upstream } from './types.ts';
import { anthropicUpstream } from './upstreams/anthropic.ts';
import { openAiUpstream } from './upstreams/openai.ts';

/** The catalog and one client per configured upstream, built once per process. */
export interface LlmGateway {
  catalog: Catalog;
  upstreamFor(model: CatalogModel): Upstream | undefined;
}

export function createLlmGateway(config: Config): LlmGateway {
  const { llm } = config;
  const timeoutMs = llm.timeoutMs;
  const upstreams: Partial<Record<UpstreamName, Upstream>> = {
    ...(llm.custom ? { custom: openAiUpstream({ ...llm.custom, timeoutMs }) } : {}),
    ...(llm.openai ? { openai: openAiUpstream({ ...llm.openai, timeoutMs }) } : {}),
    ...(llm.anthropic ? { anthropic: anthropicUpstream({ ...llm.anthropic, timeoutMs }) } : {}),
  };
  return { catalog: loadCatalog(llm), upstreamFor: (m) => upstreams[m.upstream] };
}
