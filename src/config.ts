import type { z } from 'zod';
import pkg from '../package.json' with { type: 'json' };
import { EnvSchema } from './config-env.ts';
import { parseKeys } from './lib/crypto.ts';
import type { DocumentLimits } from './lib/documents.ts';
import type { TracingConfig } from './lib/tracing.ts';

/**
 * The only reader of `process.env`. Every setting is parsed once here; a bad value stops start-up with a
 * message naming each offending variable, so an operator fixes them all in one go.
 */

export interface RateLimits {
  enabled: boolean;
  windowMs: number;
  global: number;
  auth: number;
  llm: number;
  mcp: number;
  register: number;
}

/** The OAuth 2.1 authorization server (auth/oauth). */
export interface OAuthConfig {
  /** Access token lifetime, seconds (SPEC: 900). */
  accessTokenTtl: number;
  /** Refresh token lifetime, seconds (SPEC: 604800); each refresh returns a new one. */
  refreshTokenTtl: number;
  /** How long a consent (grant) is remembered, seconds. */
  consentTtl: number;
  /** Whether `POST /api/v1/auth/register` (RFC 7591) is open. */
  dynamicRegistration: boolean;
  /** `OAUTH_CLIENT_METADATA_TIMEOUT_MS`: the whole fetch of a client ID metadata document (default 5 s). */
  clientMetadataTimeoutMs: number;
  /**
   * PEM of one more CA trusted when fetching client ID metadata documents. No environment variable sets it:
   * it is for tests' own self-signed document server; production trusts the system's CAs only.
   */
  clientMetadataCa?: string;
}

export interface UpstreamConfig {
  baseUrl: string;
  apiKey: string | undefined;
}

/** LLM upstreams: an upstream exists only when its setting is given; models of absent upstreams are hidden. */
export interface LlmConfig {
  /** Any OpenAI-compatible server (`LLM_BASE_URL`, `LLM_API_KEY`). */
  custom: UpstreamConfig | undefined;
  /** `LLM_MODELS`: models served by LLM_BASE_URL, `id[=promptRate/completionRate]`, comma-separated. */
  customModels: string | undefined;
  openai: UpstreamConfig | undefined;
  anthropic: UpstreamConfig | undefined;
  modelsFile: string | undefined;
  defaultModel: string | undefined;
  timeoutMs: number;
  /** `INJECTION_GUARD_MODEL`: a catalog model that also judges texts the injection rules let through. */
  injectionGuardModel: string | undefined;
  /** `INJECTION_GUARD_TIMEOUT_MS`: past this the guard's verdict is dropped and the rules' stands. */
  injectionGuardTimeoutMs: number;
}

/** The connector catalog: extra provider directories and the OAuth client credentials of providers. */
export interface ProvidersConfig {
  /** `PROVIDERS_DIR`, comma-separated, read after the shipped `providers/`; a later file of an id wins. */
  dirs: string[];
  /** Every `PROVIDER_*` variable (`PROVIDER_GITHUB_CLIENT_ID` ...), by name; see providers/catalog. */
  env: Readonly<Record<string, string>>;
}

/** The background job worker and recurring scheduler (src/jobs). */
export interface JobsConfig {
  /** Whether this instance runs jobs and schedules recurring ones (`JOBS_ENABLED`). */
  enabled: boolean;
  /** Jobs one instance runs at once. */
  concurrency: number;
  /** How often an idle worker looks for due jobs. */
  pollIntervalMs: number;
  /** How long a claimed job is held without a heartbeat; a dead worker's job is claimed again after it. */
  leaseMs: number;
  /** Succeeded jobs are deleted this many days after they finished. */
  retentionDays: number;
  /** Dead jobs (out of attempts) are deleted this many days after they failed. */
  deadRetentionDays: number;
  /** `ACTIVITY_RETENTION_DAYS`: activity log rows are deleted (job `activity.purge`) this many days after. */
  activityRetentionDays: number;
}

