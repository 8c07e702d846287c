import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * Every environment variable the service reads, with its parser and default (`loadConfig` in config.ts turns the
 * parsed values into the `Config` the code reads; docs/configuration.md is generated from this schema).
 */

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const positiveInt = z.coerce.number().int().positive();

/**
 * An http(s) address. `z.url()` alone takes `localhost:11434/v1` (the host read as a scheme), which only
 * failed later, on the first call upstream; start-up names the variable instead.
 */
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL (with its scheme)' });

/** An address, a CIDR (`10.0.0.0/8`, `10.0.0.0/255.0.0.0`) or one of proxy-addr's names. */
function isTrustedProxyEntry(entry: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
  const [addr = '', mask, ...rest] = entry.split('/');
  if (rest.length || !isIP(addr)) return false;
  return mask === undefined || /^\d{1,3}$/.test(mask) || isIP(mask) !== 0;
}

/** `TRUST_PROXY`: `false` (default), `true`, a hop count, or a comma-separated list of addresses/CIDRs. */
const trustProxy = z
  .string()
  .default('false')
  .transform((v, ctx): boolean | number | string[] => {
    const s = v.trim().toLowerCase();
    if (s === 'false' || s === '0' || s === '') return false;
    if (s === 'true') return true;
    if (/^\d+$/.test(s)) return Number(s);
    const list = v
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    const bad = list.filter((x) => !isTrustedProxyEntry(x));
    if (bad.length) {
      ctx.addIssue({
        code: 'custom',
        message: `must be true, false, a hop count or a list of addresses/CIDRs; not ${bad.join(', ')}`,
      });
      return z.NEVER;
    }
    return list;
  });

