import type { z } from 'zod';
import type { EnvSchema } from './config-env.ts';

/**
 * What each setting of `src/config.ts` means, for the generated reference (docs/configuration.md, made by
 * `npm run docs:config`). Keyed by the schema's own names, so a variable added to the schema without a meaning
 * here fails the typecheck, and one removed from it leaves an unknown key here, which fails too. `default`
 * overrides the schema's default where the real one is computed (BASE_URL from PORT) or is no literal value.
 */
export type EnvName = keyof z.input<typeof EnvSchema>;

export interface SettingDoc {
  group: SettingGroup;
  meaning: string;
  default?: string;
}

export const SETTING_GROUPS = [
  'Server',
  'Database and storage',
  'Accounts, tokens and sign-in',
  'Requests and limits',
  'Rate limits',
  'LLM gateway',
  'MCP',
  'Providers and connections',
  'Background jobs',
  'Messaging channels',
  'Code sandbox',
  'Tracing',
] as const;
export type SettingGroup = (typeof SETTING_GROUPS)[number];

export const ENV_REFERENCE: Record<EnvName, SettingDoc> = {
  PORT: { group: 'Server', meaning: 'port to listen on' },
  HOST: { group: 'Server', meaning: 'address to listen on' },
  BASE_URL: {
    group: 'Server',
    default: '`http://localhost:$PORT`',
    meaning:
      'public URL of the service: links in answers (avatars, logos), the OAuth issuer, the MCP resource, the OpenAPI server. Set it behind a proxy',
  },
  APP_URL: {
    group: 'Server',
    default: '`BASE_URL`',
    meaning: 'public URL of the web pages (sign-in, consent: the OAuth authorization endpoint)',
  },
  LOG_LEVEL: {
    group: 'Server',
    meaning:
      '`fatal`, `error`, `warn`, `info` (one line per request), `debug`, `trace` or `silent`; JSON lines on stdout, tokens redacted, and in logged URLs the values of `code`, `state`, `code_verifier`, `access_token`, `refresh_token`, `id_token`, `token`, `client_secret` and `hub.verify_token`',
  },
  TRUST_PROXY: {
    group: 'Server',
    meaning:
      'whom to believe about the client address in `X-Forwarded-For` (rate limits per address): `true`, a hop count, or addresses/CIDRs, comma-separated (`loopback`, `linklocal`, `uniquelocal` also)',
  },
  SHUTDOWN_TIMEOUT_MS: {
    group: 'Server',
    meaning:
      'on SIGTERM or SIGINT the service stops accepting connections, finishes in-flight requests and running jobs and closes the database; past this time it exits with code 1',
  },
  METRICS_TOKEN: {
    group: 'Server',
    meaning:
      'when set (16 characters or more), `GET /metrics` answers only `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise); `/healthz` and `/readyz` stay open. Unset: `/metrics` is open, so keep it off public networks',
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    group: 'Tracing',
    meaning:
      'OTLP/HTTP collector base URL; traces go to `<it>/v1/traces`. Set (or the next one) to turn tracing on (docs/tracing.md)',
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    group: 'Tracing',
    meaning: 'full OTLP/HTTP traces URL (used as it is; wins over `OTEL_EXPORTER_OTLP_ENDPOINT`)',
  },
  OTEL_EXPORTER_OTLP_HEADERS: {
    group: 'Tracing',
    meaning: 'headers sent to the collector, `key=value` pairs comma-separated (URL-encoded values), e.g. its API key',
  },
  OTEL_SERVICE_NAME: { group: 'Tracing', meaning: "the spans' `service.name`" },
  OTEL_TRACES_SAMPLER: {
    group: 'Tracing',
    meaning:
      '`always_on`, `always_off`, `traceidratio`, `parentbased_always_on`, `parentbased_always_off` or `parentbased_traceidratio` (parent-based ones follow the caller’s `traceparent` sampled flag)',
  },
  OTEL_TRACES_SAMPLER_ARG: {
    group: 'Tracing',
    default: '1',
    meaning: 'the ratio (0 to 1) of the `*traceidratio` samplers',
  },
  OTEL_SDK_DISABLED: { group: 'Tracing', meaning: '`true` turns tracing off even with an endpoint set' },
  SHUTDOWN_DRAIN_MS: {
    group: 'Server',
    meaning:
      "on SIGTERM, first this long with `/readyz` answering 503 while every request is still served, so a load balancer polling it stops sending before the listener closes; set it a little above the balancer's check interval times its fall count (0: close at once; SIGINT never drains)",
  },
  DATA_DIR: {
    group: 'Database and storage',
    meaning:
      'the embedded database (`pgdata/`), its generated key file, and the journals that keep unwritten rows across a crash (`conversation-journal/` on the embedded database, `credit-journal/` during an outage)',
  },
  DATABASE_URL: {
    group: 'Database and storage',
    meaning:
      '`postgres://...`: use this PostgreSQL database instead of the embedded one (`ENCRYPTION_KEYS` is then required). Migrations run at start; instances starting together take turns',
  },
  DATABASE_POOL_MAX: {
    group: 'Database and storage',
    meaning: 'PostgreSQL connections per instance (plus a pool half that size for credit leases and charges)',
  },
  REDIS_URL: {
    group: 'Database and storage',
    meaning:
      '`redis://` or `rediss://`: rate-limit counters shared by every instance (in memory otherwise). Start-up waits up to 2 s for the connection; if Redis fails, requests pass. An outage is logged once (warn) and the recovery once (info)',
  },
  ENCRYPTION_KEYS: {
    group: 'Database and storage',
    default: 'a key file generated in `DATA_DIR`',
    meaning:
      'keys sealing stored secrets, `keyId:base64key[,keyId:base64key...]`: the first seals, every key opens; required with `DATABASE_URL` (see [Encryption keys](self-hosting.md#encryption-keys))',
  },
  SESSION_TTL_SECONDS: { group: 'Accounts, tokens and sign-in', meaning: 'lifetime of a session token, seconds' },
  PAT_DEFAULT_EXPIRES_IN: {
    group: 'Accounts, tokens and sign-in',
    meaning: 'lifetime of a PAT made without `expires_in`, seconds',
  },
  PAT_MAX_EXPIRES_IN: {
    group: 'Accounts, tokens and sign-in',
    meaning: 'the longest `expires_in` accepted, seconds (longer: 422)',
  },
  AUTH_CACHE_TTL_MS: {
    group: 'Accounts, tokens and sign-in',
    meaning:
      "how long a resolved token, an account's list of active connections (MCP, agents), and an agent with its linked tools (agent chat) are reused without a database look-up; a revocation, connection or agent change is immediate on the same instance, others follow within this time (`0`: off). A token in use is read again in the background during the last fifth of this time, so its requests do not wait on the read",
  },
  SIGNUP_ENABLED: {
    group: 'Accounts, tokens and sign-in',
    meaning: '`false`: `POST /api/v1/auth/signup` answers 403 (create accounts with the CLI)',
  },
  INSECURE_TEST_PASSWORD_HASHING: {
    group: 'Accounts, tokens and sign-in',
    meaning:
      "for the test suite only (its harness sets it): `true` hashes passwords with argon2id at its least cost (8 KiB, 1 pass). Never set it in a deployment: the default hashes at OWASP's argon2id floor (19 MiB, 2 passes); hashes made either way verify under either setting",
  },
  INITIAL_CREDITS: {
    group: 'Accounts, tokens and sign-in',
    meaning: 'credits of a new account (a `grant` row in its credit history)',
  },
  OAUTH_CLIENT_METADATA_TIMEOUT_MS: {
    group: 'Accounts, tokens and sign-in',
    meaning:
      "how long fetching an MCP client's metadata document may take (a `client_id` that is an https URL; at most 5 KB, through the SSRF guard; cached for its max-age held between 1 minute and 1 hour); at most 30000",
  },
  OAUTH_ACCESS_TOKEN_TTL: {
    group: 'Accounts, tokens and sign-in',
    meaning: 'lifetime of OAuth access tokens (JWT), seconds',
  },
  OAUTH_REFRESH_TOKEN_TTL: {
    group: 'Accounts, tokens and sign-in',
    meaning:
      'lifetime of refresh tokens, seconds; each refresh returns a new one, and reusing an old one revokes the grant',
  },
  OAUTH_CONSENT_TTL: {
    group: 'Accounts, tokens and sign-in',
    meaning: "how long a user's consent to an app is remembered, seconds",
  },
  OAUTH_DYNAMIC_REGISTRATION: {
    group: 'Accounts, tokens and sign-in',
    meaning: '`false` closes `POST /api/v1/auth/register` (RFC 7591)',
  },
  BODY_LIMIT_BYTES: { group: 'Requests and limits', meaning: 'largest request body (larger: 413)' },
  REQUEST_TIMEOUT_MS: {
    group: 'Requests and limits',
    meaning:
      'the most a client may take to send a whole request, headers and body; a slower one gets 408 `RequestTimeoutError` and its connection is closed. During shutdown a request still arriving gets at most `SHUTDOWN_TIMEOUT_MS / 2` more',
  },
  SSE_HEARTBEAT_MS: {
    group: 'Requests and limits',
    meaning: 'how often an idle event stream (`GET .../conversations/:id/events`) sends a `: ping` comment',
  },
  CREDITS_BACKLOG_MAX: {
    group: 'Requests and limits',
    meaning:
      'how many charges an instance keeps unwritten while the database is unreachable (in memory and journaled under `DATA_DIR/credit-journal/`, written once it answers); requests in flight count against it, and at the bound new paid requests answer 503 with Retry-After',
  },
  ACTIVITY_RETENTION_DAYS: {
    group: 'Requests and limits',
    meaning:
      'how many days the activity log (`GET /api/v1/activity`, `/account/activity`) keeps a row; older rows are deleted by the hourly `activity.purge` job',
  },
  AGENT_RUN_LEASE_MS: {
    group: 'Requests and limits',
    meaning:
      'how long an agent chat turn is held without its instance renewing it (every third of it; at least 1000); a turn whose lease ran out is marked failed',
  },
  CHAT_FILE_MAX_BYTES: {
    group: 'Requests and limits',
    meaning: 'the largest chat file upload (`POST /agents/:id/chat/files`); larger: 413',
  },
  DOCUMENT_MAX_EXPANDED_BYTES: {
    group: 'Requests and limits',
    meaning:
      "the most a document's compressed parts may inflate to, together: a DOCX's ZIP entries, a PDF's Flate streams. Counted as they inflate (declared sizes are not trusted); more: 413",
  },
  DOCUMENT_MAX_ENTRIES: {
    group: 'Requests and limits',
    meaning: "the most entries (files and folders) a DOCX's ZIP may hold; more: 413",
  },
  DOCUMENT_MAX_PDF_PAGES: {
    group: 'Requests and limits',
    meaning: 'the most pages of a PDF, counted before any page is read; more: 413',
  },
  DOCUMENT_MAX_TEXT_CHARS: {
    group: 'Requests and limits',
    meaning: 'the most characters of text read out of a PDF (page by page, stopping there), DOCX or CSV; more: 413',
  },
  DOCUMENT_MAX_CSV_ROWS: {
    group: 'Requests and limits',
    meaning: 'the most rows of a CSV (empty lines not counted); more: 413',
  },
  SSRF_ALLOW_HOSTS: {
    group: 'Requests and limits',
    meaning:
      'comma-separated `host:port` pairs that user-given URLs (knowledge URL sources, tool code, webhooks) may reach although they are on a private or loopback address, e.g. an intranet wiki `wiki.corp:443`. Everything else non-public is refused, and the refusal names the pair to add here',
  },
  RATE_LIMIT_ENABLED: { group: 'Rate limits', meaning: '`false` turns every limit off' },
  RATE_LIMIT_GLOBAL: { group: 'Rate limits', meaning: 'requests a window to every route without its own limit' },
  RATE_LIMIT_AUTH: {
    group: 'Rate limits',
    meaning:
      'per address, each route: sign-up, authenticate, `/auth/token`, `/auth/revoke`, the sign-in and sign-up forms; and sign-in attempts in total, per address and per account (see [Rate limits](api.md#rate-limits))',
  },
  RATE_LIMIT_LLM: { group: 'Rate limits', meaning: '`POST /api/v1/chat/completions`, per account' },
  RATE_LIMIT_MCP: { group: 'Rate limits', meaning: '`POST /mcp`, per account' },
  RATE_LIMIT_REGISTER: { group: 'Rate limits', meaning: 'per address: `POST /api/v1/auth/register`' },
  RATE_LIMIT_WINDOW_MS: { group: 'Rate limits', meaning: 'the window of every limit' },
  LLM_BASE_URL: {
    group: 'LLM gateway',
    meaning:
      'any OpenAI-compatible server (OpenAI, OpenRouter, vLLM, Ollama, LM Studio); an `http://` or `https://` URL with its scheme',
  },
  LLM_API_KEY: { group: 'LLM gateway', meaning: 'the key sent to `LLM_BASE_URL`' },
  LLM_MODELS: {
    group: 'LLM gateway',
    default: 'listed by the upstream',
    meaning:
      'models served by `LLM_BASE_URL`: `id` or `id=promptRate/completionRate`, comma-separated (rates in credits per million tokens; default 5000/15000)',
  },
  OPENAI_API_KEY: { group: 'LLM gateway', meaning: 'enables the OpenAI models of the catalog' },
  OPENAI_BASE_URL: { group: 'LLM gateway', meaning: "OpenAI's API address" },
  ANTHROPIC_API_KEY: {
    group: 'LLM gateway',
    meaning: 'enables the Anthropic models (Messages API, translated to and from the OpenAI format)',
  },
  ANTHROPIC_BASE_URL: { group: 'LLM gateway', meaning: "Anthropic's API address" },
  MODELS_FILE: {
    group: 'LLM gateway',
    default: 'the shipped `src/llm-upstreams/models.json`',
    meaning:
      'a model catalog of your own: `{models: [{id, upstream, upstreamModel, tier, promptRate, completionRate, contextWindow, maxOutputTokens, capabilities}]}`',
  },
  DEFAULT_MODEL: {
    group: 'LLM gateway',
    default: 'the first available model',
    meaning: 'the model used when a request (or an agent) names none',
  },
  LLM_TIMEOUT_MS: {
    group: 'LLM gateway',
    meaning: "how long to wait for the upstream's headers, and between stream chunks",
  },
  INJECTION_GUARD_MODEL: {
    group: 'LLM gateway',
    default: 'off',
    meaning:
      'a catalog model that also judges texts the prompt-injection rules let through (see [Security model](security.md#prompt-injection-defence)); a model outside the catalog stops the start',
  },
  INJECTION_GUARD_TIMEOUT_MS: {
    group: 'LLM gateway',
    meaning: "past this the guard model's answer is dropped and the rules' verdict stands",
  },
  MCP_ALLOWED_ORIGINS: {
    group: 'MCP',
    meaning: 'browser origins allowed to call `/mcp` besides those of `BASE_URL` and `APP_URL`, comma-separated',
  },
  MCP_TASK_POLL_INTERVAL_MS: {
    group: 'MCP',
    meaning:
      'the `pollInterval` a task-augmented `tools/call` suggests to its client, and how often a running task checks whether another instance cancelled it (see [MCP](mcp.md#long-runs-tasks))',
  },
  PROVIDERS_DIR: {
    group: 'Providers and connections',
    meaning:
      'more directories of provider files, comma-separated, read after the shipped one; a later file with the same `id` replaces the earlier one (see [Providers](providers.md))',
  },
  JOBS_ENABLED: {
    group: 'Background jobs',
    meaning: '`false`: this instance neither runs nor schedules jobs (keep it `true` on at least one instance)',
  },
  JOBS_CONCURRENCY: { group: 'Background jobs', meaning: 'jobs one instance runs at once (1-100)' },
  JOBS_POLL_INTERVAL_MS: {
    group: 'Background jobs',
    meaning: 'how often an idle worker looks for due jobs (at least 10)',
  },
  JOBS_LEASE_MS: {
    group: 'Background jobs',
    meaning:
      "how long a claimed job stays with its worker without a renewal: the delay before a dead worker's job runs again (at least 1000)",
  },
  JOBS_RETENTION_DAYS: {
    group: 'Background jobs',
    meaning: 'succeeded jobs are deleted this many days after they finished',
  },
  JOBS_DEAD_RETENTION_DAYS: {
    group: 'Background jobs',
    meaning: 'dead jobs are deleted this many days after they failed',
  },
  TELEGRAM_API_URL: { group: 'Messaging channels', meaning: 'the Telegram Bot API' },
  WHATSAPP_API_URL: { group: 'Messaging channels', meaning: 'the Graph API of the WhatsApp Cloud API' },
  WHATSAPP_API_VERSION: { group: 'Messaging channels', meaning: "the Graph API's version path segment" },
  WHATSAPP_APP_SECRET: {
    group: 'Messaging channels',
    meaning: 'the Meta app secret that verifies deliveries for channels without their own `appSecret`',
  },
  CHANNEL_SEND_INTERVAL_MS: {
    group: 'Messaging channels',
    meaning: 'the least time between two messages to one chat',
  },
  WEBCHAT_RATE_LIMIT: {
    group: 'Messaging channels',
    meaning: 'web chat messages per client address per `RATE_LIMIT_WINDOW_MS`',
  },
  WEBCHAT_DAILY_PER_VISITOR: { group: 'Messaging channels', meaning: 'web chat messages per visitor per UTC day' },
  WEBCHAT_DAILY_PER_CHANNEL: { group: 'Messaging channels', meaning: 'web chat messages per channel per UTC day' },
  SANDBOX_CREDITS_PER_SECOND: {
    group: 'Code sandbox',
    meaning: 'credits per started second of a JavaScript or TypeScript run (the QuickJS sandbox)',
  },
  SANDBOX_PROCESS_CREDITS_PER_SECOND: {
    group: 'Code sandbox',
    meaning: 'credits per started second of a Python run (the process sandbox)',
  },
  SANDBOX_WORKERS: {
    group: 'Code sandbox',
    meaning: 'QuickJS worker threads: JavaScript/TypeScript runs at once (1-64)',
  },
  SANDBOX_MEMORY_MB: { group: 'Code sandbox', meaning: 'memory of one QuickJS run, MB (16-2048)' },
  SANDBOX_PYTHON_PROCESSES: { group: 'Code sandbox', meaning: 'Python processes running at once (1-64)' },
  SANDBOX_PYTHON_MEMORY_MB: {
    group: 'Code sandbox',
    meaning: 'resident memory past which a Python process is killed, MB (256-4096)',
  },
  SANDBOX_QUEUE_MAX: {
    group: 'Code sandbox',
    meaning: 'runs that may wait for a busy sandbox, per family; more get 429 at once',
  },
  SANDBOX_QUEUE_TIMEOUT_MS: {
    group: 'Code sandbox',
    meaning: 'the longest a run waits for a free worker before 429',
  },
};

/** The `PROVIDER_*` settings that are not in the schema (read through `config.providers.env`), with their meaning. */
export const PROVIDER_SETTING_MEANINGS: Record<string, string> = {
  PROVIDER_TIMEOUT_MS: 'one provider API request, headers and body',
  PROVIDER_TOKEN_TIMEOUT_MS:
    'a token, user-info, discovery or revocation request (on PostgreSQL a refresh holds the row lock meanwhile)',
  PROVIDER_MAX_RETRY_WAIT_MS: 'the longest `Retry-After` waited for before the one retry',
  PROVIDER_REFRESH_MAX_FAILURES: "consecutive failed refreshes before a connection's status is `error`",
  PROVIDER_MAX_RESPONSE_BYTES: 'the most read of one provider answer (more is a 502)',
};