/** Messaging channels (modules/channels): the platforms' API addresses and the web chat's limits. */
export interface ChannelsConfig {
  /** `TELEGRAM_API_URL`: the Bot API (tests point it at a fake). */
  telegramApiUrl: string;
  /** `WHATSAPP_API_URL` and `WHATSAPP_API_VERSION`: the Graph API of the Cloud API. */
  whatsappApiUrl: string;
  whatsappApiVersion: string;
  /** `WHATSAPP_APP_SECRET`: verifies X-Hub-Signature-256 for channels without their own `appSecret`. */
  whatsappAppSecret: string | undefined;
  /** `CHANNEL_SEND_INTERVAL_MS`: the least time between two messages to one chat (Telegram: about 1 s). */
  sendIntervalMs: number;
  /** `WEBCHAT_RATE_LIMIT`: web chat messages per client address per RATE_LIMIT_WINDOW_MS. */
  webchatRateLimit: number;
  /** Web chat messages per visitor, and per channel, per UTC day. */
  webchatDailyPerVisitor: number;
  webchatDailyPerChannel: number;
}

/** The code sandbox (src/code-runner) and its billing (SPEC §8). */
export interface SandboxConfig {
  /** Credits per started second in the QuickJS sandbox (JavaScript, TypeScript); `SANDBOX_CREDITS_PER_SECOND`. */
  creditsPerSecond: number;
  /** Credits per started second in the process sandbox (Python); `SANDBOX_PROCESS_CREDITS_PER_SECOND`. */
  processCreditsPerSecond: number;
  /** QuickJS worker threads (JavaScript/TypeScript runs at once). */
  workers: number;
  /** Memory of one QuickJS run, MB. */
  memoryMb: number;
  /** Python processes running at once. */
  pythonProcesses: number;
  /** Resident memory past which a Python process is killed, MB. */
  pythonMemoryMb: number;
  /** Runs that may wait for a busy sandbox, per family; more get 429. */
  queueMax: number;
  /** The longest a run waits for a free worker before 429, ms. */
  queueTimeoutMs: number;
}

