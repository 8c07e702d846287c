import { request } from 'undici';
import { z } from 'zod';
import type { Config } from '../config.ts';
import type { Logger } from '../lib/logger.ts';
import { tracingOn } from '../lib/tracing.ts';
import { anthropicUpstream } from './anthropic.ts';
import { type Catalog, type CatalogModel, DEFAULT_CUSTOM_RATES, loadCatalog, type UpstreamName } from './catalog.ts';
import { openAiUpstream } from './openai.ts';
import { tracedUpstream } from './traced.ts';
import type { Upstream } from './types.ts';

/** The catalog and one client per configured upstream, built once per process. */
export interface LlmGateway {
  catalog: Catalog;
  upstreamFor(model: CatalogModel): Upstream | undefined;
  /** Settles when the first model discovery has finished (at once when there is none to do); never rejects. */
  ready: Promise<void>;
  /**
   * Why the custom upstream's model list is missing (undefined once listed, or when it is not discovered);
   * calling it also starts a new attempt when the last one failed at least `DISCOVERY_RETRY_MS` ago.
   */
  discoveryProblem(): string | undefined;
}

/** A start-up must not hang on an upstream that does not answer: the listing gets at most this long. */
export const DISCOVERY_TIMEOUT_MS = 10_000;
/** After a failed listing, the next use of the gateway past this delay tries again. */
export const DISCOVERY_RETRY_MS = 30_000;

const ModelList = z.object({ data: z.array(z.object({ id: z.string().min(1) })) });

async function listUpstreamModels(baseUrl: string, apiKey: string | undefined, timeoutMs: number): Promise<string[]> {
  const res = await request(`${baseUrl}/models`, {
    method: 'GET',
    headers: { accept: 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
    signal: AbortSignal.timeout(timeoutMs),
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`GET ${baseUrl}/models answered ${res.statusCode}`);
  }
  const parsed = ModelList.safeParse(await res.body.json().catch(() => undefined));
  if (!parsed.success) throw new Error(`GET ${baseUrl}/models did not answer {"data": [{"id": ...}]}`);
  return parsed.data.data.map((m) => m.id);
}

export function createLlmGateway(config: Config, log: Logger): LlmGateway {
  const { llm } = config;
  const timeoutMs = llm.timeoutMs;
  const upstreams: Partial<Record<UpstreamName, Upstream>> = {
    ...(llm.custom ? { custom: openAiUpstream({ ...llm.custom, timeoutMs }) } : {}),
    ...(llm.openai ? { openai: openAiUpstream({ ...llm.openai, timeoutMs }) } : {}),
    ...(llm.anthropic ? { anthropic: anthropicUpstream({ ...llm.anthropic, timeoutMs }) } : {}),
  };
  // While tracing is on, each call is a span (built once, so the gateway's path tests nothing when it is off).
  const traced = tracingOn()
    ? Object.fromEntries(
        Object.entries(upstreams).map(([name, u]) => [name, tracedUpstream(name as UpstreamName, u as Upstream)]),
      )
    : undefined;
  const catalog = loadCatalog(llm);
  const custom = catalog.discovers ? llm.custom : undefined;

  let problem: string | undefined;
  let lastAttempt = 0;
  let inFlight: Promise<void> | undefined;
  const discover = (): Promise<void> => {
    if (!custom) return Promise.resolve();
    lastAttempt = Date.now();
    inFlight ??= listUpstreamModels(custom.baseUrl, custom.apiKey, Math.min(timeoutMs, DISCOVERY_TIMEOUT_MS))
      .then((ids) => {
        const added = catalog.addDiscovered(ids);
        problem = undefined;
        log.info(
          { models: added.map((m) => m.id), ...DEFAULT_CUSTOM_RATES },
          `LLM_BASE_URL: ${added.length} models listed by ${custom.baseUrl}/models, priced at the default rates (set LLM_MODELS to choose models and rates)`,
        );
        if (llm.defaultModel && !catalog.defaultModel) {
          log.error(`DEFAULT_MODEL: "${llm.defaultModel}" is not among the models ${custom.baseUrl}/models lists`);
        }
      })
      .catch((err: unknown) => {
        problem = `the models of LLM_BASE_URL could not be listed (${err instanceof Error ? err.message : String(err)}); set LLM_MODELS, or the next request after ${DISCOVERY_RETRY_MS / 1000} s tries again`;
        log.error(`LLM_BASE_URL: ${problem}`);
      })
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  };
  const ready = discover();

  return {
    catalog,
    upstreamFor: (m) => (traced ?? upstreams)[m.upstream],
    ready,
    discoveryProblem() {
      if (problem && !inFlight && Date.now() - lastAttempt >= DISCOVERY_RETRY_MS) void discover();
      return problem;
    },
  };
}
