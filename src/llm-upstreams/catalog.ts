import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { LlmConfig } from '../config.ts';
import shipped from './models.json' with { type: 'json' };

/**
 * The model catalog: the file shipped with the service (or `MODELS_FILE`), plus `LLM_MODELS` for models
 * served by `LLM_BASE_URL`. Rates are credits per million tokens (1 credit = 0.0001 USD).
 */
export const UpstreamName = z.enum(['openai', 'anthropic', 'custom']);
export type UpstreamName = z.infer<typeof UpstreamName>;

export const CatalogModel = z.object({
  id: z.string().min(1),
  upstream: UpstreamName,
  upstreamModel: z.string().min(1),
  tier: z.string().min(1),
  promptRate: z.number().int().min(0),
  completionRate: z.number().int().min(0),
  contextWindow: z.number().int().positive(),
  maxOutputTokens: z.number().int().positive(),
  capabilities: z.object({ tools: z.boolean(), vision: z.boolean(), streaming: z.boolean(), json: z.boolean() }),
});
export type CatalogModel = z.infer<typeof CatalogModel>;

const CatalogFile = z.object({ models: z.array(CatalogModel) });

/** Rates of `LLM_MODELS` entries that name none: a middle tier, so an unpriced model is never free. */
export const DEFAULT_CUSTOM_RATES = { promptRate: 5000, completionRate: 15000 } as const;

export function parseCustomModels(spec: string): CatalogModel[] {
  return spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const m = /^([^=\s]+)(?:=(\d+)\/(\d+))?$/.exec(entry);
      if (!m?.[1]) throw new Error(`LLM_MODELS: cannot read "${entry}" (expected id or id=promptRate/completionRate)`);
      return {
        id: m[1],
        upstream: 'custom' as const,
        upstreamModel: m[1],
        tier: 'custom',
        promptRate: m[2] ? Number(m[2]) : DEFAULT_CUSTOM_RATES.promptRate,
        completionRate: m[3] ? Number(m[3]) : DEFAULT_CUSTOM_RATES.completionRate,
        contextWindow: 128_000,
        maxOutputTokens: 8192,
        capabilities: { tools: true, vision: false, streaming: true, json: true },
      };
    });
}

export interface Catalog {
  /** Models whose upstream is configured, in catalog order. */
  available: CatalogModel[];
  get(id: string): CatalogModel | undefined;
  defaultModel: CatalogModel | undefined;
  configured: boolean;
  /** True when `LLM_BASE_URL` is set without `LLM_MODELS`: its models come from its `GET /models`. */
  discovers: boolean;
  /** Adds models listed by the custom upstream; entries of the catalog file or `LLM_MODELS` keep precedence. */
  addDiscovered(ids: string[]): CatalogModel[];
}

export function loadCatalog(llm: LlmConfig): Catalog {
  const source = llm.modelsFile ? JSON.parse(readFileSync(llm.modelsFile, 'utf8')) : shipped;
  const parsed = CatalogFile.safeParse(source);
  if (!parsed.success) {
    throw new Error(
      `${llm.modelsFile ?? 'models.json'}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  const all = [...parsed.data.models, ...(llm.customModels ? parseCustomModels(llm.customModels) : [])];
  const configured = new Set<UpstreamName>(
    (['openai', 'anthropic', 'custom'] as const).filter((u) => llm[u] !== undefined),
  );
  const byId = new Map<string, CatalogModel>();
  for (const m of all) if (configured.has(m.upstream)) byId.set(m.id, m); // later entries override
  const discovers = llm.custom !== undefined && !llm.customModels;
  const catalog: Catalog = {
    available: [...byId.values()],
    get: (id) => byId.get(id),
    defaultModel: undefined,
    configured: configured.size > 0,
    discovers,
    addDiscovered(ids) {
      // An id `LLM_MODELS` could not spell (with `=`, `,` or spaces) is skipped rather than misread.
      const readable = ids.filter((id) => /^[^=,\s]+$/.test(id));
      const added = parseCustomModels(readable.join(',')).filter((m) => !byId.has(m.id));
      for (const m of added) byId.set(m.id, m);
      catalog.available = [...byId.values()];
      catalog.defaultModel = llm.defaultModel ? byId.get(llm.defaultModel) : catalog.available[0];
      return added;
    },
  };
  catalog.defaultModel = llm.defaultModel ? byId.get(llm.defaultModel) : catalog.available[0];
  // A DEFAULT_MODEL served by a discovering upstream is only known once its list arrives.
  if (llm.defaultModel && !catalog.defaultModel && !discovers) {
    throw new Error(
      `DEFAULT_MODEL: "${llm.defaultModel}" is not an available model (${catalog.available.map((m) => m.id).join(', ') || 'none'})`,
    );
  }
  if (llm.injectionGuardModel && !byId.has(llm.injectionGuardModel) && !discovers) {
    throw new Error(
      `INJECTION_GUARD_MODEL: "${llm.injectionGuardModel}" is not an available model (${catalog.available.map((m) => m.id).join(', ') || 'none'})`,
    );
  }
  return catalog;
}

/** SPEC §8: credits = ceil((prompt × promptRate + completion × completionRate) / 1,000,000). */
export function creditsFor(
  model: Pick<CatalogModel, 'promptRate' | 'completionRate'>,
  promptTokens: number,
  completionTokens: number,
): number {
  return Math.ceil((promptTokens * model.promptRate + completionTokens * model.completionRate) / 1_000_000);
}