export interface Config {
  port: number;
  host: string;
  baseUrl: string;
  appUrl: string;
  dataDir: string;
  databaseUrl: string | undefined;
  databasePoolMax: number;
  redisUrl: string | undefined;
  /** Raw `ENCRYPTION_KEYS` (`id:base64key,...`, first is current); see lib/crypto. */
  encryptionKeys: string | undefined;
  logLevel: string;
  trustProxy: boolean | number | string[];
  sessionTtlSeconds: number;
  /** How long a resolved token is reused without a database look-up (0: never). */
  authCacheTtlMs: number;
  patDefaultExpiresIn: number;
  patMaxExpiresIn: number;
  bodyLimitBytes: number;
  shutdownTimeoutMs: number;
  /**
   * `SHUTDOWN_DRAIN_MS`: after SIGTERM, how long `/readyz` answers 503 while requests are still served, so a load
   * balancer polling it stops sending before the listener closes (0: close at once).
   */
  shutdownDrainMs: number;
  /** `METRICS_TOKEN`: when set, `/metrics` answers only `Authorization: Bearer <it>` (401 otherwise). */
  metricsToken: string | undefined;
  /** OpenTelemetry tracing (`OTEL_*`, docs/tracing.md); undefined: off (no OTLP endpoint, or `OTEL_SDK_DISABLED`). */
  tracing: TracingConfig | undefined;
  /** The most a client may take to send a whole request, headers and body (slow clients get 408). */
  requestTimeoutMs: number;
  /** The largest chat file upload (`CHAT_FILE_MAX_BYTES`); larger: 413. */
  chatFileMaxBytes: number;
  /** Bounds on reading uploaded documents (`DOCUMENT_MAX_*`); past one: 413. */
  documents: DocumentLimits;
  /** How often an idle event stream sends a comment, so proxies keep it open (`SSE_HEARTBEAT_MS`). */
  sseHeartbeatMs: number;
  /**
   * How long an agent chat turn is held without its instance renewing it (`AGENT_RUN_LEASE_MS`, renewed every
   * third of it): a turn whose lease ran out is marked failed (its instance died).
   */
  agentRunLeaseMs: number;
  /** `host:port` pairs user-given URLs may reach even on private addresses (`SSRF_ALLOW_HOSTS`; see lib/safe-fetch). */
  ssrfAllowHosts: string[];
  rateLimits: RateLimits;
  oauth: OAuthConfig;
  signupEnabled: boolean;
  /**
   * argon2id's cost for new password hashes: OWASP's floor (19 MiB, 2 passes, 1 lane) unless
   * `INSECURE_TEST_PASSWORD_HASHING=true`, a setting for the test suite only (8 KiB, 1 pass: a hash takes
   * milliseconds, not tens of them). A stored hash names its own cost, so either verifies the other's hashes.
   */
  passwordHashing: PasswordHashing;
  initialCredits: number;
  /**
   * `CREDITS_BACKLOG_MAX`: how many charges an instance keeps unwritten while the database is unreachable (in
   * memory, and journaled under `DATA_DIR/credit-journal/` so that a crash loses none; written once it answers).
   * Requests in flight count against it; at the bound, new paid requests (gateway, tools, sandbox) answer 503
   * with Retry-After rather than a charge being dropped.
   */
  creditsBacklogMax: number;
  llm: LlmConfig;
  providers: ProvidersConfig;
  mcp: {
    /** Browser origins allowed to call /mcp besides BASE_URL's and APP_URL's (`MCP_ALLOWED_ORIGINS`). */
    allowedOrigins: string[];
    /** The `pollInterval` MCP tasks suggest, and how often a running task looks for its cancellation. */
    taskPollIntervalMs: number;
  };
  jobs: JobsConfig;
  channels: ChannelsConfig;
  version: string;
  sandbox: SandboxConfig;
}

/** argon2id's parameters (see `Config.passwordHashing`). */
export interface PasswordHashing {
  /** KiB. */
  memoryCost: number;
  timeCost: number;
  parallelism: number;
}

/** OWASP's argon2id floor: 19 MiB, 2 passes, 1 lane. Every deployment hashes with it. */
export const OWASP_PASSWORD_HASHING: PasswordHashing = Object.freeze({
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
});
/** argon2's least cost, for the test suite only (`INSECURE_TEST_PASSWORD_HASHING`). */
const INSECURE_TEST_PASSWORD_HASHING: PasswordHashing = Object.freeze({ memoryCost: 8, timeCost: 1, parallelism: 1 });

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const stripSlash = (u: string) => u.replace(/\/+$/, '');

/**
 * Tracing's settings: on when an OTLP endpoint is set, as the OpenTelemetry SDKs read them (the signal's own
 * endpoint as it is; the general one with `/v1/traces` added).
 */
