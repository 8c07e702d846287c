import type { Config } from '../../config.ts';
import { ConfigError } from '../../config.ts';

/**
 * Settings of the provider HTTP client and of the token lifecycle. They are read from the `PROVIDER_*`
 * variables config.ts already collects (`config.providers.env`), so the connections area needs no new
 * top-level settings; none of these names can clash with a provider's `PROVIDER_<ID>_CLIENT_ID/SECRET`.
 */
export interface ConnectionSettings {
  /** `PROVIDER_TIMEOUT_MS`: one provider API request, headers and body (default 30 s). */
  requestTimeoutMs: number;
  /** `PROVIDER_TOKEN_TIMEOUT_MS`: a token, user-info or revocation request (default 10 s); a refresh holds a row lock meanwhile. */
  tokenTimeoutMs: number;
  /** `PROVIDER_MAX_RETRY_WAIT_MS`: the longest `Retry-After` waited for before the one retry (default 10 s). */
  maxRetryWaitMs: number;
  /** `PROVIDER_REFRESH_MAX_FAILURES`: consecutive failed refreshes (5xx, timeouts) before status `error` (default 3). */
  refreshMaxFailures: number;
  /** `PROVIDER_MAX_RESPONSE_BYTES`: the most read of one provider answer (default 5 MB). */
  maxResponseBytes: number;
}

export const CONNECTION_SETTING_VARS: Record<
  keyof ConnectionSettings,
  { name: string; fallback: number; min: number; max: number }
> = {
  requestTimeoutMs: { name: 'PROVIDER_TIMEOUT_MS', fallback: 30_000, min: 1, max: 600_000 },
  tokenTimeoutMs: { name: 'PROVIDER_TOKEN_TIMEOUT_MS', fallback: 10_000, min: 1, max: 120_000 },
  maxRetryWaitMs: { name: 'PROVIDER_MAX_RETRY_WAIT_MS', fallback: 10_000, min: 0, max: 600_000 },
  refreshMaxFailures: { name: 'PROVIDER_REFRESH_MAX_FAILURES', fallback: 3, min: 1, max: 100 },
  maxResponseBytes: {
    name: 'PROVIDER_MAX_RESPONSE_BYTES',
    fallback: 5 * 1024 * 1024,
    min: 1024,
    max: 100 * 1024 * 1024,
  },
};

const cache = new WeakMap<Config['providers'], ConnectionSettings>();

/** Parses the settings once per configuration; a bad value throws ConfigError naming every bad variable. */
export function connectionSettings(config: Pick<Config, 'providers'>): ConnectionSettings {
  const cached = cache.get(config.providers);
  if (cached) return cached;
  const problems: string[] = [];
  const out = {} as ConnectionSettings;
  for (const [key, spec] of Object.entries(CONNECTION_SETTING_VARS) as Array<
    [keyof ConnectionSettings, (typeof CONNECTION_SETTING_VARS)[keyof ConnectionSettings]]
  >) {
    const raw = config.providers.env[spec.name];
    if (raw === undefined) {
      out[key] = spec.fallback;
      continue;
    }
    const n = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || n < spec.min || n > spec.max) {
      problems.push(`${spec.name}: must be an integer from ${spec.min} to ${spec.max}`);
      continue;
    }
    out[key] = n;
  }
  if (problems.length) throw new ConfigError(problems);
  cache.set(config.providers, out);
  return out;
}