export const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  BASE_URL: z.url().optional(),
  APP_URL: z.url().optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATABASE_POOL_MAX: positiveInt.default(10),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional(),
  ENCRYPTION_KEYS: z.string().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  TRUST_PROXY: trustProxy,
  SESSION_TTL_SECONDS: positiveInt.default(7 * 24 * 3600),
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).default(5000),
  PAT_DEFAULT_EXPIRES_IN: positiveInt.default(90 * 24 * 3600),
  PAT_MAX_EXPIRES_IN: positiveInt.default(365 * 24 * 3600),
  BODY_LIMIT_BYTES: positiveInt.default(1024 * 1024),
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(10_000),
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).default(5000),
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl.optional(),
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .regex(/^\s*[^=,\s]+\s*=[^,]*(,\s*[^=,\s]+\s*=[^,]*)*$/, 'must be a list of key=value pairs, comma-separated')
    .optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('switchboard'),
  OTEL_TRACES_SAMPLER: z
    .enum([
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
    ])
    .default('parentbased_always_on'),
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).optional(),
  OTEL_SDK_DISABLED: bool.default(false),
  REQUEST_TIMEOUT_MS: positiveInt.default(30_000),
  SSE_HEARTBEAT_MS: positiveInt.default(15_000),
  AGENT_RUN_LEASE_MS: z.coerce.number().int().min(1000).default(60_000),
  CHAT_FILE_MAX_BYTES: positiveInt.default(10 * 1024 * 1024),
  DOCUMENT_MAX_EXPANDED_BYTES: positiveInt.default(50 * 1024 * 1024),
  DOCUMENT_MAX_ENTRIES: positiveInt.default(1000),
  DOCUMENT_MAX_PDF_PAGES: positiveInt.default(500),
  DOCUMENT_MAX_TEXT_CHARS: positiveInt.default(5_000_000),
  DOCUMENT_MAX_CSV_ROWS: positiveInt.default(100_000),
  SSRF_ALLOW_HOSTS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((x) => x.trim().toLowerCase())
        .filter(Boolean),
    )
    .refine(
      (list) => list.every((x) => /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+):\d{1,5}$/.test(x)),
      'must be a comma-separated list of host:port',
    ),
  RATE_LIMIT_ENABLED: bool.default(true),
  RATE_LIMIT_GLOBAL: positiveInt.default(100),
  RATE_LIMIT_AUTH: positiveInt.default(10),
  RATE_LIMIT_LLM: positiveInt.default(30),
  RATE_LIMIT_MCP: positiveInt.default(30),
  RATE_LIMIT_REGISTER: positiveInt.default(5),
  RATE_LIMIT_WINDOW_MS: positiveInt.default(60_000),
  SIGNUP_ENABLED: bool.default(true),
  INSECURE_TEST_PASSWORD_HASHING: bool.default(false),
  OAUTH_ACCESS_TOKEN_TTL: positiveInt.default(900),
  OAUTH_REFRESH_TOKEN_TTL: positiveInt.default(604_800),
  OAUTH_CONSENT_TTL: positiveInt.default(365 * 24 * 3600),
  OAUTH_DYNAMIC_REGISTRATION: bool.default(true),
  OAUTH_CLIENT_METADATA_TIMEOUT_MS: positiveInt.max(30_000).default(5_000),
  INITIAL_CREDITS: z.coerce.number().int().min(0).default(100_000),
  CREDITS_BACKLOG_MAX: positiveInt.default(10_000),
  LLM_BASE_URL: httpUrl.optional(),
  LLM_API_KEY: z.string().optional(),
  LLM_MODELS: z.string().optional(),
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_BASE_URL: httpUrl.default('https://api.openai.com/v1'),
  ANTHROPIC_API_KEY: z.string().optional(),
  ANTHROPIC_BASE_URL: httpUrl.default('https://api.anthropic.com'),
  MODELS_FILE: z.string().optional(),
  DEFAULT_MODEL: z.string().optional(),
  LLM_TIMEOUT_MS: positiveInt.default(120_000),
  INJECTION_GUARD_MODEL: z.string().trim().optional(),
  INJECTION_GUARD_TIMEOUT_MS: positiveInt.default(10_000),
  MCP_ALLOWED_ORIGINS: z.string().optional(),
  MCP_TASK_POLL_INTERVAL_MS: z.coerce.number().int().min(10).default(5000),
  PROVIDERS_DIR: z.string().optional(),
  JOBS_ENABLED: bool.default(true),
  JOBS_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(4),
  JOBS_POLL_INTERVAL_MS: z.coerce.number().int().min(10).default(1000),
  JOBS_LEASE_MS: z.coerce.number().int().min(1000).default(30_000),
  JOBS_RETENTION_DAYS: positiveInt.default(7),
  JOBS_DEAD_RETENTION_DAYS: positiveInt.default(30),
  /** Days the activity log (GET /api/v1/activity) keeps a row; the `activity.purge` job deletes older ones. */
  ACTIVITY_RETENTION_DAYS: positiveInt.default(30),
  TELEGRAM_API_URL: httpUrl.default('https://api.telegram.org'),
  WHATSAPP_API_URL: httpUrl.default('https://graph.facebook.com'),
  WHATSAPP_API_VERSION: z
    .string()
    .regex(/^v\d+\.\d+$/, 'must look like v21.0')
    .default('v21.0'),
  WHATSAPP_APP_SECRET: z.string().optional(),
  CHANNEL_SEND_INTERVAL_MS: z.coerce.number().int().min(0).default(1000),
  WEBCHAT_RATE_LIMIT: positiveInt.default(20),
  WEBCHAT_DAILY_PER_VISITOR: positiveInt.default(200),
  WEBCHAT_DAILY_PER_CHANNEL: positiveInt.default(2000),
  SANDBOX_CREDITS_PER_SECOND: z.coerce.number().int().min(0).default(2),
  SANDBOX_PROCESS_CREDITS_PER_SECOND: z.coerce.number().int().min(0).default(4),
  SANDBOX_WORKERS: z.coerce.number().int().min(1).max(64).default(2),
  SANDBOX_MEMORY_MB: z.coerce.number().int().min(16).max(2048).default(128),
  SANDBOX_PYTHON_PROCESSES: z.coerce.number().int().min(1).max(64).default(2),
  SANDBOX_PYTHON_MEMORY_MB: z.coerce.number().int().min(256).max(4096).default(512),
  SANDBOX_QUEUE_MAX: z.coerce.number().int().min(0).max(10_000).default(32),
  SANDBOX_QUEUE_TIMEOUT_MS: positiveInt.default(60_000),
});