function tracingConfig(e: z.infer<typeof EnvSchema>): TracingConfig | undefined {
  const url =
    e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (e.OTEL_EXPORTER_OTLP_ENDPOINT && `${stripSlash(e.OTEL_EXPORTER_OTLP_ENDPOINT)}/v1/traces`);
  if (!url || e.OTEL_SDK_DISABLED) return undefined;
  const headers: Record<string, string> = {};
  for (const pair of (e.OTEL_EXPORTER_OTLP_HEADERS ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return {
    url,
    headers,
    serviceName: e.OTEL_SERVICE_NAME,
    sampler: e.OTEL_TRACES_SAMPLER,
    samplerArg: e.OTEL_TRACES_SAMPLER_ARG,
    version: pkg.version,
  };
}

/** Parses an environment (default `process.env`); throws ConfigError listing every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings mean "unset", as in most .env files.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(cleaned);
  const problems = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  // Rules across variables and the key format, checked even when other variables are bad: one report names all.
  const patDefault = EnvSchema.shape.PAT_DEFAULT_EXPIRES_IN.safeParse(cleaned.PAT_DEFAULT_EXPIRES_IN);
  const patMax = EnvSchema.shape.PAT_MAX_EXPIRES_IN.safeParse(cleaned.PAT_MAX_EXPIRES_IN);
  if (patDefault.success && patMax.success && patDefault.data > patMax.data) {
    problems.push('PAT_DEFAULT_EXPIRES_IN: must not exceed PAT_MAX_EXPIRES_IN');
  }
  if (cleaned.ENCRYPTION_KEYS) {
    try {
      parseKeys(cleaned.ENCRYPTION_KEYS);
    } catch (err) {
      problems.push((err as Error).message);
    }
  } else if (cleaned.DATABASE_URL) {
    problems.push('ENCRYPTION_KEYS: required when DATABASE_URL is set (see docs/self-hosting.md, "Encryption keys")');
  }
  if (!parsed.success || problems.length) throw new ConfigError(problems);
  const e = parsed.data;
  const baseUrl = stripSlash(e.BASE_URL ?? `http://localhost:${e.PORT}`);
  return {
    port: e.PORT,
    host: e.HOST,
    baseUrl,
    appUrl: stripSlash(e.APP_URL ?? baseUrl),
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    databasePoolMax: e.DATABASE_POOL_MAX,
    redisUrl: e.REDIS_URL,
    encryptionKeys: e.ENCRYPTION_KEYS,
    logLevel: e.LOG_LEVEL,
    trustProxy: e.TRUST_PROXY,
    sessionTtlSeconds: e.SESSION_TTL_SECONDS,
    authCacheTtlMs: e.AUTH_CACHE_TTL_MS,
    patDefaultExpiresIn: e.PAT_DEFAULT_EXPIRES_IN,
    patMaxExpiresIn: e.PAT_MAX_EXPIRES_IN,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    shutdownDrainMs: e.SHUTDOWN_DRAIN_MS,
    metricsToken: e.METRICS_TOKEN,
    tracing: tracingConfig(e),
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    sseHeartbeatMs: e.SSE_HEARTBEAT_MS,
    agentRunLeaseMs: e.AGENT_RUN_LEASE_MS,
    chatFileMaxBytes: e.CHAT_FILE_MAX_BYTES,
    documents: {
      maxExpandedBytes: e.DOCUMENT_MAX_EXPANDED_BYTES,
      maxEntries: e.DOCUMENT_MAX_ENTRIES,
      maxPdfPages: e.DOCUMENT_MAX_PDF_PAGES,
      maxTextChars: e.DOCUMENT_MAX_TEXT_CHARS,
      maxCsvRows: e.DOCUMENT_MAX_CSV_ROWS,
    },
    ssrfAllowHosts: e.SSRF_ALLOW_HOSTS.map((h) => h.replace(/^\[|\]$/g, '').replace(/\]:/, ':')),
    rateLimits: {
      enabled: e.RATE_LIMIT_ENABLED,
      windowMs: e.RATE_LIMIT_WINDOW_MS,
      global: e.RATE_LIMIT_GLOBAL,
      auth: e.RATE_LIMIT_AUTH,
      llm: e.RATE_LIMIT_LLM,
      mcp: e.RATE_LIMIT_MCP,
      register: e.RATE_LIMIT_REGISTER,
    },
    oauth: {
      accessTokenTtl: e.OAUTH_ACCESS_TOKEN_TTL,
      refreshTokenTtl: e.OAUTH_REFRESH_TOKEN_TTL,
      consentTtl: e.OAUTH_CONSENT_TTL,
      dynamicRegistration: e.OAUTH_DYNAMIC_REGISTRATION,
      clientMetadataTimeoutMs: e.OAUTH_CLIENT_METADATA_TIMEOUT_MS,
    },
    signupEnabled: e.SIGNUP_ENABLED,
    passwordHashing: e.INSECURE_TEST_PASSWORD_HASHING ? INSECURE_TEST_PASSWORD_HASHING : OWASP_PASSWORD_HASHING,
    initialCredits: e.INITIAL_CREDITS,
    creditsBacklogMax: e.CREDITS_BACKLOG_MAX,
    llm: {
      custom: e.LLM_BASE_URL ? { baseUrl: stripSlash(e.LLM_BASE_URL), apiKey: e.LLM_API_KEY } : undefined,
      customModels: e.LLM_MODELS,
      openai: e.OPENAI_API_KEY ? { baseUrl: stripSlash(e.OPENAI_BASE_URL), apiKey: e.OPENAI_API_KEY } : undefined,
      anthropic: e.ANTHROPIC_API_KEY
        ? { baseUrl: stripSlash(e.ANTHROPIC_BASE_URL), apiKey: e.ANTHROPIC_API_KEY }
        : undefined,
      modelsFile: e.MODELS_FILE,
      defaultModel: e.DEFAULT_MODEL,
      timeoutMs: e.LLM_TIMEOUT_MS,
      injectionGuardModel: e.INJECTION_GUARD_MODEL || undefined,
      injectionGuardTimeoutMs: e.INJECTION_GUARD_TIMEOUT_MS,
    },
    mcp: {
      allowedOrigins: (e.MCP_ALLOWED_ORIGINS ?? '')
        .split(',')
        .map((o) => o.trim().replace(/\/+$/, ''))
        .filter(Boolean),
      taskPollIntervalMs: e.MCP_TASK_POLL_INTERVAL_MS,
    },
    providers: {
      dirs: (e.PROVIDERS_DIR ?? '')
        .split(',')
        .map((d) => d.trim())
        .filter(Boolean),
      env: Object.fromEntries(Object.entries(cleaned).filter(([k]) => k.startsWith('PROVIDER_'))) as Record<
        string,
        string
      >,
    },
    jobs: {
      enabled: e.JOBS_ENABLED,
      concurrency: e.JOBS_CONCURRENCY,
      pollIntervalMs: e.JOBS_POLL_INTERVAL_MS,
      leaseMs: e.JOBS_LEASE_MS,
      retentionDays: e.JOBS_RETENTION_DAYS,
      deadRetentionDays: e.JOBS_DEAD_RETENTION_DAYS,
      activityRetentionDays: e.ACTIVITY_RETENTION_DAYS,
    },
    channels: {
      telegramApiUrl: stripSlash(e.TELEGRAM_API_URL),
      whatsappApiUrl: stripSlash(e.WHATSAPP_API_URL),
      whatsappApiVersion: e.WHATSAPP_API_VERSION,
      whatsappAppSecret: e.WHATSAPP_APP_SECRET,
      sendIntervalMs: e.CHANNEL_SEND_INTERVAL_MS,
      webchatRateLimit: e.WEBCHAT_RATE_LIMIT,
      webchatDailyPerVisitor: e.WEBCHAT_DAILY_PER_VISITOR,
      webchatDailyPerChannel: e.WEBCHAT_DAILY_PER_CHANNEL,
    },
    version: pkg.version,
    sandbox: {
      creditsPerSecond: e.SANDBOX_CREDITS_PER_SECOND,
      processCreditsPerSecond: e.SANDBOX_PROCESS_CREDITS_PER_SECOND,
      workers: e.SANDBOX_WORKERS,
      memoryMb: e.SANDBOX_MEMORY_MB,
      pythonProcesses: e.SANDBOX_PYTHON_PROCESSES,
      pythonMemoryMb: e.SANDBOX_PYTHON_MEMORY_MB,
      queueMax: e.SANDBOX_QUEUE_MAX,
      queueTimeoutMs: e.SANDBOX_QUEUE_TIMEOUT_MS,
    },
  };
}
